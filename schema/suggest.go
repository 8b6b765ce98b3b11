package schema

import "strings"

// Suggest returns the candidate closest to word when it is close enough to be
// a likely typo ("modle" -> "model", "h100-mega" -> "h100-mega-80gb"), or "".
func Suggest(word string, candidates []string) string {
	type score struct {
		dist, lenDiff int
		name          string
	}
	better := func(a, b score) bool {
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		if a.lenDiff != b.lenDiff {
			return a.lenDiff < b.lenDiff
		}
		return a.name < b.name
	}
	lw := strings.ToLower(word)
	var best *score
	for _, c := range candidates {
		lc := strings.ToLower(c)
		sc := score{dist: distance(lw, lc), lenDiff: abs(len(lc) - len(lw)), name: c}
		// Typing the start of a name (or a name plus a bit) is the strongest
		// hint there is.
		if len(lw) >= 3 && (strings.HasPrefix(lc, lw) || strings.HasPrefix(lw, lc)) {
			sc.dist = min(sc.dist, 1)
		}
		if best == nil || better(sc, *best) {
			best = &sc
		}
	}
	limit := max(2, len(word)/3)
	if best == nil || best.dist > limit || best.name == word {
		return ""
	}
	return best.name
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
