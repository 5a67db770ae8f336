package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/muster-run/muster"
)

// WriteText prints results as a table, then each kind's authority
// enforcement and every problem and warning.
func WriteText(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EXECUTOR\tKIND\tSTATUS\tVERSION\tCREDENTIALS\tAUTHORITY (read/write/shell)")
	for _, r := range results {
		name := r.Executor
		if name == "" {
			name = "-"
		}
		status := "ok"
		switch {
		case !r.Found:
			status = "not found"
		case !r.OK():
			status = "cannot run"
		}
		if r.Executor == "" && !r.OK() && r.Found {
			status = "not ready"
		}
		cred := r.Credentials
		if r.CredentialVar != "" {
			cred = r.CredentialVar + ": " + cred
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, r.Kind, status, dash(r.Version), cred, levels(r.Authority))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	seen := map[muster.ExecKind]bool{}
	var b strings.Builder
	for _, r := range results {
		if seen[r.Kind] || len(r.Authority) == 0 {
			continue
		}
		seen[r.Kind] = true
		fmt.Fprintf(&b, "\n%s:\n", r.Kind)
		if r.Binary != "" {
			fmt.Fprintf(&b, "  binary: %s\n", r.Binary)
		}
		for _, a := range r.Authority {
			fmt.Fprintf(&b, "  %s: %s, %s\n", a.Authority, a.Level, a.How)
		}
	}
	for _, r := range results {
		label := string(r.Kind)
		if r.Executor != "" {
			label = "executor " + r.Executor
		}
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "%s: %s\n", label, p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints results as one JSON array.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if results == nil {
		results = []Result{}
	}
	return enc.Encode(results)
}

func levels(as []Authority) string {
	if len(as) == 0 {
		return "-"
	}
	var parts []string
	for _, a := range as {
		parts = append(parts, a.Level)
	}
	return strings.Join(parts, "/")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
