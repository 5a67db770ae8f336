package pr

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/receipt"
	"github.com/muster-run/muster/runview"
)

// marker opens every body muster writes, so a person (and muster) can
// tell its pull requests apart.
const marker = "<!-- muster:run %s -->"

// bodyInput is what a pull request's body is made of.
type bodyInput struct {
	Run     string
	Title   string // the plan's title (untrusted)
	Brief   string // the plan's brief (untrusted)
	Fold    *runview.Run
	Receipt *receipt.Receipt // nil: not sealed
	// Tasks are the tasks this pull request carries (all of the run's
	// for one pull request, one for a stack's).
	Tasks []muster.TaskID
	// Stack lists the stack's pull requests in order, and Self is this
	// one's index in it (-1: not a stack).
	Stack []stackEntry
	Self  int
}

type stackEntry struct {
	Task   muster.TaskID
	Number int
}

// maxBrief bounds the brief in a body (GitHub takes 65,536 characters).
const maxBrief = 4000

// body renders the pull request's body: what the run did, task by task,
// its totals, and the receipt with the command that checks it. Every
// text that came from a plan or an agent is escaped (escapeMD).
func body(in bodyInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, marker+"\n", in.Run)
	if in.Title != "" {
		fmt.Fprintf(&b, "## %s\n\n", escapeMD(in.Title))
	}
	if brief := strings.TrimSpace(in.Brief); brief != "" {
		for _, l := range strings.Split(textsafe.Clip(brief, maxBrief), "\n") {
			fmt.Fprintf(&b, "> %s\n", escapeMD(l))
		}
		b.WriteString("\n")
	}
	if len(in.Stack) > 1 {
		writeStack(&b, in)
	}
	writeTasks(&b, in)
	writeTotals(&b, in)
	writeReceipt(&b, in)
	return b.String()
}

func writeStack(b *strings.Builder, in bodyInput) {
	b.WriteString("**Stack** (each pull request is based on the one before):\n\n")
	for i, s := range in.Stack {
		ref := "(not open yet)"
		if s.Number > 0 {
			ref = fmt.Sprintf("#%d", s.Number)
		}
		here := ""
		if i == in.Self {
			here = " ← this one"
		}
		fmt.Fprintf(b, "%d. %s %s%s\n", i+1, escapeMD(string(s.Task)), ref, here)
	}
	b.WriteString("\n")
}

func writeTasks(b *strings.Builder, in bodyInput) {
	b.WriteString("| Task | Title | Executor | Gates | Review | Cost |\n|---|---|---|---|---|---|\n")
	for _, id := range in.Tasks {
		t := in.Fold.Tasks[id]
		if t == nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", escapeMD(string(t.ID)), escapeMD(t.Title),
			escapeMD(t.Where()), gates(t), verdict(t), muster.FormatUSD(t.Usage.CostMicros))
	}
	b.WriteString("\n")
}

func gates(t *runview.Task) string {
	names, passed := t.LatestGates()
	if len(names) == 0 {
		return "—"
	}
	out := make([]string, len(names))
	for i, n := range names {
		mark := "✓"
		if !passed[n] {
			mark = "✗"
		}
		out[i] = mark + " " + escapeMD(n)
	}
	return strings.Join(out, ", ")
}

func verdict(t *runview.Task) string {
	if len(t.Reviews) == 0 {
		return "—"
	}
	last := t.Reviews[len(t.Reviews)-1]
	if n := runview.Blocking(last.Findings); n > 0 {
		return fmt.Sprintf("changes requested (%d)", n)
	}
	return fmt.Sprintf("approved by %s", escapeMD(last.Slot))
}

func writeTotals(b *strings.Builder, in bodyInput) {
	done := 0
	for _, id := range in.Fold.Order {
		if t := in.Fold.Tasks[id]; t != nil && t.State == muster.StateSucceeded {
			done++
		}
	}
	u := in.Fold.Usage
	fmt.Fprintf(b, "**Run** `%s`: %d of %d tasks succeeded; %s input and %s output tokens; %s.\n\n",
		in.Run, done, len(in.Fold.Order), runview.Tokens(u.InputTokens), runview.Tokens(u.OutputTokens), muster.FormatUSD(u.CostMicros))
}

func writeReceipt(b *strings.Builder, in bodyInput) {
	r := in.Receipt
	if r == nil {
		b.WriteString("**Receipt:** not sealed yet (the run has not ended).\n")
		return
	}
	fmt.Fprintf(b, "**Receipt:** sealed %s over %d journal lines (chain `%s`), plan `%s`, branch `%s` at `%s`.\n"+
		"Check it in the repository that ran it:\n\n```\nmuster verify %s\n```\n",
		r.Sealed.UTC().Format("2006-01-02 15:04 UTC"), r.Journal.Lines, textsafe.Short(r.Journal.Hash),
		textsafe.Short(r.PlanHash), r.Branch, textsafe.Short(r.Final), in.Run)
}

// Characters that mean something in GitHub's Markdown, escaped with a
// backslash; '<' and '>' become entities, so no HTML (a comment that
// hides text, an image that calls out) gets through.
var mdSpecial = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "{", `\{`, "}", `\}`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "#", `\#`, "+", `\+`, "!", `\!`, "|", `\|`, "~", `\~`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "\r", " ", "\n", " ", "\t", " ",
)

// mentionLike finds what GitHub would turn into a notification or a
// link to another issue: @login, @org/team, #123, GH-123.
var mentionLike = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(@)([a-z0-9])|(#)([0-9])|\b(gh)(-[0-9])`) })

// zwsp is a zero-width space: put between '@' or '#' and what follows,
// the text reads the same and mentions nobody.
const zwsp = "\u200b"

// escapeMD makes untrusted text safe to put in a Markdown body or a
// table cell: on one line, no markup, no mention, no reference.
func escapeMD(s string) string {
	return mdSpecial.Replace(unmention(textsafe.Sanitize(s)))
}

// unmention breaks every mention and reference in s with a zero-width
// space before its last character.
func unmention(s string) string {
	return mentionLike().ReplaceAllStringFunc(s, func(m string) string {
		return m[:len(m)-1] + zwsp + m[len(m)-1:]
	})
}
