package report

import (
	"sort"

	"github.com/muster-run/muster"
)

// ByClone sums usage by executor clone from events.
func ByClone(events []muster.Event) ([]string, map[string]muster.Usage) {
	m := map[string]muster.Usage{}
	for _, e := range events {
		if e.Counted() {
			u := m[e.Slot()]
			u.Add(e.Credited())
			m[e.Slot()] = u
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, m
}
