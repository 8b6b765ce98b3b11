package renderer

import (
	"fmt"
	"testing"

	"github.com/Masterminds/sprig/v3"
)

// The cached regexMatch answers as sprig's does, for valid and invalid
// patterns, and the cache stops growing at its bound.
func TestRegexMatchIsSprigs(t *testing.T) {
	sprigMatch := sprig.TxtFuncMap()["regexMatch"].(func(string, string) bool)
	sprigMust := sprig.TxtFuncMap()["mustRegexMatch"].(func(string, string) (bool, error))
	cases := [][2]string{{`^a+$`, "aaa"}, {`^a+$`, "ab"}, {`(?i)HF_`, "hf_x"}, {`[`, "["}, {``, ""}, {`\bx`, "a x"}}
	for _, c := range cases {
		for i := 0; i < 2; i++ { // compiled, then cached
			if got, want := regexMatch(c[0], c[1]), sprigMatch(c[0], c[1]); got != want {
				t.Errorf("regexMatch(%q, %q) = %v, sprig says %v", c[0], c[1], got, want)
			}
			got, err := mustRegexMatch(c[0], c[1])
			want, wantErr := sprigMust(c[0], c[1])
			if got != want || (err == nil) != (wantErr == nil) {
				t.Errorf("mustRegexMatch(%q, %q) = %v, %v; sprig says %v, %v", c[0], c[1], got, err, want, wantErr)
			}
		}
	}
	for i := 0; i < 2*maxCachedRegexps; i++ {
		regexMatch(fmt.Sprintf("^p%d$", i), "x")
	}
	n := regexps.Len()
	if n > maxCachedRegexps {
		t.Errorf("%d patterns cached, bound is %d", n, maxCachedRegexps)
	}
}
