package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// MoveTo moves objects to a namespace as the most common kustomization
// does: a namespace field over them as resources, built by the kustomize
// binary the Makefile builds (LLMRENDER_KUSTOMIZE). Its namespace
// transformer sets every namespaced object's metadata.namespace (and the
// namespace of RoleBinding subjects named default), and nothing else.
func MoveTo(objs []*unstructured.Unstructured, namespace string) ([]*unstructured.Unstructured, error) {
	bin := os.Getenv("LLMRENDER_KUSTOMIZE")
	if bin == "" {
		return nil, fmt.Errorf("LLMRENDER_KUSTOMIZE is not set: run these tests with 'make e2e', which builds kustomize")
	}
	dir, err := os.MkdirTemp("", "llmrender-move-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var stream bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		stream.WriteString("---\n")
		stream.Write(data)
	}
	kustomization := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\nresources: [rendered.yaml]\n", namespace)
	if err := os.WriteFile(filepath.Join(dir, "rendered.yaml"), stream.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "build", dir).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%v: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("kustomize build: %w", err)
	}
	return Decode(out)
}
