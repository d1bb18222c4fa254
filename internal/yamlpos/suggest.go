package yamlpos

import "strings"

// Nearest returns the candidate closest to s, ignoring case, and its edit
// distance; the first wins a tie. It returns "" and -1 without candidates.
// Readers suggest it, for an unknown key say, when the distance is small.
func Nearest(s string, candidates []string) (string, int) {
	best, bestDist := "", -1
	lower := strings.ToLower(s)
	for _, c := range candidates {
		if d := EditDistance(lower, strings.ToLower(c)); bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, bestDist
}

// EditDistance is the Levenshtein distance between a and b, in bytes.
func EditDistance(a, b string) int {
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
