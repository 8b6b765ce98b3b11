package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// Decode parses a multi-document YAML stream into objects, through JSON as
// kubectl does (integers stay integers).
func Decode(stream []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
}

// ID names an object as Kind/name.
func ID(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// resourceFor finds where an object lives on the server.
func (cp *ControlPlane) resourceFor(o *unstructured.Unstructured, namespace string) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := cp.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		cp.Mapper.Reset()
		if m, err = cp.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, fmt.Errorf("%s: the server does not serve %s: %v", ID(o), gvk, err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := o.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		return cp.Dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return cp.Dynamic.Resource(m.Resource), nil
}

// Apply server-side applies an object as kubectl apply --server-side does,
// into namespace when it is namespaced and names none.
func (cp *ControlPlane) Apply(ctx context.Context, o *unstructured.Unstructured, namespace string) error {
	if err := cp.applyPatch(ctx, o, namespace, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("%s: %v", ID(o), err)
	}
	return nil
}

// Get reads an object's live state.
func (cp *ControlPlane) Get(ctx context.Context, o *unstructured.Unstructured, namespace string) (*unstructured.Unstructured, error) {
	ri, err := cp.resourceFor(o, namespace)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, o.GetName(), metav1.GetOptions{})
}

// DryRun sends an object as a server-side dry-run apply with strict field
// validation, as kubectl apply --server-side --dry-run=server does. A nil
// error means the server accepted it.
func (cp *ControlPlane) DryRun(ctx context.Context, o *unstructured.Unstructured, namespace string) error {
	return cp.applyPatch(ctx, o, namespace, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
}

// applyPatch sends the object as kubectl's server-side apply patch, taking
// over fields other managers set, with the given options besides.
func (cp *ControlPlane) applyPatch(ctx context.Context, o *unstructured.Unstructured, namespace string, opts metav1.PatchOptions) error {
	ri, err := cp.resourceFor(o, namespace)
	if err != nil {
		return err
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	opts.FieldManager, opts.Force = "kubectl", &force
	_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
	return err
}

// IsRejected tells whether an apply failed because the server refused the
// object as it stands (a kubectl apply reports it and a later apply of the
// same set may succeed), rather than because of the object's schema.
func IsRejected(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || strings.Contains(err.Error(), "not found"))
}
