package config

// closest returns the candidate nearest to s by edit distance, if it is
// near enough to be a plausible typo ("" otherwise).
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(s, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	// Allow about one edit per three characters, at least two: catches
	// "poll-batch-sise" and "sqlite_path" but not unrelated words.
	limit := max(2, len(s)/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes; keys
// are ASCII).
func editDistance(a, b string) int {
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
