package renderer

import (
	"errors"
	"fmt"

	"github.com/llmrender/llmrender/internal/lazy"
	"github.com/llmrender/llmrender/internal/redact"
)

// Helm's rules for release names and namespaces.

// MaxReleaseNameLength is Helm's limit: names derived from the release
// (with suffixes) must still fit Kubernetes' 63-character labels.
const MaxReleaseNameLength = 53

var releaseNameRE = lazy.Regexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// CheckReleaseName applies Helm's rule for release names, which become
// object names and label values.
func CheckReleaseName(name string) error {
	switch {
	case name == "":
		return errors.New("the release name must not be empty")
	case len(name) > MaxReleaseNameLength:
		return fmt.Errorf("release name %s is %d characters; at most %d fit the names derived from it", redact.Quote(name), len(name), MaxReleaseNameLength)
	case !releaseNameRE().MatchString(name):
		return fmt.Errorf("release name %s must be lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", redact.Quote(name))
	}
	return nil
}

var namespaceRE = lazy.Regexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// CheckNamespace applies Kubernetes' rule for namespace names (an RFC 1123
// label): what --namespace sets is written into every object.
func CheckNamespace(ns string) error {
	switch {
	case ns == "":
		return errors.New("the namespace must not be empty")
	case len(ns) > 63:
		return fmt.Errorf("namespace %s is %d characters; Kubernetes allows at most 63", redact.Quote(ns), len(ns))
	case !namespaceRE().MatchString(ns):
		return fmt.Errorf("namespace %s must be lower-case letters, digits and '-', starting and ending with a letter or digit (an RFC 1123 label)", redact.Quote(ns))
	}
	return nil
}
