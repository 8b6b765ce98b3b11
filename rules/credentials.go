package rules

import (
	"fmt"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR009: credentials in values, and the Secrets a download needs.

// LR009: gated downloads need a token Secret; Meta downloads need the URL Secret.
func gatedDownload(w *workload.Workload, pos *values.Positions) []Finding {
	if !w.Downloads() {
		return nil
	}
	source := str(w.V, "download", "source")
	if source == "meta" && str(w.V, "download", "urlSecret", "name") == "" {
		return []Finding{at(pos, "LR009", Error, "/download/urlSecret", "download.source meta needs the signed URL in a Secret: create one (kubectl create secret generic llama-url --from-literal=url=...) and set download.urlSecret.name")}
	}
	if source == "huggingface" && boolean(w.Model, "gated") && str(w.V, "download", "tokenSecret", "name") == "" {
		return []Finding{at(pos, "LR009", Error, "/model/name", fmt.Sprintf(
			"%s is gated on Hugging Face: accept its licence and reference a token Secret (kubectl create secret generic huggingface-secret --from-literal=token=...; download.tokenSecret.name: huggingface-secret)",
			str(w.Model, "hfRepo")))}
	}
	return nil
}

// Credentials finds tokens, keys and signed URLs anywhere in a values tree
// (rule LR009). It applies to any chart's values, so it runs before the
// schema: a pasted token is the first thing to hear about.
func Credentials(v map[string]any, pos *values.Positions) []Finding {
	if !holdsCredential(v) {
		return nil // the common case, found without building a pointer for every value
	}
	fs := secretsInValues(v, pos, "")
	Sort(fs)
	return fs
}

// LR009: credentials never belong in values; they would end up in the
// output. Keys are checked as well as values (a map key is rendered too).
// These findings cannot be waived. The patterns are redact's, which also
// keeps them out of every message; a key that is a credential is shown
// redacted in the finding's field.
func secretsInValues(v any, pos *values.Positions, ptr string) []Finding {
	switch x := v.(type) {
	case map[string]any:
		var out []Finding
		for _, k := range values.SortedKeys(x) {
			child := ptr + "/" + values.EscapePointer(k)
			if f, ok := credential(k, pos, child); ok {
				f.Field = ptr + "/" + values.EscapePointer(redact.Credentials(k))
				if loc, ok := pos.LookupKey(child); ok {
					f.Where = loc.String()
				}
				out = append(out, f)
				continue
			}
			out = append(out, secretsInValues(x[k], pos, child)...)
		}
		return out
	case []any:
		var out []Finding
		for i, e := range x {
			out = append(out, secretsInValues(e, pos, fmt.Sprintf("%s/%d", ptr, i))...)
		}
		return out
	case string:
		if f, ok := credential(x, pos, ptr); ok {
			return []Finding{f}
		}
	}
	return nil
}

// holdsCredential tells whether any key or string of v is a credential.
func holdsCredential(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, found := redact.Find(k); found || holdsCredential(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsCredential(e) {
				return true
			}
		}
	case string:
		_, found := redact.Find(x)
		return found
	}
	return false
}

func credential(s string, pos *values.Positions, ptr string) (Finding, bool) {
	what, found := redact.Find(s)
	if !found {
		return Finding{}, false
	}
	f := at(pos, "LR009", Error, ptr, fmt.Sprintf(
		"this looks like %s; never put credentials in values (they would be rendered into the manifests): store it in a Secret and reference the Secret", what))
	f.Unwaivable = true
	return f, true
}
