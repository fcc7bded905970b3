// Package suggest finds the known name a mistyped one was probably meant to
// be, for "did you mean …?" hints: config keys and command names share it,
// so a typo is judged the same way wherever the user makes it.
package suggest

// Closest returns the candidate nearest to s by edit distance, if it is
// near enough to be a plausible typo ("" otherwise). Ties go to the
// earlier candidate, so callers control the preference by order.
func Closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := Distance(s, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	// Allow about one edit per three characters, at least two: catches
	// "poll-batch-sise" and "strat" but not unrelated words.
	limit := max(2, len(s)/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance between a and b, counted in bytes:
// keys and command names are ASCII.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
