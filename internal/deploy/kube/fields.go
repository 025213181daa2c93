package kube

import (
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ChangedFields returns the paths of the fields that differ between live
// and next (spec.replicas, metadata.labels.app,
// metadata.annotations["example.com/x"], spec.template.spec.containers[0].image),
// sorted, after dropping what the server, controllers and kubectl set
// (status, managedFields, resourceVersion, uid, generation,
// creationTimestamp, their annotations) and the annotations of
// ignoreAnnotations (prefixes). A field present on one side only is
// named at its own path, not at its leaves.
func ChangedFields(live, next *unstructured.Unstructured, ignoreAnnotations []string) []string {
	a := fieldsOf(live, ignoreAnnotations)
	b := fieldsOf(next, ignoreAnnotations)
	var out []string
	walkChanged("", a, b, &out)
	slices.Sort(out)
	return out
}

// fieldsOf is obj's content as ChangedFields compares it.
func fieldsOf(obj *unstructured.Unstructured, ignore []string) map[string]any {
	if obj == nil {
		return map[string]any{}
	}
	o := obj.DeepCopy().Object
	delete(o, "status")
	for _, f := range serverSet {
		unstructured.RemoveNestedField(o, "metadata", f)
	}
	// Annotations are compared key by key, none being an empty mapping:
	// an annotation added is named, not the whole mapping.
	ann, _, _ := unstructured.NestedMap(o, "metadata", "annotations")
	if ann == nil {
		ann = map[string]any{}
	}
	for k := range ann {
		for _, p := range slices.Concat(serverSetAnnotations, ignore) {
			if strings.HasPrefix(k, p) {
				delete(ann, k)
			}
		}
	}
	if md, ok := o["metadata"].(map[string]any); ok {
		md["annotations"] = ann
	}
	return o
}

func walkChanged(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			keys := map[string]bool{}
			for k := range av {
				keys[k] = true
			}
			for k := range bv {
				keys[k] = true
			}
			for k := range keys {
				x, inA := av[k]
				y, inB := bv[k]
				p := joinField(path, k)
				if inA != inB {
					*out = append(*out, p)
					continue
				}
				walkChanged(p, x, y, out)
			}
			return
		}
	case []any:
		if bv, ok := b.([]any); ok {
			for i := range max(len(av), len(bv)) {
				p := path + "[" + strconv.Itoa(i) + "]"
				if i >= len(av) || i >= len(bv) {
					*out = append(*out, p)
					continue
				}
				walkChanged(p, av[i], bv[i], out)
			}
			return
		}
	}
	if !reflect.DeepEqual(normalNumber(a), normalNumber(b)) {
		*out = append(*out, path)
	}
}

// normalNumber makes JSON numbers decoded as int64 and float64 compare
// equal when they are the same number.
func normalNumber(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case int32:
		return float64(n)
	}
	return v
}

var plainKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// joinField appends key to a field path: .key, or ["key"] for a key with
// dots or slashes (an annotation's).
func joinField(path, key string) string {
	if plainKey.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// FieldWithin tells whether a change at path touches field: path is field
// or below it, or above it (a change of a whole mapping or list holding
// field).
func FieldWithin(path, field string) bool {
	under := func(p, of string) bool {
		return p == of || strings.HasPrefix(p, of+".") || strings.HasPrefix(p, of+"[")
	}
	return under(path, field) || under(field, path)
}
