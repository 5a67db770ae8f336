// Package suggest finds the known word nearest to a misspelt one, for
// "did you mean" hints in error messages.
package suggest

import "strings"

// Nearest returns the first candidate that starts with word (when word
// has three letters or more), else the candidate closest to word by edit
// distance (case-insensitive), or "" when none is close enough to be a plausible
// misspelling: the distance must be at most a third of the longer word
// (so words of one or two letters get no hint). Ties go to the earlier
// candidate.
func Nearest(word string, candidates []string) string {
	w := strings.ToLower(word)
	if len(w) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(strings.ToLower(c), w) {
				return c
			}
		}
	}
	best, bestD := "", -1
	for _, c := range candidates {
		d := Distance(w, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return ""
	}
	if bestD > max(len([]rune(w)), len([]rune(best)))/3 {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance between a and b, counting an
// adjacent transposition as one edit (optimal string alignment).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 256 || len(rb) > 256 {
		// Long strings are never misspellings of a short known word.
		return max(len(ra), len(rb))
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
