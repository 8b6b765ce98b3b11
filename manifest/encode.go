package manifest

import (
	"bytes"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// Writing objects out as YAML.

func newYAMLEncoder(w io.Writer, compact bool) *yaml.Encoder {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if compact {
		enc.CompactSeqIndent()
	}
	return enc
}

// EncodeObject writes one object as canonical YAML: two-space indentation,
// list items at their parent's indentation (as kubectl and kustomize print),
// no trailing spaces.
func EncodeObject(o *Object) ([]byte, error) {
	var buf bytes.Buffer
	if emitCanonical(&buf, o.Node) {
		return buf.Bytes(), nil
	}
	return EncodeWithYAML(o)
}

// EncodeWithYAML is EncodeObject by yaml.v3's encoder: the reference the
// direct writer is held to (emit.go), in tests over every golden object
// and the whole matrix.
func EncodeWithYAML(o *Object) ([]byte, error) {
	var buf bytes.Buffer
	enc := newYAMLEncoder(&buf, true)
	if err := enc.Encode(o.Node); err != nil {
		return nil, fmt.Errorf("%s: %s: cannot encode: %v", o.Source, o.ID(), err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteStream writes objects as one multi-document stream, each preceded by
// "---" and a "# Source:" comment naming its template, as helm template does.
func WriteStream(w io.Writer, objs []*Object) error {
	var buf bytes.Buffer
	for _, o := range objs {
		data, err := EncodeObject(o)
		if err != nil {
			return err
		}
		buf.WriteString("---\n# Source: ")
		buf.WriteString(o.Source)
		buf.WriteByte('\n')
		buf.Write(data)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
