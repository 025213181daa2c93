// Package octemplate reads OpenShift Templates (template.openshift.io/v1)
// that a cluster keeps in its namespaces, and installs their
// CustomResourceDefinition on clusters that are not OpenShift. A Template
// is read with the caller's own client, so the cluster's RBAC decides who
// may use it; processing it is internal/expand/openshift's (as oc process).
package octemplate

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/openshift"
)

// Group, Version and Kind name the Template kind as OpenShift serves it.
const (
	Group   = "template.openshift.io"
	Version = "v1"
	Kind    = "Template"
)

// Prefix marks a Template in the cluster where a command takes a template
// reference: template:NAMESPACE/NAME.
const Prefix = "template:"

//go:embed crd.yaml
var crdYAML []byte

// CRD returns the Template CustomResourceDefinition (a new copy each call).
func CRD() (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := yaml.Unmarshal(crdYAML, &m); err != nil {
		return nil, fmt.Errorf("template CRD: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// InstallCRD applies the Template CRD with server-side apply (so a second
// install changes nothing) and waits until it is Established and served.
func InstallCRD(ctx context.Context, c *kube.Client, opts kube.ApplyOptions) (kube.Applied, error) {
	crd, err := CRD()
	if err != nil {
		return kube.Applied{}, err
	}
	res, err := c.Apply(ctx, []*unstructured.Unstructured{crd}, opts)
	if err != nil {
		return kube.Applied{}, fmt.Errorf("install %s: %w", crd.GetName(), err)
	}
	if len(res) != 1 {
		return kube.Applied{}, fmt.Errorf("install %s: no result", crd.GetName())
	}
	return res[0], nil
}

// Ref names a Template in the cluster.
type Ref struct {
	Namespace, Name string
}

// String formats r as NAMESPACE/NAME.
func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// ParseRef parses NAMESPACE/NAME, with or without the template: prefix.
func ParseRef(s string) (Ref, error) {
	ns, name, ok := strings.Cut(strings.TrimPrefix(s, Prefix), "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, derrors.Errorf(derrors.InvalidArgument, "template %q: want NAMESPACE/NAME", s)
	}
	return Ref{Namespace: ns, Name: name}, nil
}

// Get reads the Template r names with c's credentials and returns it as a
// Template document (apiVersion, kind, the name, namespace, labels and
// annotations of its metadata, message, objects, parameters, labels) and
// parsed. A cluster that serves no Templates, a missing Template and a
// refused read are errors that say so (wrapping derrors.Unavailable,
// NotFound and Forbidden).
func Get(ctx context.Context, c *kube.Client, r Ref) (*openshift.Template, []byte, error) {
	ref := kube.ObjectRef{Group: Group, Version: Version, Kind: Kind, Namespace: r.Namespace, Name: r.Name}
	obj, err := c.Get(ctx, ref)
	switch {
	case err == nil:
	case meta.IsNoMatchError(err):
		return nil, nil, fmt.Errorf("template %s: the cluster serves no %s/%s Templates (install the definition with dm install openshift-template-crd): %w", r, Group, Version, derrors.Unavailable)
	case apierrors.IsForbidden(err):
		return nil, nil, fmt.Errorf("template %s: not allowed to get templates.%s in namespace %s: %w: %s", r, Group, r.Namespace, derrors.Forbidden, statusMessage(err))
	case apierrors.IsUnauthorized(err):
		return nil, nil, fmt.Errorf("template %s: %w: %s", r, derrors.Unauthorized, statusMessage(err))
	case errors.Is(err, derrors.NotFound):
		return nil, nil, fmt.Errorf("template %s: no Template %s in namespace %s: %w", r, r.Name, r.Namespace, derrors.NotFound)
	default:
		return nil, nil, fmt.Errorf("template %s: %w", r, err)
	}
	doc := document(obj)
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("template %s: %w", r, err)
	}
	t, err := openshift.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("template %s: %w", r, err)
	}
	return t, data, nil
}

// document keeps what a Template document holds: the server's bookkeeping
// (uid, resourceVersion, managedFields, ...) is no part of the template and
// must not reach its processed objects or a deployment's record.
func document(obj *unstructured.Unstructured) map[string]any {
	md := map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}
	if l := obj.GetLabels(); len(l) > 0 {
		md["labels"] = l
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		if len(a) > 0 {
			md["annotations"] = a
		}
	}
	doc := map[string]any{"apiVersion": Group + "/" + Version, "kind": Kind, "metadata": md}
	for k, v := range obj.Object {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			doc[k] = v
		}
	}
	if _, ok := doc["objects"]; !ok {
		doc["objects"] = []any{}
	}
	return doc
}

// statusMessage is the apiserver's message of a status error, which names
// the user, verb, resource and namespace.
func statusMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Message
	}
	return err.Error()
}
