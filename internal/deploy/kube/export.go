package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ExportParam asks Export to lift the value at Path of every object that
// has it into the template parameter Name.
type ExportParam struct {
	Name string
	Path string
}

// ParseExportParam parses NAME=JSONPATH, where JSONPATH is a kubectl-style
// field path such as {.spec.replicas}, .spec.template.spec.containers[0].image
// or .metadata.labels['app.kubernetes.io/name'].
func ParseExportParam(s string) (ExportParam, error) {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return ExportParam{}, fmt.Errorf("--param %q: want NAME=JSONPATH", s)
	}
	for _, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return ExportParam{}, fmt.Errorf("--param %q: parameter name %q may only have letters, digits and _", s, name)
		}
	}
	if _, err := parseFieldPath(path); err != nil {
		return ExportParam{}, fmt.Errorf("--param %q: %w", s, err)
	}
	return ExportParam{Name: name, Path: path}, nil
}

// parseFieldPath splits a field path into map keys (strings) and list
// indexes (ints).
func parseFieldPath(p string) ([]any, error) {
	s := strings.TrimSpace(p)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	s = strings.TrimPrefix(s, "$")
	var out []any
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			if end == 0 {
				return nil, fmt.Errorf("path %q: empty field name", p)
			}
			out = append(out, s[:end])
			s = s[end:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", p)
			}
			in := s[1:end]
			s = s[end+1:]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				out = append(out, in[1:len(in)-1])
				continue
			}
			n, err := strconv.Atoi(in)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: [%s] is neither an index nor a quoted key", p, in)
			}
			out = append(out, n)
		default:
			if len(out) > 0 {
				return nil, fmt.Errorf("path %q: unexpected %q", p, s[:1])
			}
			s = "." + s // a leading field without its dot
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("path %q is empty", p)
	}
	return out, nil
}

// fieldAt returns the value at path in v, and the function that replaces it.
func fieldAt(v any, path []any) (any, func(any), bool) {
	for i, seg := range path {
		last := i == len(path)-1
		switch seg := seg.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, nil, false
			}
			x, ok := m[seg]
			if !ok {
				return nil, nil, false
			}
			if last {
				return x, func(n any) { m[seg] = n }, true
			}
			v = x
		case int:
			l, ok := v.([]any)
			if !ok || seg >= len(l) {
				return nil, nil, false
			}
			if last {
				return l[seg], func(n any) { l[seg] = n }, true
			}
			v = l[seg]
		}
	}
	return nil, nil, false
}

// Exportable reports whether a live object belongs in an export: not one a
// controller generated (it has a controller owner), not an event, and not
// one every namespace gets by itself (the default ServiceAccount, its token
// Secrets, kube-root-ca.crt).
func Exportable(obj *unstructured.Unstructured) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			return false
		}
	}
	gk := obj.GroupVersionKind().GroupKind()
	switch {
	case gk.Kind == "Event" && (gk.Group == "" || gk.Group == "events.k8s.io"),
		gk.Group == "" && gk.Kind == "Endpoints",
		gk.Group == "discovery.k8s.io" && gk.Kind == "EndpointSlice",
		gk.Group == "apps" && gk.Kind == "ControllerRevision",
		gk.Group == "coordination.k8s.io" && gk.Kind == "Lease",
		gk.Group == "" && gk.Kind == "ServiceAccount" && obj.GetName() == "default",
		gk.Group == "" && gk.Kind == "ConfigMap" && obj.GetName() == "kube-root-ca.crt":
		return false
	case gk.Group == "" && gk.Kind == "Secret":
		t, _, _ := unstructured.NestedString(obj.Object, "type")
		return t != "kubernetes.io/service-account-token"
	}
	return true
}

// serverSetAnnotations are annotation prefixes the server, controllers or
// kubectl add.
var serverSetAnnotations = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"deployment.kubernetes.io/revision",
	"pv.kubernetes.io/",
	"volume.beta.kubernetes.io/",
	"volume.kubernetes.io/",
	"control-plane.alpha.kubernetes.io/leader",
}

// Strip returns a copy of a live object without the fields the server
// populates: status, uid, resourceVersion, managedFields, creationTimestamp,
// generation, selfLink, the namespace (an export deploys anywhere), owner
// references, generated names (generateName wins), a Service's cluster IPs
// and a Job's generated selector, and annotations that kubectl or
// controllers add.
func Strip(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	o := obj.Object
	delete(o, "status")
	for _, f := range []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation",
		"selfLink", "namespace", "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(o, "metadata", f)
	}
	if obj.GetGenerateName() != "" {
		unstructured.RemoveNestedField(o, "metadata", "name")
	}
	if ann := obj.GetAnnotations(); ann != nil {
		for k := range ann {
			for _, p := range serverSetAnnotations {
				if strings.HasPrefix(k, p) {
					delete(ann, k)
				}
			}
		}
		if len(ann) == 0 {
			unstructured.RemoveNestedField(o, "metadata", "annotations")
		} else {
			obj.SetAnnotations(ann)
		}
	}
	// Pod templates carry a null creationTimestamp from the typed encoding.
	for _, path := range [][]string{
		{"spec", "template", "metadata"},
		{"spec", "jobTemplate", "metadata"},
		{"spec", "jobTemplate", "spec", "template", "metadata"},
	} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(o, append(path, "creationTimestamp")...); ok && v == nil {
			unstructured.RemoveNestedField(o, append(path, "creationTimestamp")...)
		}
	}
	gk := obj.GroupVersionKind().GroupKind()
	switch {
	case gk.Group == "" && gk.Kind == "Service":
		for _, f := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort"} {
			unstructured.RemoveNestedField(o, "spec", f)
		}
	case gk.Group == "" && gk.Kind == "PersistentVolumeClaim":
		unstructured.RemoveNestedField(o, "spec", "volumeName")
	case gk.Group == "batch" && gk.Kind == "Job":
		if manual, _, _ := unstructured.NestedBool(o, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(o, "spec", "selector")
			labels, _, _ := unstructured.NestedStringMap(o, "spec", "template", "metadata", "labels")
			for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"} {
				delete(labels, l)
			}
			if labels != nil {
				_ = unstructured.SetNestedStringMap(o, labels, "spec", "template", "metadata", "labels")
			}
		}
	}
	return obj
}

// Export returns an OpenShift-style Template (apiVersion
// template.openshift.io/v1) named name with the exportable objs, stripped,
// as its objects. Each param's value is lifted from every object that has
// its path into a parameter whose value is the current one; the field
// becomes ${NAME} (a string) or ${{NAME}} (anything else). The objects that
// have the path must agree on its value.
func Export(name string, objs []*unstructured.Unstructured, params []ExportParam) (map[string]any, error) {
	var items []*unstructured.Unstructured
	for _, obj := range objs {
		if Exportable(obj) {
			items = append(items, Strip(obj))
		}
	}
	var parameters []any
	var errs []error
	for _, p := range params {
		path, err := parseFieldPath(p.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("--param %s: %w", p.Name, err))
			continue
		}
		var value any
		var first *unstructured.Unstructured
		var setters []func(any)
		for _, obj := range items {
			v, set, ok := fieldAt(obj.Object, path)
			if !ok {
				continue
			}
			if first == nil {
				value, first = v, obj
			} else if !reflect.DeepEqual(v, value) {
				errs = append(errs, fmt.Errorf("--param %s: %s has %v at %s but %s has %v; narrow the export with -l or --kinds",
					p.Name, RefOf(first), value, p.Path, RefOf(obj), v))
				setters = nil
				break
			}
			setters = append(setters, set)
		}
		if first == nil {
			errs = append(errs, fmt.Errorf("--param %s: no exported object has %s", p.Name, p.Path))
			continue
		}
		if setters == nil {
			continue
		}
		ref, text := "${"+p.Name+"}", ""
		if s, ok := value.(string); ok {
			text = s
		} else {
			b, err := json.Marshal(value)
			if err != nil {
				errs = append(errs, fmt.Errorf("--param %s: %w", p.Name, err))
				continue
			}
			ref, text = "${{"+p.Name+"}}", string(b)
		}
		for _, set := range setters {
			set(ref)
		}
		parameters = append(parameters, map[string]any{"name": p.Name, "value": text})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	objects := make([]any, len(items))
	for i, obj := range items {
		objects[i] = obj.Object
	}
	t := map[string]any{
		"apiVersion": "template.openshift.io/v1",
		"kind":       "Template",
		"metadata":   map[string]any{"name": name},
		"objects":    objects,
	}
	if len(parameters) > 0 {
		t["parameters"] = parameters
	}
	return t, nil
}
