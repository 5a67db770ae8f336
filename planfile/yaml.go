package planfile

import (
	"bytes"
	"errors"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/muster-run/muster"
)

// yamlPlanKeys are the top-level keys of the YAML form.
var yamlPlanKeys = []string{"title", "brief", "tasks"}

// yamlTaskKeys are the keys of one task of the YAML form: the Markdown
// keys in lower case, plus the heading's parts and the prompt.
var yamlTaskKeys = func() []string {
	ks := []string{"id", "title", "done", "prompt"}
	for _, k := range Keys {
		ks = append(ks, strings.ToLower(k))
	}
	return ks
}()

// parseYAML reads the YAML twin of the Markdown format.
func parseYAML(name string, data []byte) (*muster.Plan, muster.Problems) {
	ps := &problems{file: name}
	p := &muster.Plan{Source: name, Tasks: []*muster.Task{}}
	// CRLF becomes LF first: the YAML parser counts lines of CRLF files
	// unevenly after comments.
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		line, msg := 0, err.Error()
		var se *yaml.SyntaxError
		if errors.As(err, &se) {
			msg = se.Message
			if se.Token != nil && se.Token.Position != nil {
				line = se.Token.Position.Line
			}
		}
		ps.addf(line, "bad YAML: %s", firstLine(msg))
		return p, ps.list
	}
	var bodies []ast.Node
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			bodies = append(bodies, d.Body)
		}
	}
	if len(bodies) == 0 {
		return p, ps.list
	}
	if len(bodies) > 1 {
		ps.addf(nodeLine(bodies[1]), "bad YAML: want one document, found %d", len(bodies))
	}
	root, ok := ps.mapping(bodies[0], "the plan")
	if !ok {
		return p, ps.list
	}
	seen := map[string]int{}
	for _, kv := range root.Values {
		key, line, ok := ps.key(kv, seen)
		if !ok {
			continue
		}
		switch key {
		case "title":
			p.Title, _ = ps.scalar(kv.Value, "title")
			p.Title = strings.TrimSpace(p.Title)
			ps.checkPlanTitle(p.Title, line)
		case "brief":
			s, _ := ps.scalar(kv.Value, "brief")
			p.Brief = joinTrimmed(strings.Split(s, "\n"))
		case "tasks":
			ps.tasks(p, kv.Value)
		default:
			ps.unknownKey(line, key, yamlPlanKeys)
		}
	}
	return p, ps.list
}

func (ps *problems) tasks(p *muster.Plan, n ast.Node) {
	n = ps.unwrap(n)
	if n == nil {
		return
	}
	if _, null := n.(*ast.NullNode); null {
		return
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		ps.addf(nodeLine(n), "tasks: want a list of tasks")
		return
	}
	for _, item := range seq.Values {
		m, ok := ps.mapping(item, "a task")
		if !ok {
			continue
		}
		if t := ps.task(m); t != nil {
			p.Tasks = append(p.Tasks, t)
		}
	}
}

// task reads one task mapping; nil when it has no id.
func (ps *problems) task(m *ast.MappingNode) *muster.Task {
	t := &muster.Task{Line: nodeLine(m), KeyLines: map[string]int{}}
	if len(m.Values) > 0 {
		t.Line = nodeLine(m.Values[0].Key)
	}
	seen := map[string]int{}
	hasID := false
	for _, kv := range m.Values {
		key, line, ok := ps.key(kv, seen)
		if !ok {
			continue
		}
		switch key {
		case "id":
			s, _ := ps.scalar(kv.Value, "id")
			t.ID, hasID = muster.TaskID(strings.TrimSpace(s)), true
		case "title":
			s, _ := ps.scalar(kv.Value, "title")
			t.Title = strings.TrimSpace(s)
		case "prompt":
			s, _ := ps.scalar(kv.Value, "prompt")
			t.Prompt = joinTrimmed(strings.Split(s, "\n"))
		case "done":
			s, _ := ps.scalar(kv.Value, "done")
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "true", "yes":
				t.Done = true
			case "false", "no", "":
			default:
				ps.addf(line, "bad done %q: want true or false", s)
			}
		case "loop":
			ps.loop(t, kv.Value, line)
		default:
			name := canonicalKey(key)
			if name == "" {
				ps.unknownKey(line, key, yamlTaskKeys)
				continue
			}
			ps.value(t, name, kv.Value, line)
		}
	}
	if !hasID || t.ID == "" {
		ps.addf(t.Line, "task has no id")
		return nil
	}
	if t.Title == "" {
		ps.addf(t.Line, "task %s has no title", t.ID)
	}
	return t
}

// value applies a field whose value is a scalar or, for list keys, a
// list of scalars.
func (ps *problems) value(t *muster.Task, name string, n ast.Node, line int) {
	k := strings.ToLower(name)
	n = ps.unwrap(n)
	if seq, ok := n.(*ast.SequenceNode); ok {
		if k == "executor" {
			// A list of executors is a race's candidates.
			var names []string
			for _, item := range seq.Values {
				if s, ok := ps.scalar(item, k); ok {
					names = append(names, s)
				}
			}
			if len(names) == 1 {
				names = append(names, "") // still a list: checkRace wants Race:
			}
			ps.setField(t, name, strings.Join(names, ", "), line)
			return
		}
		if !isList(k) {
			ps.addf(line, "%s: want a single value, not a list", k)
			return
		}
		if _, seen := t.KeyLines[k]; !seen {
			t.KeyLines[k] = line
		}
		for _, item := range seq.Values {
			if s, ok := ps.scalar(item, k); ok {
				ps.setField(t, name, s, itemLine(item, line)) // a problem with an item names its line
			}
		}
		return
	}
	if s, ok := ps.scalar(n, k); ok {
		ps.setField(t, name, s, line)
	}
}

// itemLine returns the line of a list item, or the key's line.
func itemLine(item ast.Node, keyLine int) int {
	if l := nodeLine(item); l > 0 {
		return l
	}
	return keyLine
}

// loop reads "loop:" as a string ("max=3 go test ./...") or as a mapping
// with check and max.
func (ps *problems) loop(t *muster.Task, n ast.Node, line int) {
	n = ps.unwrap(n)
	m, ok := n.(*ast.MappingNode)
	if !ok {
		ps.value(t, "Loop", n, line)
		return
	}
	var check, maxs string
	seen := map[string]int{}
	for _, kv := range m.Values {
		key, kl, ok := ps.key(kv, seen)
		if !ok {
			continue
		}
		switch key {
		case "check":
			check, _ = ps.scalar(kv.Value, "check")
		case "max":
			maxs, _ = ps.scalar(kv.Value, "max")
		default:
			ps.unknownKey(kl, key, []string{"check", "max"})
		}
	}
	s := strings.TrimSpace(check)
	if maxs != "" {
		s = "max=" + strings.TrimSpace(maxs) + " " + s
	}
	ps.setField(t, "Loop", s, line)
}

// key returns the lower-case key of a mapping entry and its line,
// reporting keys that are not scalars and keys given twice.
func (ps *problems) key(kv *ast.MappingValueNode, seen map[string]int) (string, int, bool) {
	if kv == nil || kv.Key == nil {
		return "", 0, false
	}
	line := nodeLine(kv.Key)
	var kn ast.Node = kv.Key
	if mk, ok := kn.(*ast.MappingKeyNode); ok {
		kn = mk.Value
	}
	s, ok := ps.scalar(kn, "key")
	if !ok {
		return "", line, false
	}
	k := strings.ToLower(strings.TrimSpace(s))
	if first, dup := seen[k]; dup {
		ps.addf(line, "duplicate key %s (first on line %d)", k, first)
		return "", line, false
	}
	seen[k] = line
	return k, line, true
}

// mapping returns n as a mapping, or reports what was wanted.
func (ps *problems) mapping(n ast.Node, what string) (*ast.MappingNode, bool) {
	n = ps.unwrap(n)
	if n == nil {
		return nil, false
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		ps.addf(nodeLine(n), "%s: want a mapping of keys to values", what)
		return nil, false
	}
	return m, true
}

// scalar returns the text of a scalar node.
func (ps *problems) scalar(n ast.Node, what string) (string, bool) {
	n = ps.unwrap(n)
	switch v := n.(type) {
	case nil:
		return "", true
	case *ast.NullNode:
		return "", true
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		if tk := n.GetToken(); tk != nil {
			return tk.Value, true
		}
		return "", true
	}
	ps.addf(nodeLine(n), "%s: want a single value", what)
	return "", false
}

// unwrap strips tags and anchors. Aliases are refused: a plan has no use
// for them, and expanding them invites documents that grow without bound.
func (ps *problems) unwrap(n ast.Node) ast.Node {
	for i := 0; i < 100 && n != nil; i++ {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			ps.addf(nodeLine(n), "YAML aliases are not supported in plans")
			return nil
		default:
			return n
		}
	}
	return n
}

func nodeLine(n ast.Node) int {
	if n == nil {
		return 0
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0
	}
	return tk.Position.Line
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
