package config

import (
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// positions maps a key path (parts joined by sep) to the 1-based line
// where the key is first written, as a key or as a table header.
type positions map[string]int

const sep = "\x00"

func pathKey(parts ...string) string { return strings.Join(parts, sep) }

// scanPositions walks the TOML document and records the line of every
// key and table header. It assumes the document decoded without error.
func scanPositions(data []byte) positions {
	pos := positions{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(e.Key())
			pos.note(&p, table, e.Key())
		case unstable.KeyValue:
			pos.keyValue(&p, table, e)
		}
	}
	return pos
}

// keyValue records a key = value, and the keys of an inline table value.
func (pos positions) keyValue(p *unstable.Parser, prefix []string, e *unstable.Node) {
	parts := append(append([]string{}, prefix...), keyParts(e.Key())...)
	pos.note(p, parts, e.Key())
	v := e.Value()
	if v != nil && v.Kind == unstable.InlineTable {
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				pos.keyValue(p, parts, c)
			}
		}
	}
}

// note records the line of each prefix of a dotted key, keeping the
// first.
func (pos positions) note(p *unstable.Parser, parts []string, key unstable.Iterator) {
	line := 0
	if key.Next() {
		if n := key.Node(); n.Raw.Length > 0 || n.Raw.Offset > 0 {
			line = p.Shape(n.Raw).Start.Line
		}
	}
	for i := 1; i <= len(parts); i++ {
		k := pathKey(parts[:i]...)
		if _, ok := pos[k]; !ok {
			pos[k] = line
		}
	}
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// line returns the line of a key path, or of its nearest recorded parent.
func (pos positions) line(parts ...string) int {
	for i := len(parts); i > 0; i-- {
		if l, ok := pos[pathKey(parts[:i]...)]; ok {
			return l
		}
	}
	return 0
}
