package muster_test

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// Errors keep their cause (CONTRIBUTING.md, house rules: errors wrapped
// with %w). errorlint sees fmt.Errorf only; this pass also knows the
// wrappers that hand their format to fmt.Errorf, and fails on an error
// value formatted with %v or %s in any of them, over the module's
// non-test packages. A flattening on purpose (a cause that must not be
// matched with errors.Is/As across a boundary) says so on its line with a
// "flattened:" comment giving the reason.

// errorfFuncs are the functions whose format argument is fmt.Errorf's,
// by their full name, with the index of the format argument.
var errorfFuncs = map[string]int{
	"fmt.Errorf":                                0,
	module + ".Errorf":                          1,
	module + "/internal/cli/cmdutil.Env":        0,
	module + "/internal/cli/cmdutil.Invalid":    0,
	module + "/internal/cli/cmdutil.FlagErrorf": 0,
}

func TestErrorsWrapped(t *testing.T) {
	t.Parallel()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Skipf("loading the module's packages: %v", err)
	}
	var found []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		found = append(found, flattenedErrors(p.Fset, p.Syntax, p.TypesInfo, errorfFuncs)...)
	}
	if len(pkgs) < 50 {
		t.Fatalf("loaded only %d packages: the pass checked too little", len(pkgs))
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// flattenedErrors reports each error value formatted with %v or %s in a
// call of funcs, as "file:line: ...".
func flattenedErrors(fset *token.FileSet, files []*ast.File, info *types.Info, funcs map[string]int) []string {
	errType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	var out []string
	for _, f := range files {
		allowed := flattenedLines(fset, f)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name, fi, ok := calleeFormat(call, info, funcs)
			if !ok {
				return true
			}
			tv, ok := info.Types[call.Args[fi]]
			if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
				return true
			}
			verbs := formatVerbs(constant.StringVal(tv.Value))
			args := call.Args[fi+1:]
			pos := fset.Position(call.Pos())
			for i, v := range verbs {
				if i >= len(args) || (v != 'v' && v != 's') || allowed[pos.Line] {
					continue
				}
				if at := info.TypeOf(args[i]); at != nil && types.Implements(at, errType) {
					out = append(out, fmt.Sprintf("%s:%d: %s formats an error with %%%c: use %%w to keep it in the chain (or say why not in a \"flattened:\" comment)", pos.Filename, pos.Line, name, v))
				}
			}
			return true
		})
	}
	return out
}

// calleeFormat names the called function when it is one of funcs, with
// the index of its format argument.
func calleeFormat(call *ast.CallExpr, info *types.Info, funcs map[string]int) (string, int, bool) {
	var id *ast.Ident
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		id = fn
	case *ast.SelectorExpr:
		id = fn.Sel
	default:
		return "", 0, false
	}
	obj, ok := info.Uses[id].(*types.Func)
	if !ok || obj.Pkg() == nil {
		return "", 0, false
	}
	name := obj.Pkg().Path() + "." + obj.Name()
	fi, ok := funcs[name]
	if !ok || fi >= len(call.Args) || call.Ellipsis.IsValid() {
		return "", 0, false
	}
	return name, fi, true
}

// flattenedLines are the lines of f with a "flattened:" comment.
func flattenedLines(fset *token.FileSet, f *ast.File) map[int]bool {
	out := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, "flattened:") {
				out[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	return out
}

// formatVerbs lists the verb of each argument a format consumes, in
// order ('*' for a width or precision taken from an argument).
func formatVerbs(format string) []rune {
	var out []rune
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for ; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				out = append(out, '*')
				continue
			}
			if strings.IndexByte("+-# 0123456789.[]", c) < 0 {
				break
			}
		}
		if i < len(format) && format[i] != '%' {
			out = append(out, rune(format[i]))
		}
	}
	return out
}

// TestErrorsWrappedCatchesPlanted plants flattened errors, in fmt.Errorf
// and in a wrapper, and one flattened on purpose, and checks the pass
// finds exactly the first two.
func TestErrorsWrappedCatchesPlanted(t *testing.T) {
	t.Parallel()
	const src = `package p

import (
	"errors"
	"fmt"
)

func wrap(code int, format string, args ...any) error { return fmt.Errorf(format, args...) }

var errX = errors.New("x")

func f() []error {
	return []error{
		fmt.Errorf("opening %s: %v", "a", errX),
		wrap(2, "reading %d%%: %5.2s", 3, errX),
		fmt.Errorf("kept: %w", errX),
		fmt.Errorf("a string %s and a number %v", "s", 1),
		fmt.Errorf("on purpose %v", errX), // flattened: the cause must not cross the boundary
	}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{Importer: importer.Default()}).Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	got := flattenedErrors(fset, []*ast.File{f}, info, map[string]int{"fmt.Errorf": 0, "p.wrap": 1})
	want := []string{"p.go:14: fmt.Errorf formats an error with %v", "p.go:15: p.wrap formats an error with %s"}
	if len(got) != len(want) {
		t.Fatalf("found %d, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("found %q, want %q…", got[i], want[i])
		}
	}
}
