package plugin

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/pipeline"
)

// Input is a stream of objects for the standalone mode: a manifest file, or
// a ResourceList whose items are taken.
type Input struct {
	Name string
	Data []byte
}

// Standalone runs the function without an orchestrator, for CI: the config
// comes from a file, the input objects from files, and the result is a plain
// YAML stream (inputs first, then the rendered objects in install order), as
// kustomize would print it before any overlay. Objects an earlier run
// generated for the same release are replaced, as in a ResourceList.
func Standalone(cfg *Config, inputs []Input, env Env) ([]byte, *pipeline.Result, error) {
	var buf bytes.Buffer
	for _, in := range inputs {
		items, err := inputItems(in)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range items {
			if cfg.owns(it) {
				continue
			}
			buf.WriteString("---\n# Source: " + in.Name + "\n")
			enc := yaml.NewEncoder(&buf)
			enc.SetIndent(2)
			enc.CompactSeqIndent()
			if err := enc.Encode(it); err != nil {
				return nil, nil, fmt.Errorf("%s: %v", in.Name, err)
			}
			enc.Close()
		}
	}
	res, err := Generate(cfg, env)
	if err != nil {
		return nil, nil, err
	}
	if err := manifest.WriteStream(&buf, res.Objects); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), res, nil
}

// inputItems reads the objects of one input.
func inputItems(in Input) ([]*yaml.Node, error) {
	if len(in.Data) > MaxInputSize {
		return nil, fmt.Errorf("%s: larger than %d MiB", in.Name, MaxInputSize>>20)
	}
	docs, err := documents(in.Name, in.Data)
	if err != nil {
		return nil, err
	}
	var items []*yaml.Node
	for _, d := range docs {
		if d.Kind != yaml.MappingNode || yamlnode.Scalar(d, "kind") == "" || yamlnode.Scalar(d, "apiVersion") == "" {
			return nil, &ConfigError{Where: fmt.Sprintf("%s:%d:%d", in.Name, d.Line, d.Column),
				Msg: "expected a Kubernetes object with apiVersion and kind"}
		}
		if yamlnode.Scalar(d, "kind") == resourceListKind {
			items = append(items, (&resourceList{root: d}).items()...)
			continue
		}
		items = append(items, d)
	}
	return items, nil
}
