package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/acp"
	"github.com/muster-run/muster/internal/agentkit"
)

// maxFile bounds a file served to or written by the agent.
const maxFile = 4 << 20

// Request serves the agent's requests.
func (x *session) Request(ctx context.Context, method string, params json.RawMessage) (any, *acp.Error) {
	switch method {
	case acp.MethodPermission:
		var p acp.PermissionParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, acp.Errorf(acp.CodeInvalidParams, "%v", err)
		}
		return x.permission(&p), nil
	case acp.MethodReadFile:
		var p acp.ReadFileParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, acp.Errorf(acp.CodeInvalidParams, "%v", err)
		}
		return x.readFile(&p)
	case acp.MethodWriteFile:
		var p acp.WriteFileParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, acp.Errorf(acp.CodeInvalidParams, "%v", err)
		}
		return x.writeFile(&p)
	case acp.MethodTermCreate, acp.MethodTermOutput, acp.MethodTermWait, acp.MethodTermKill, acp.MethodTermRelease:
		if x.req.Authority != muster.AuthorityShell {
			x.note("refused " + method + ": the task has " + string(x.req.Authority) + " authority, not shell")
			return nil, acp.Errorf(acp.CodeMethodNotFound, "%s: terminals need shell authority", method)
		}
		return x.terms.serve(ctx, method, params)
	}
	return nil, acp.Errorf(acp.CodeMethodNotFound, "%s is not served by muster", agentkit.Clip(method, 100))
}

// permission answers a permission request from the task's authority:
// read allows reading tools only; write also allows edits of paths inside
// the worktree, and commands that are one of the task's gates; shell
// allows everything.
func (x *session) permission(p *acp.PermissionParams) acp.PermissionResult {
	allow, why := x.allowed(&p.ToolCall)
	x.mu.Lock()
	verdict := "allowed"
	if !allow {
		verdict = "refused (" + why + ")"
	}
	x.s.Note("permission " + verdict + ": " + agentkit.Clip(p.ToolCall.ToolKind+" "+p.ToolCall.Title, 200))
	x.mu.Unlock()
	kinds := []string{acp.RejectOnce, acp.RejectAlways}
	if allow {
		kinds = []string{acp.AllowOnce, acp.AllowAlways}
	}
	for _, k := range kinds {
		for _, o := range p.Options {
			if o.Kind == k {
				return acp.PermissionResult{Outcome: acp.PermissionOutcome{Outcome: "selected", OptionID: o.OptionID}}
			}
		}
	}
	// No option of the right kind: muster cannot say yes or no, so the
	// request is withdrawn (the agent treats it as cancelled).
	return acp.PermissionResult{Outcome: acp.PermissionOutcome{Outcome: "cancelled"}}
}

func (x *session) allowed(tc *acp.ToolCall) (bool, string) {
	auth := x.req.Authority
	if auth == muster.AuthorityShell {
		return true, ""
	}
	switch tc.ToolKind {
	case acp.ToolRead, acp.ToolSearch, acp.ToolThink:
		for _, l := range tc.Locations {
			if _, _, ok := x.inside(l.Path, true); !ok {
				return false, "a path outside the worktree"
			}
		}
		return true, ""
	case acp.ToolEdit, acp.ToolDelete, acp.ToolMove:
		if auth == muster.AuthorityRead {
			return false, "read authority"
		}
		for _, l := range tc.Locations {
			if _, _, ok := x.inside(l.Path, false); !ok {
				return false, "a path outside the worktree"
			}
		}
		return true, ""
	case acp.ToolExecute:
		if auth == muster.AuthorityWrite && x.isGate(tc.RawInput) {
			return true, ""
		}
		return false, string(auth) + " authority runs no commands but the task's gates"
	}
	return false, string(auth) + " authority"
}

// isGate reports whether a command tool call runs exactly one of the
// task's gate commands.
func (x *session) isGate(raw json.RawMessage) bool {
	if x.req.Task == nil || len(x.req.Task.Gates) == 0 {
		return false
	}
	var in struct {
		Command any `json:"command"`
		Cmd     any `json:"cmd"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return false
	}
	cmd := in.Command
	if cmd == nil {
		cmd = in.Cmd
	}
	var s string
	switch v := cmd.(type) {
	case string:
		s = v
	case []any:
		var parts []string
		for _, p := range v {
			ps, ok := p.(string)
			if !ok {
				return false
			}
			parts = append(parts, ps)
		}
		s = strings.Join(parts, " ")
	}
	s = strings.TrimSpace(s)
	for _, g := range x.req.Task.Gates {
		if s != "" && s == strings.TrimSpace(g) {
			return true
		}
	}
	return false
}

// inside reports whether path (absolute) lies lexically inside the
// worktree (as given or with its symlinks resolved) and returns the root
// and the path relative to it; for reading, the invocation's scratch
// directory (prompt, diff) counts too. Nothing under a .git directory is
// writable. Access then goes through os.Root, so a symlink cannot lead
// out.
func (x *session) inside(path string, read bool) (root, rel string, ok bool) {
	if path == "" || !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return "", "", false
	}
	path = filepath.Clean(path)
	roots := []string{x.req.Dir, x.root}
	if read && x.req.Scratch != "" {
		roots = append(roots, x.req.Scratch)
	}
	for _, r := range roots {
		rel, err := filepath.Rel(r, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if !read {
			for _, part := range strings.Split(rel, string(filepath.Separator)) {
				if part == ".git" {
					return "", "", false
				}
			}
		}
		return r, rel, true
	}
	return "", "", false
}

// violation records a request for a path outside the worktree.
func (x *session) violation(method, path string) *acp.Error {
	x.mu.Lock()
	defer x.mu.Unlock()
	path = x.s.Redact(agentkit.Clip(path, 300))
	x.s.Note("refused " + method + " " + path + ": outside the worktree")
	x.s.Emit(muster.Record{Type: muster.RecViolation, Tool: method, Text: path})
	return acp.Errorf(acp.CodeInvalidParams, "%s: %s lies outside the worktree", method, path)
}

func (x *session) readFile(p *acp.ReadFileParams) (any, *acp.Error) {
	root, rel, ok := x.inside(p.Path, true)
	if !ok {
		return nil, x.violation(acp.MethodReadFile, p.Path)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, acp.Errorf(acp.CodeInternal, "%v", err)
	}
	defer r.Close()
	f, err := r.Open(rel)
	if errors.Is(err, fs.ErrNotExist) && x.missingAsEmpty {
		return acp.ReadFileResult{}, nil
	}
	if err != nil {
		return nil, x.fsError(acp.MethodReadFile, p.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, acp.Errorf(acp.CodeInternal, "%v", err)
	case !fi.Mode().IsRegular():
		return nil, acp.Errorf(acp.CodeInvalidParams, "%s is not a regular file", p.Path)
	case fi.Size() > maxFile:
		return nil, acp.Errorf(acp.CodeInvalidParams, "%s is larger than %d bytes", p.Path, maxFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, acp.Errorf(acp.CodeInternal, "%v", err)
	}
	if len(b) > maxFile {
		return nil, acp.Errorf(acp.CodeInvalidParams, "%s is larger than %d bytes", p.Path, maxFile)
	}
	text := string(b)
	if p.Line != nil || p.Limit != nil {
		text = lines(text, p.Line, p.Limit)
	}
	return acp.ReadFileResult{Content: text}, nil
}

// fsError is the reply to a failed file access: a path that escapes the
// root through a symlink is a violation.
func (x *session) fsError(method, path string, err error) *acp.Error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return acp.Errorf(acp.CodeNotFound, "Resource not found: %s (No such file or directory)", path)
	case strings.Contains(err.Error(), "escapes"):
		return x.violation(method, path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return acp.Errorf(acp.CodeInternal, "%s: %v", path, err)
}

// lines returns limit lines of text from line (1-based).
func lines(text string, line, limit *int) string {
	ls := strings.SplitAfter(text, "\n")
	start := 0
	if line != nil && *line > 1 {
		start = *line - 1
	}
	if start >= len(ls) {
		return ""
	}
	ls = ls[start:]
	if limit != nil && *limit >= 0 && *limit < len(ls) {
		ls = ls[:*limit]
	}
	return strings.Join(ls, "")
}

func (x *session) writeFile(p *acp.WriteFileParams) (any, *acp.Error) {
	if x.req.Authority == muster.AuthorityRead {
		x.note("refused fs/write_text_file " + agentkit.Clip(p.Path, 200) + ": read authority")
		return nil, acp.Errorf(acp.CodeInvalidParams, "fs/write_text_file: the task has read authority")
	}
	root, rel, ok := x.inside(p.Path, false)
	if !ok {
		return nil, x.violation(acp.MethodWriteFile, p.Path)
	}
	if len(p.Content) > maxFile || !utf8.ValidString(p.Content) {
		return nil, acp.Errorf(acp.CodeInvalidParams, "fs/write_text_file: content must be UTF-8 text of at most %d bytes", maxFile)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, acp.Errorf(acp.CodeInternal, "%v", err)
	}
	defer r.Close()
	if dir := filepath.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return nil, x.fsError(acp.MethodWriteFile, p.Path, err)
		}
	}
	mode := os.FileMode(0o644)
	if fi, err := r.Lstat(rel); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, acp.Errorf(acp.CodeInvalidParams, "%s is not a regular file", p.Path)
		}
		mode = fi.Mode().Perm()
	}
	if err := r.WriteFile(rel, []byte(p.Content), mode); err != nil {
		return nil, x.fsError(acp.MethodWriteFile, p.Path, err)
	}
	x.note(fmt.Sprintf("wrote %s (%d bytes)", agentkit.Clip(p.Path, 200), len(p.Content)))
	return struct{}{}, nil
}
