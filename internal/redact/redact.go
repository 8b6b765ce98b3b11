// Package redact keeps user data out of messages: what looks like a
// credential never appears in one, and anything else appears as a short
// excerpt. The credential patterns are LR009's (rules.Credentials uses
// Find), so what the render refuses is exactly what messages hide.
package redact

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmrender/llmrender/internal/lazy"
)

// A credential kind. Each pattern runs only on text that contains one of
// its hints (a literal every match contains): most text holds none. A
// match covers the whole secret, so that replacing it hides all of it.
type credential struct {
	hints []string
	re    func() *regexp.Regexp
	what  string
}

var credentials = []credential{
	{[]string{"hf_"}, lazy.Regexp(`\bhf_[A-Za-z0-9]{30,}`), "a Hugging Face token"},
	{[]string{"AKIA", "ASIA"}, lazy.Regexp(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`), "an AWS access key"},
	// The key itself follows the header: hide it up to its end line, or to
	// the end of the text when that is cut off.
	{[]string{"-----BEGIN "}, lazy.Regexp(`-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|$)`), "a private key"},
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, lazy.Regexp(`\bgh[pousr]_[A-Za-z0-9]{36,}`), "a GitHub token"},
	// Fine-grained personal access tokens: github_pat_, 22 characters, _,
	// 59 characters.
	{[]string{"github_pat_"}, lazy.Regexp(`\bgithub_pat_[A-Za-z0-9_]{36,}`), "a GitHub token"},
	{[]string{"://"}, lazy.Regexp(`(?i)https?://[^\s]*[?&](x-amz-signature|signature|sig|policy|key-pair-id|x-goog-signature)=[^\s]*`), "a signed URL"},
}

// hintStart marks the first byte of every hint, so that MayHold reads a
// string once instead of searching it for each hint in turn.
var hintStart = func() (starts [256]bool) {
	for _, c := range credentials {
		for _, h := range c.hints {
			starts[h[0]] = true
		}
	}
	return starts
}()

// MayHold tells whether s contains a hint of any credential: when it does
// not, s holds none. It is the cheap test for walking many strings (a
// chart's values), most of which hold nothing.
func MayHold(s string) bool {
	for i := 0; i < len(s); i++ {
		if !hintStart[s[i]] {
			continue
		}
		for _, c := range credentials {
			for _, h := range c.hints {
				if strings.HasPrefix(s[i:], h) {
					return true
				}
			}
		}
	}
	return false
}

// Find tells whether s holds a credential, and what kind ("a GitHub
// token").
func Find(s string) (what string, found bool) {
	if !MayHold(s) {
		return "", false
	}
	for _, c := range credentials {
		if hinted(s, c) && c.re().MatchString(s) {
			return c.what, true
		}
	}
	return "", false
}

func hinted(s string, c credential) bool {
	return slices.ContainsFunc(c.hints, func(h string) bool { return strings.Contains(s, h) })
}

// Credentials replaces every credential in s with "[redacted: what]". It
// is the last line of defence for any message that leaves the program.
func Credentials(s string) string {
	for _, c := range credentials {
		if hinted(s, c) {
			s = c.re().ReplaceAllLiteralString(s, "[redacted: "+c.what+"]")
		}
	}
	return s
}

// How much of user data a message may show, in characters: a value inside
// a sentence, and a label naming where something came from (a --set flag
// with its expression).
const (
	MaxExcerpt = 40
	MaxLabel   = 100
)

// Excerpt is s as a message may show it: credentials redacted, cut to
// MaxExcerpt characters (with the total length said), and on one line.
func Excerpt(s string) string { return cut(s, MaxExcerpt, oneLine) }

// Label is Excerpt with room for MaxLabel characters, for the flag or
// source an error names.
func Label(s string) string { return cut(s, MaxLabel, oneLine) }

// Quote is Excerpt in double quotes, with Go's escapes (a newline shows as
// \n), for a value inside a sentence.
func Quote(s string) string { return cut(s, MaxExcerpt, strconv.Quote) }

func cut(s string, max int, show func(string) string) string {
	s = Credentials(s)
	if utf8.RuneCountInString(s) <= max {
		return show(s)
	}
	n := 0
	for range max {
		_, size := utf8.DecodeRuneInString(s[n:])
		n += size
	}
	return show(s[:n]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// Pointer is a JSON pointer (or a dotted field path) as a message may show
// it: each segment is a Label, so a key of a thousand characters shows as
// an excerpt and a key that is a credential as [redacted: ...].
func Pointer(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = Label(s)
	}
	return strings.Join(segs, "/")
}
