package schema

import "strings"

// Suggest returns the candidate closest to word when it is close enough to be
// a likely typo ("modle" -> "model", "h100-mega" -> "h100-mega-80gb"), or "".
func Suggest(word string, candidates []string) string {
	best, bestDist := "", -1
	lw := strings.ToLower(word)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := distance(lw, lc)
		// A prefix or an extension of a candidate is a strong hint too.
		if strings.HasPrefix(lc, lw) || strings.HasPrefix(lw, lc) {
			if p := abs(len(lc) - len(lw)); p < d {
				d = (p + 1) / 2
			}
		}
		if bestDist < 0 || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	limit := 2
	if n := len(word) / 3; n > limit {
		limit = n
	}
	if best == "" || bestDist > limit || bestDist == 0 && best == word {
		return ""
	}
	return best
}

// distance is the Damerau-Levenshtein (optimal string alignment) distance, so
// that swapped letters count as one edit.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
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

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
