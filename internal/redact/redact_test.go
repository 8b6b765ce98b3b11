package redact_test

import (
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/redact"
)

var (
	hf     = "hf_" + strings.Repeat("a1B2", 9)
	ghp    = "ghp_" + strings.Repeat("Z9y8", 10)
	ghPAT  = "github_pat_11ABCDEFG0123456789abc_" + strings.Repeat("x7Y", 20)
	aws    = "AKIAABCDEFGHIJKLMNOP"
	key    = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + strings.Repeat("Q", 100) + "\n-----END RSA PRIVATE KEY-----"
	cutKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA"
	signed = "https://bucket.s3.amazonaws.com/m.tar?X-Amz-Signature=deadbeef&X-Amz-Date=1"
)

func TestFind(t *testing.T) {
	for s, want := range map[string]string{
		hf: "a Hugging Face token", "token: " + ghp: "a GitHub token", ghPAT: "a GitHub token",
		aws: "an AWS access key", key: "a private key", cutKey: "a private key", signed: "a signed URL",
	} {
		if what, ok := redact.Find(s); !ok || what != want {
			t.Errorf("Find(%.20q) = %q, %v; want %q", s, what, ok, want)
		}
	}
	for _, s := range []string{"hf_short", "github_pat_", "ghp_abc", "AKIA", "https://x/y?a=b", "plain text", "meta-llama/Llama-2-7b-hf"} {
		if what, ok := redact.Find(s); ok {
			t.Errorf("Find(%q) = %q; it is no credential", s, what)
		}
	}
}

// Nothing of a credential survives, not even a piece of it.
func TestCredentialsHidesAllOfEach(t *testing.T) {
	for _, secret := range []string{hf, ghp, ghPAT, aws, key, cutKey, signed} {
		msg := "error: a.yaml:1:3: /x: found " + secret + " here"
		got := redact.Credentials(msg)
		if !strings.Contains(got, "[redacted: ") {
			t.Errorf("not redacted: %q", got)
		}
		for _, piece := range []string{secret[3:12], secret[len(secret)-8:]} {
			if strings.Contains(got, piece) {
				t.Errorf("%q still holds %q", got, piece)
			}
		}
	}
}

func TestExcerpts(t *testing.T) {
	long := strings.Repeat("root:x:0:0:root:/root:/bin/bash\n", 40)
	cases := []struct{ got, want string }{
		{redact.Quote("short"), `"short"`},
		{redact.Quote("a\nb"), `"a\nb"`},
		{redact.Quote(long), `"root:x:0:0:root:/root:/bin/bash\nroot:x:0"... (1280 bytes)`},
		{redact.Excerpt(long), `root:x:0:0:root:/root:/bin/bash\nroot:x:0... (1280 bytes)`},
		{redact.Quote(ghPAT), `"[redacted: a GitHub token]"`},
		{redact.Label("hf.token=" + hf), "hf.token=[redacted: a Hugging Face token]"},
		{redact.Label("a.b=" + strings.Repeat("é", 200)), "a.b=" + strings.Repeat("é", 96) + "... (404 bytes)"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got  %s\nwant %s", c.got, c.want)
		}
	}
}
