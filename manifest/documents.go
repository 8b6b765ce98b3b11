package manifest

import (
	"iter"
	"strings"
	"unicode"
)

// Splitting a template's output into YAML documents, as Helm does: at
// lines that are exactly "---", with the line each starts on.

type document struct {
	text string
	line int // 1-based line of the template output where it starts
}

// separators finds Helm's document separators (helm v3.22.0
// pkg/releaseutil manifest.go, SplitManifests: the expression
// `(?:^|\s*\n)---\s*`), the start and end FindAllStringIndex would give,
// one pair at a time (a dump of many objects keeps no list), without the regular
// expression: its "\s*\n" may start at every white space of a manifest,
// which made it a tenth of a render. A separator is "---" at the start of
// text, or after a line end and the white space before that; the white
// space after it belongs to it too. It needs no space or line end after
// it: "---apiVersion: v1", which `{{- -}}` around a separator leaves,
// starts a document. TestSeparatorsAreDocSep holds this to Helm's
// expression.
func separators(text string) iter.Seq2[int, int] {
	return func(yield func(start, end int) bool) {
		from := 0
		if strings.HasPrefix(text, "---") {
			end := skipSpace(text, 3)
			if !yield(0, end) {
				return
			}
			from = end
		}
		for {
			i := strings.Index(text[from:], "\n---")
			if i < 0 {
				return
			}
			nl := from + i
			start := nl
			for start > from && isSpace(text[start-1]) {
				start--
			}
			end := skipSpace(text, nl+4)
			if !yield(start, end) {
				return
			}
			from = end
		}
	}
}

// isSpace is regexp's \s: tab, line feed, form feed, carriage return and
// space.
func isSpace(c byte) bool {
	return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func skipSpace(text string, i int) int {
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	return i
}

// eachDocument splits text into documents as Helm does: the text is
// trimmed, cut at each separator, and each document is trimmed of white
// space and ends with one newline, as Helm writes it (so a block scalar at
// the end of a template keeps its final newline, and no more). Each piece
// knows the line of text where it starts.
func eachDocument(text string, fn func(document) error) error {
	lines, counted := 1, 0
	lineAt := func(pos int) int {
		lines += strings.Count(text[counted:pos], "\n")
		counted = pos
		return lines
	}
	emit := func(start, end int) error {
		d := text[start:end]
		lead := len(d) - len(strings.TrimLeftFunc(d, unicode.IsSpace))
		d = strings.TrimSpace(d)
		if d == "" {
			return nil
		}
		return fn(document{d + "\n", lineAt(start + lead)})
	}
	lead := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	body := strings.TrimSpace(text)
	start := 0
	for sepStart, sepEnd := range separators(body) {
		if err := emit(lead+start, lead+sepStart); err != nil {
			return err
		}
		start = sepEnd
	}
	return emit(lead+start, lead+len(body))
}

// MaxNodesPerObject bounds one object after aliases are expanded.
const MaxNodesPerObject = 200_000
