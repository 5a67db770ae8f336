package agentkit

import (
	"encoding/json"
	"strings"

	"github.com/muster-run/muster"
)

// ReviewInstructions is appended to a reviewer's prompt: agents CLIs have
// no common structured-output option, so the findings come back as a JSON
// block at the end of the final answer.
const ReviewInstructions = `

When you have finished reviewing, end your final answer with exactly one fenced block
tagged muster-findings that holds a JSON object, and nothing after it:

` + "```muster-findings" + `
{"findings": [{"severity": "critical|major|minor", "title": "...", "detail": "...", "path": "file", "line": 1}]}
` + "```" + `

Use an empty list when the change is acceptable: {"findings": []}.
`

// Prompt returns the prompt to give the agent: req.Prompt, plus the
// findings instructions for a reviewer.
func Prompt(req *muster.ExecRequest) string {
	if req.Role == muster.RoleReviewer {
		return req.Prompt + ReviewInstructions
	}
	return req.Prompt
}

// ParseFindings finds the findings object in an agent's final answer: a
// fenced block (muster-findings or json) or else the last balanced JSON
// object with a "findings" key. ok is false when there is none.
func ParseFindings(text string) (findings []muster.Finding, ok bool) {
	var cands []string
	for _, tag := range []string{"```muster-findings", "```json", "```"} {
		rest := text
		for {
			i := strings.Index(rest, tag)
			if i < 0 {
				break
			}
			body := rest[i+len(tag):]
			j := strings.Index(body, "```")
			if j < 0 {
				break
			}
			cands = append(cands, body[:j])
			rest = body[j+3:]
		}
	}
	cands = append(cands, objects(text)...)
	for i := len(cands) - 1; i >= 0; i-- {
		var v struct {
			Findings *[]muster.Finding `json:"findings"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(cands[i])), &v) == nil && v.Findings != nil {
			out := make([]muster.Finding, 0, len(*v.Findings))
			for _, f := range *v.Findings {
				f.Severity = strings.ToLower(strings.TrimSpace(f.Severity))
				switch f.Severity {
				case "critical", "major", "minor":
				default:
					f.Severity = "minor"
				}
				if f.Title == "" && f.Detail == "" {
					continue
				}
				out = append(out, f)
			}
			return out, true
		}
	}
	return nil, false
}

// Satisfied reports whether the final answer holds the coder's statement
// that the task already holds: a {"type":"satisfied"} object, as in the
// command executor protocol.
func Satisfied(text string) bool {
	for _, o := range objects(text) {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(o), &v) == nil && v.Type == muster.RecSatisfied {
			return true
		}
	}
	return false
}

// objects returns the top-level balanced {...} spans of text, in order.
func objects(text string) []string {
	var out []string
	depth, start := 0, -1
	inStr, esc := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			if depth > 0 {
				inStr = true
			}
		case '{':
			if depth == 0 {
				start = i
			}
			depth++
		case '}':
			if depth > 0 {
				depth--
				if depth == 0 && start >= 0 {
					out = append(out, text[start:i+1])
					start = -1
				}
			}
		}
	}
	return out
}
