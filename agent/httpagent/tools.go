package httpagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/proc"
)

// toolbox runs the agent's tools inside one worktree. Every path is
// relative to the root; "..", absolute paths, .git and symlinks leading
// outside are refused.
type toolbox struct {
	root       string // absolute, symlinks resolved
	write      bool
	shell      bool
	cmdTimeout time.Duration
	// confine confines run_command's processes (nil: unconfined).
	confine *muster.Confinement
	hide    string // a variable kept from run_command's environment (the API key)
}

func newToolbox(dir string, auth muster.Authority, cmdTimeout time.Duration) (*toolbox, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("worktree %s: %w", dir, err)
	}
	if auth == "" {
		auth = muster.AuthorityWrite
	}
	return &toolbox{root: root, write: auth != muster.AuthorityRead, shell: auth == muster.AuthorityShell, cmdTimeout: cmdTimeout}, nil
}

func obj(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

// specs lists the tools offered: run_command only with shell authority,
// write_file and edit_file not with read authority.
func (tb *toolbox) specs() []toolSpec {
	ts := []toolSpec{
		{"list_files", "List files and directories (directories end with /). Recursive unless recursive is false.",
			obj(map[string]any{"path": str("directory relative to the worktree root (default: the root)"),
				"recursive": map[string]any{"type": "boolean"}})},
		{"read_file", "Read a text file. Long files are cut; use start_line and end_line (1-based) to read parts.",
			obj(map[string]any{"path": str("file path relative to the worktree root"),
				"start_line": map[string]any{"type": "integer"}, "end_line": map[string]any{"type": "integer"}}, "path")},
		{"search", "Search file contents for a substring (or a Go regular expression when regex is true). Prints path:line: text.",
			obj(map[string]any{"pattern": str("text to find"), "path": str("directory or file to search (default: the root)"),
				"regex": map[string]any{"type": "boolean"}}, "pattern")},
	}
	if tb.write {
		ts = append(ts,
			toolSpec{"write_file", "Create or overwrite a file with the given content (parent directories are created).",
				obj(map[string]any{"path": str("file path relative to the worktree root"), "content": str("the whole new content")}, "path", "content")},
			toolSpec{"edit_file", "Replace old_string with new_string in a file. old_string must occur exactly once.",
				obj(map[string]any{"path": str("file path relative to the worktree root"), "old_string": str("exact text to replace"),
					"new_string": str("replacement text")}, "path", "old_string", "new_string")})
	}
	if tb.shell {
		ts = append(ts, toolSpec{"run_command", "Run a shell command (sh -c) in the worktree root and return its exit status and output.",
			obj(map[string]any{"command": str("the command line")}, "command")})
	}
	return ts
}

type toolArgs struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
	Pattern   string `json:"pattern"`
	Regex     bool   `json:"regex"`
	Recursive *bool  `json:"recursive"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Command   string `json:"command"`
}

// summary is what a tool record shows of a call.
func (tb *toolbox) summary(name, args string) string {
	var a toolArgs
	_ = json.Unmarshal([]byte(args), &a)
	s := a.Path
	switch name {
	case "search":
		s = a.Pattern
	case "run_command":
		s = a.Command
	}
	return truncate(s, 200)
}

// run executes one tool call; failures are returned to the model as text.
func (tb *toolbox) run(ctx context.Context, name, args string) (string, bool) {
	var a toolArgs
	if args == "" {
		args = "{}"
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "error: the arguments are not a valid JSON object: " + err.Error(), true
	}
	var out string
	var err error
	switch {
	case name == "list_files":
		out, err = tb.list(a)
	case name == "read_file":
		out, err = tb.read(a)
	case name == "search":
		out, err = tb.search(a)
	case name == "write_file" && tb.write:
		out, err = tb.writeFile(a)
	case name == "edit_file" && tb.write:
		out, err = tb.edit(a)
	case name == "run_command" && tb.shell:
		out, err = tb.command(ctx, a)
	case name == "run_command":
		err = errors.New("run_command is not allowed: the task has no shell authority")
	default:
		err = fmt.Errorf("unknown tool %q", name)
	}
	if err != nil {
		return "error: " + err.Error(), true
	}
	return bound(out), false
}

func bound(s string) string {
	if len(s) <= MaxToolOutput {
		return s
	}
	return s[:MaxToolOutput] + fmt.Sprintf("\n[output cut at %d of %d bytes]", MaxToolOutput, len(s))
}

// resolve maps a worktree-relative path to an absolute one inside root.
func (tb *toolbox) resolve(p string) (string, error) {
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("%s: absolute paths are not allowed; use a path relative to the worktree root", p)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s: the path leads outside the worktree", p)
	}
	for _, part := range strings.Split(clean, "/") {
		if part == ".git" {
			return "", fmt.Errorf("%s: .git is off limits", p)
		}
	}
	full := filepath.Join(tb.root, clean)
	// Resolve symlinks in the longest existing prefix.
	existing, rest := full, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if resolved != tb.root && !strings.HasPrefix(resolved, tb.root+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: the path leads outside the worktree (through a symlink)", p)
	}
	return filepath.Join(resolved, rest), nil
}

// The file tools run inside muster, unconfined: every open goes through
// an os.Root on the worktree, so a link an agent swaps in after resolve
// checked the path still cannot lead outside it (resolve's check alone
// would race), and with O_NONBLOCK, so a FIFO never blocks muster; only
// a regular file is read or written.

// maxToolFile bounds a file the tools read or edit.
const maxToolFile = 16 << 20

func (tb *toolbox) readFile(abs string) ([]byte, fs.FileMode, error) {
	r, err := os.OpenRoot(tb.root)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	f, err := r.OpenFile(tb.rel(abs), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, errors.New("not a regular file")
	}
	if st.Size() > maxToolFile {
		return nil, 0, fmt.Errorf("%d bytes: larger than the %d the tools read", st.Size(), maxToolFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxToolFile))
	return b, st.Mode().Perm(), err
}

func (tb *toolbox) writeRel(abs string, data []byte, mode fs.FileMode) error {
	r, err := os.OpenRoot(tb.root)
	if err != nil {
		return err
	}
	defer r.Close()
	rel := tb.rel(abs)
	if dir := filepath.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, mode)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (tb *toolbox) rel(abs string) string {
	r, err := filepath.Rel(tb.root, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

func (tb *toolbox) list(a toolArgs) (string, error) {
	dir, err := tb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	recursive := a.Recursive == nil || *a.Recursive
	var out []string
	const maxEntries = 1000
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		name := tb.rel(p)
		if d.IsDir() {
			name += "/"
		}
		out = append(out, name)
		if len(out) >= maxEntries {
			return fs.SkipAll
		}
		if d.IsDir() && !recursive {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "(empty)", nil
	}
	s := strings.Join(out, "\n")
	if len(out) >= maxEntries {
		s += fmt.Sprintf("\n[listing cut at %d entries]", maxEntries)
	}
	return s, nil
}

func (tb *toolbox) read(a toolArgs) (string, error) {
	p, err := tb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	b, _, err := tb.readFile(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a.Path, unwrapPath(err))
	}
	if a.StartLine > 0 || a.EndLine > 0 {
		lines := strings.SplitAfter(string(b), "\n")
		start, end := max(a.StartLine, 1), a.EndLine
		if end <= 0 || end > len(lines) {
			end = len(lines)
		}
		if start > end {
			return "", fmt.Errorf("%s: start_line %d is past the end (%d lines)", a.Path, start, len(lines))
		}
		return strings.Join(lines[start-1:end], ""), nil
	}
	if limit := MaxToolOutput - 256; len(b) > limit {
		return string(b[:limit]) + fmt.Sprintf("\n[file cut at %d of %d bytes; read the rest with start_line/end_line]", limit, len(b)), nil
	}
	return string(b), nil
}

func (tb *toolbox) writeFile(a toolArgs) (string, error) {
	if a.Path == "" {
		return "", errors.New("write_file needs a path")
	}
	p, err := tb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	if err := tb.writeRel(p, []byte(a.Content), 0o644); err != nil {
		return "", fmt.Errorf("%s: %w", a.Path, unwrapPath(err))
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), tb.rel(p)), nil
}

func (tb *toolbox) edit(a toolArgs) (string, error) {
	p, err := tb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	b, mode, err := tb.readFile(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a.Path, unwrapPath(err))
	}
	if a.OldString == "" {
		return "", errors.New("old_string is empty")
	}
	switch n := strings.Count(string(b), a.OldString); n {
	case 1:
	case 0:
		return "", fmt.Errorf("%s: old_string not found", a.Path)
	default:
		return "", fmt.Errorf("%s: old_string occurs %d times; include more context so it matches once", a.Path, n)
	}
	s := strings.Replace(string(b), a.OldString, a.NewString, 1)
	if err := tb.writeRel(p, []byte(s), mode); err != nil {
		return "", fmt.Errorf("%s: %w", a.Path, unwrapPath(err))
	}
	return "edited " + tb.rel(p), nil
}

func (tb *toolbox) search(a toolArgs) (string, error) {
	if a.Pattern == "" {
		return "", errors.New("search needs a pattern")
	}
	match := func(s string) bool { return strings.Contains(s, a.Pattern) }
	if a.Regex {
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return "", fmt.Errorf("bad regular expression: %w", err)
		}
		match = re.MatchString
	}
	start, err := tb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	hits := 0
	const maxHits = 200
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 1<<20 {
			return nil
		}
		b, _, err := tb.readFile(p)
		if err != nil || bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if match(line) {
				fmt.Fprintf(&out, "%s:%d: %s\n", tb.rel(p), i+1, truncate(line, 300))
				hits++
				if hits >= maxHits || out.Len() > MaxToolOutput {
					return fs.SkipAll
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if hits == 0 {
		return "no matches", nil
	}
	return out.String(), nil
}

func (tb *toolbox) command(ctx context.Context, a toolArgs) (string, error) {
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New("run_command needs a command")
	}
	var mu sync.Mutex
	var buf strings.Builder
	add := func(l string) {
		mu.Lock()
		defer mu.Unlock()
		if buf.Len() < 4*MaxToolOutput {
			buf.WriteString(l)
			buf.WriteByte('\n')
		}
	}
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{"sh", "-c", a.Command}, Dir: tb.root, Env: tb.environ(),
		Confine: tb.confine, Timeout: tb.cmdTimeout, Grace: 2 * time.Second, OnLine: add, OnStderr: add})
	if err != nil {
		return "", err
	}
	mu.Lock()
	defer mu.Unlock()
	head := fmt.Sprintf("exit status %d\n", res.ExitCode)
	if res.Stopped != "" {
		head = fmt.Sprintf("stopped (%s) after %s\n", res.Stopped, res.Duration.Round(time.Millisecond))
	}
	out := buf.String()
	if len(out) > MaxToolOutput {
		out = "[…cut…]\n" + out[len(out)-MaxToolOutput+200:]
	}
	return head + out, nil
}

// environ is the scrubbed environment of run_command, without the API
// key's variable whatever its name.
func (tb *toolbox) environ() []string {
	env := proc.Environ()
	out := env[:0]
	for _, kv := range env {
		if tb.hide != "" && strings.HasPrefix(kv, tb.hide+"=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
