package renderer

import (
	"regexp"

	"github.com/llmrender/llmrender/internal/memo"
)

// Charts match the same few patterns over and over (a credential check per
// value, a format check per field); sprig compiles the pattern on every
// call. These functions behave as sprig's and keep what they compiled.

// maxCachedRegexps bounds the cache: a chart that builds patterns from its
// values cannot grow it without limit; past the bound, patterns are
// compiled per call as before.
const maxCachedRegexps = 256

var regexps = memo.New[string, *regexp.Regexp](maxCachedRegexps)

func compileRegexp(pattern string) (*regexp.Regexp, error) {
	return regexps.Get(pattern, func() (*regexp.Regexp, error) { return regexp.Compile(pattern) })
}

// regexMatch is sprig's: an invalid pattern matches nothing.
func regexMatch(pattern, s string) bool {
	re, err := compileRegexp(pattern)
	return err == nil && re.MatchString(s)
}

func mustRegexMatch(pattern, s string) (bool, error) {
	re, err := compileRegexp(pattern)
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}
