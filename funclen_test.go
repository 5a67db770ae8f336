package muster_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Function length, held (CONTRIBUTING.md, house rules): a function's code lines are
// its lines that are neither blank nor only a comment, over the
// repository's non-test Go files. At most maxLong functions may have more
// than longLines, none more than maxLines, and none may grow past the
// length recorded for it in ceilings (the functions over longLines when
// the limit was set; split one, and lower or drop its row).
const (
	longLines = 80
	maxLong   = 12
	maxLines  = 150
)

// funcLen is one function and its code lines.
type funcLen struct {
	Name  string // file:Recv.Func
	Lines int
}

// functionLengths measures every function and method in the non-test Go
// files under root (vendor, testdata and dot directories left out).
func functionLengths(root string) ([]funcLen, error) {
	var out []funcLen
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fl, err := fileFunctionLengths(filepath.ToSlash(path), src)
		out = append(out, fl...)
		return err
	})
	return out, err
}

// fileFunctionLengths measures the functions of one file's source.
func fileFunctionLengths(name string, src []byte) ([]funcLen, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	comment := map[int]bool{} // lines holding only a comment
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			for l := fset.Position(c.Pos()).Line; l <= fset.Position(c.End()).Line; l++ {
				comment[l] = true
			}
		}
	}
	lines := strings.Split(string(src), "\n")
	var out []funcLen
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := 0
		for l := fset.Position(fd.Pos()).Line; l <= fset.Position(fd.End()).Line; l++ {
			text := strings.TrimSpace(lines[l-1])
			if text == "" || comment[l] && (strings.HasPrefix(text, "//") || strings.HasPrefix(text, "/*") || strings.HasPrefix(text, "*")) {
				continue
			}
			n++
		}
		out = append(out, funcLen{Name: funcKey(name, fd), Lines: n})
	}
	return out, nil
}

// funcKey names a function by its package's directory, so that moving it
// between the package's files keeps its name: "engine.State.Apply",
// "muster.Group" in the root.
func funcKey(file string, fd *ast.FuncDecl) string {
	dir := filepath.ToSlash(filepath.Dir(file))
	if dir == "." {
		dir = "muster"
	}
	return dir + "." + funcName(fd)
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// ceilings are the functions over longLines, each at most its length when
// the limit was set: none may grow, a new one may not join, and a row is
// dropped once its function is split below longLines. The limits are the
// constants': at most maxLong over longLines, none over maxLines, enforced
// by TestFunctionLengths.
var ceilings = map[string]int{
	"fleet.Worker.run":           108,
	"driver.worker.check":        104,
	"driver.Driver.run":          103,
	"internal/cli/worker.NewCmd": 102,
	"driver.worker.gates":        88,
	"fleet.Worker.handle":        83,
	"usagelog.forEachLine":       83,
}

func TestFunctionLengths(t *testing.T) {
	t.Parallel()
	fl, err := functionLengths(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, why := range lengthProblems(fl, ceilings) {
		t.Error(why)
	}
	long, over := 0, 0
	for _, f := range fl {
		if f.Lines > longLines {
			long++
		}
		if f.Lines > maxLines {
			over++
		}
	}
	if long > maxLong || over > 0 {
		t.Errorf("%d functions over %d code lines (at most %d), %d over %d (none allowed): split them along their seams", long, longLines, maxLong, over, maxLines)
	}
}

// lengthProblems says what breaks the limits: a function over longLines
// without a ceiling, one past its ceiling, a ceiling no longer needed.
func lengthProblems(fl []funcLen, ceilings map[string]int) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range fl {
		seen[f.Name] = true
		c, listed := ceilings[f.Name]
		switch {
		case f.Lines <= longLines && listed:
			out = append(out, fmt.Sprintf("%s is %d code lines now, at most %d: drop its row from ceilings (funclen_test.go)", f.Name, f.Lines, longLines))
		case f.Lines <= longLines:
		case !listed:
			out = append(out, fmt.Sprintf("%s is %d code lines, more than %d: split it along its seams (CONTRIBUTING.md, house rules)", f.Name, f.Lines, longLines))
		case f.Lines > c:
			out = append(out, fmt.Sprintf("%s grew to %d code lines past its ceiling of %d: split it, do not raise the ceiling", f.Name, f.Lines, c))
		}
	}
	for name := range ceilings {
		if !seen[name] {
			out = append(out, name+" is gone: drop its row from ceilings (funclen_test.go), or rename it there")
		}
	}
	sort.Strings(out)
	return out
}

func TestFunctionLengthsCanFail(t *testing.T) {
	t.Parallel()
	src := "package p\n\nfunc short() {\n\t// a comment\n\n\tx := 1\n\t_ = x\n}\n\nfunc long() {\n" + strings.Repeat("\tprintln()\n", longLines+1) + "}\n"
	fl, err := fileFunctionLengths("p/p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(fl) != 2 || fl[0].Name != "p.short" || fl[0].Lines != 4 || fl[1].Lines != longLines+3 {
		t.Fatalf("measured %+v", fl)
	}
	for _, c := range []struct {
		ceilings map[string]int
		want     string
	}{
		{nil, "p.long is 83 code lines, more than 80"},
		{map[string]int{"p.long": 82}, "grew to 83 code lines past its ceiling of 82"},
		{map[string]int{"p.long": 83, "p.short": 90}, "p.short is 4 code lines now"},
		{map[string]int{"p.long": 83, "p.gone": 90}, "p.gone is gone"},
	} {
		got := strings.Join(lengthProblems(fl, c.ceilings), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("ceilings %v: %q, want %q", c.ceilings, got, c.want)
		}
	}
	if got := lengthProblems(fl, map[string]int{"p.long": 90}); len(got) != 0 {
		t.Errorf("within its ceiling: %v", got)
	}
}
