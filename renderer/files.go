package renderer

import (
	"encoding/base64"
	"path"
	"regexp"
	"strings"

	"github.com/llmrender/llmrender/chart"
)

// Files is the .Files object: the chart's non-template files, by path. It is an
// in-memory map filled at load time, so a template can never read anything
// outside the chart.
type Files map[string][]byte

func newFiles(from []chart.File) Files {
	f := make(Files, len(from))
	for _, file := range from {
		f[file.Name] = file.Data
	}
	return f
}

// GetBytes returns a file's contents, or nothing when it does not exist.
func (f Files) GetBytes(name string) []byte {
	if v, ok := f[name]; ok {
		return v
	}
	return []byte{}
}

// Get returns a file's contents as a string.
func (f Files) Get(name string) string { return string(f.GetBytes(name)) }

// Glob returns the files whose path matches pattern, with Helm's glob syntax:
// * and ? stop at '/', ** crosses it, [...] and {a,b} as usual.
func (f Files) Glob(pattern string) Files {
	re, err := globRegexp(pattern)
	out := Files{}
	for name, data := range f {
		if err != nil || re.MatchString(name) {
			out[name] = data
		}
	}
	return out
}

// AsConfig renders the files as a ConfigMap data block, keyed by base name.
func (f Files) AsConfig() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string, len(f))
	for k, v := range f {
		m[path.Base(k)] = string(v)
	}
	return toYAML(m)
}

// AsSecrets renders the files as a Secret data block, base64 encoded.
func (f Files) AsSecrets() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string, len(f))
	for k, v := range f {
		m[path.Base(k)] = base64.StdEncoding.EncodeToString(v)
	}
	return toYAML(m)
}

// Lines splits a file into lines, without a trailing empty line.
func (f Files) Lines(name string) []string {
	if f == nil || len(f[name]) == 0 {
		return []string{}
	}
	s := strings.TrimSuffix(string(f[name]), "\n")
	return strings.Split(s, "\n")
}

// globRegexp translates a glob into an anchored regular expression.
func globRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	inClass, inAlt := false, 0
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case inClass:
			if c == ']' {
				inClass = false
			}
			if c == '!' && pattern[i-1] == '[' {
				c = '^'
			}
			if c == '\\' && i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pattern[i])))
				continue
			}
			b.WriteByte(c)
		case c == '\\' && i+1 < len(pattern):
			i++
			b.WriteString(regexp.QuoteMeta(string(pattern[i])))
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			inClass = true
			b.WriteByte('[')
		case c == '{':
			inAlt++
			b.WriteString("(?:")
		case c == '}' && inAlt > 0:
			inAlt--
			b.WriteString(")")
		case c == ',' && inAlt > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
