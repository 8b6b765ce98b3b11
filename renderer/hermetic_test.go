package renderer

import (
	"regexp"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/internal/testkit"
)

// Every function that reads the clock, the environment, the network,
// randomness, the machine's files or memory addresses either gives the
// same result everywhere or fails naming itself (docs/security.md, "Functions that
// would make renders differ").
func TestHermeticFunctions(t *testing.T) {
	t.Setenv("TZ", "Pacific/Kiritimati")
	t.Setenv("ZONEINFO", "/nonexistent")
	same := []struct{ tpl, want string }{
		{`{{ dateInZone "2006-01-02 15:04 MST" 0 "Local" }}|{{ date_in_zone "15:04" 3600 "UTC" }}|{{ htmlDateInZone 0 "Local" }}`, "1970-01-01 00:00 UTC|01:00|1970-01-01"},
		{`{{ dateInZone "2006" "not a time" "UTC" }}|{{ date "2006" "x" }}|{{ htmlDate 0 }}`, "||1970-01-01"},
		{`{{ (toDate "2006-01-02" "2024-05-06").Unix }} {{ durationRound "90m" }} {{ durationRound "50h" }}`, "1714953600 1h 2d"},
		{`{{ getHostByName "localhost" }}|{{ lookup "v1" "Secret" "ns" "x" }}`, "|map[]"},
		{`{{ list .Capabilities }}`, "[{{v1.36.0 1 36} [v1 "},
		{`{{ printf "%v|%s" (list 1 "a") "b" }} {{ printf "%d %x" 7 "hi" }}`, "[1 a]|b 7 6869"},
	}
	for _, c := range same {
		got, err := execOne(t, c.tpl, map[string]any{}, Options{}, nil)
		if err != nil || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s\n got %q, %v\nwant %q", c.tpl, got, err, c.want)
		}
	}
	refused := []struct{ tpl, want string }{
		{`{{ dateInZone "2006" 0 "America/New_York" }}`, `time zone "America/New_York" would be read from this machine's time zone database`},
		{`{{ htmlDateInZone 0 "Europe/Berlin" }}`, `time zone "Europe/Berlin"`},
		{`{{ durationRound (toDate "2006" "2020") }}`, "durationRound of a time is the time since then, which reads the clock"},
		{`{{ now }}`, "now reads the clock"},
		{`{{ ago 0 }}`, "ago reads the clock"},
		{`{{ randAlphaNum 5 }}`, "randAlphaNum is random"},
		{`{{ uuidv4 }}`, "uuidv4 is random"},
		{`{{ genCA "x" 1 }}`, "genCA generates a random key"},
		{`{{ encryptAES "k" "x" }}`, "encryptAES uses a random IV"},
		{`{{ printf "%p" .Values }}`, "printf %p prints a memory address"},
		{`{{ printf "%d" (list .Capabilities) }}`, "would print a memory address"},
		{`{{ printf "%x" (fromToml "t = 1979-05-27T07:32:00-08:00").t }}`, "would print a memory address"},
	}
	for _, c := range refused {
		_, err := execOne(t, c.tpl, map[string]any{}, Options{RefuseNondeterministic: true}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.tpl, err, c.want)
		}
	}
	for _, name := range []string{"env", "expandenv"} {
		c, err := chart.Load(testkit.ChartFS(map[string]string{"templates/x.yaml": `{{ ` + name + ` "HOME" }}`}))
		if err == nil {
			_, err = Execute(unprocessed(c), map[string]any{}, Options{})
		}
		if err == nil || !strings.Contains(err.Error(), `function "`+name+`" not defined`) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Printing anything a template can reach shows no address.
	address := regexp.MustCompile(`0x[0-9a-f]{6,}`)
	for _, tpl := range []string{`{{ . }}`, `{{ print . }}`, `{{ toString . }}`, `{{ cat . }}`, `{{ printf "%v %+v" . . }}`, `{{ list . (semver "1.2.3") (toDate "2006" "2020") }}`} {
		got, err := execOne(t, tpl, map[string]any{"a": map[string]any{"b": []any{1}}}, Options{}, nil)
		if err != nil || address.MatchString(got) {
			t.Errorf("%s printed an address (or failed: %v): %.300s", tpl, err, got)
		}
	}
}
