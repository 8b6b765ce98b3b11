package renderer

import (
	"crypto/x509"
	"encoding/pem"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/sprig/v3"
	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/internal/testkit"
)

// The seeded functions give the same output for the same input, a
// different one for another release, and what they generate is real: the
// certificate chain verifies at Options.Now, the key is the certificate's,
// bcrypt hashes check with x/crypto, encryptAES decrypts with sprig.
func TestSeededFunctions(t *testing.T) {
	tpl := `{{- $ca := genCA "my-ca" 365 }}
{{- $cert := genSignedCert "svc" (list "10.0.0.1") (list "svc.local") 30 $ca }}
now: {{ now | date "2006-01-02T15:04:05Z07:00" }}
ago: {{ ago (toDate "2006-01-02" "2024-12-31") }}
uuid: {{ uuidv4 }}
pw: {{ randAlphaNum 20 }}
num: {{ randNumeric 8 | quote }}
int: {{ randInt 1 100 }}
shuffled: {{ shuffle "abcdef" }}
bcrypt: {{ bcrypt "secret" | quote }}
htpasswd: {{ htpasswd "user" "pw" | quote }}
aes: {{ encryptAES "key" "text" | quote }}
ec: {{ genPrivateKey "ecdsa" | quote }}
ed: {{ genPrivateKey "ed25519" | quote }}
ca: {{ $ca.Cert | quote }}
crt: {{ $cert.Cert | quote }}
key: {{ $cert.Key | quote }}
`
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	render := func(release string) map[string]string {
		out, err := execOne(t, tpl, nil, Options{ReleaseName: release, Now: now}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]string
		if err := yaml.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return m
	}
	a, b, other := render("one"), render("one"), render("two")
	for k := range a {
		if a[k] != b[k] {
			t.Errorf("%s differs between two renders", k)
		}
		if k != "now" && k != "ago" && a[k] == other[k] {
			t.Errorf("%s is the same for another release", k)
		}
	}
	if a["now"] != "2025-01-01T00:00:00Z" || a["ago"] != "24h0m0s" {
		t.Errorf("now = %s, ago = %s", a["now"], a["ago"])
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a["uuid"]) {
		t.Errorf("uuid = %s", a["uuid"])
	}
	if !regexp.MustCompile(`^[A-Za-z0-9]{20}$`).MatchString(a["pw"]) || !regexp.MustCompile(`^[0-9]{8}$`).MatchString(a["num"]) {
		t.Errorf("pw = %s, num = %s", a["pw"], a["num"])
	}
	if err := bcrypt.CompareHashAndPassword([]byte(a["bcrypt"]), []byte("secret")); err != nil {
		t.Errorf("bcrypt: %v", err)
	}
	user, hash, _ := strings.Cut(a["htpasswd"], ":")
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("pw")); user != "user" || err != nil {
		t.Errorf("htpasswd %s: %v", a["htpasswd"], err)
	}
	decrypt := sprig.TxtFuncMap()["decryptAES"].(func(string, string) (string, error))
	if got, err := decrypt("key", a["aes"]); got != "text" || err != nil {
		t.Errorf("decryptAES = %q, %v", got, err)
	}
	parse := func(s string) *x509.Certificate {
		block, _ := pem.Decode([]byte(s))
		if block == nil {
			t.Fatalf("not PEM: %s", s)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, crt := parse(a["ca"]), parse(a["crt"])
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, DNSName: "svc.local", CurrentTime: now.Add(time.Hour)}); err != nil {
		t.Errorf("the signed certificate does not verify: %v", err)
	}
	block, _ := pem.Decode([]byte(a["key"]))
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil || !key.PublicKey.Equal(crt.PublicKey) {
		t.Errorf("the key is not the certificate's: %v", err)
	}
	for _, k := range []string{"ec", "ed"} {
		if block, _ := pem.Decode([]byte(a[k])); block == nil {
			t.Errorf("%s: not PEM", k)
		}
	}
}

// With RefuseNondeterministic the functions are errors; the seed does not
// depend on what other templates call.
func TestSeededFunctionsPerTemplate(t *testing.T) {
	c, err := chart.Load(testkit.ChartFS(map[string]string{"templates/a.yaml": "a: {{ randAlpha 8 }}", "templates/b.yaml": "b: {{ randAlpha 8 }}"}))
	if err != nil {
		t.Fatal(err)
	}
	out1, err := Execute(unprocessed(c), c.Values, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := chart.Load(testkit.ChartFS(map[string]string{"templates/a.yaml": "a: {{ randAlpha 8 }}{{ randAlpha 3 }}", "templates/b.yaml": "b: {{ randAlpha 8 }}"}))
	out2, err := Execute(unprocessed(c2), c2.Values, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out1[1].Text != out2[1].Text || out1[0].Text == out1[1].Text[1:] {
		t.Errorf("b.yaml: %q then %q", out1[1].Text, out2[1].Text)
	}
	if _, err := Execute(unprocessed(c), c.Values, Options{RefuseNondeterministic: true}); err == nil || !strings.Contains(err.Error(), "randAlpha is random") {
		t.Errorf("refused: %v", err)
	}
}
