package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
)

// Diff server-side dry-run applies objs (which Prepare has seen) and
// compares each result with the live object, ignoring fields only the
// server sets (status, managedFields, resourceVersion, generation, uid,
// creationTimestamp, selfLink). It returns a unified diff of the objects'
// YAML, in the order of objs then gone (new objects all added, live objects
// in gone all removed), and whether anything differs. Like kubectl diff it
// does not force conflicts: a conflict is an error.
func (c *Client) Diff(ctx context.Context, objs []*unstructured.Unstructured, gone []ObjectRef) (string, bool, error) {
	applied, err := c.Apply(ctx, objs, ApplyOptions{DryRun: true})
	if err != nil {
		return "", false, err
	}
	type pair struct {
		ref        ObjectRef
		live, next *unstructured.Unstructured
	}
	pairs := make([]pair, 0, len(applied)+len(gone))
	for _, a := range applied {
		next, err := a.Object()
		if err != nil {
			return "", false, err
		}
		pairs = append(pairs, pair{ref: a.Ref, next: next})
	}
	for _, ref := range gone {
		pairs = append(pairs, pair{ref: ref})
	}
	errs := make([]error, len(pairs))
	idx := indexes(len(pairs))
	parallel(c.cfg.Concurrency, idx, func(i int) {
		live, err := c.Get(ctx, pairs[i].ref)
		if err != nil && !errors.Is(err, derrors.NotFound) {
			errs[i] = err
		}
		pairs[i].live = live
	})
	if err := errors.Join(errs...); err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, p := range pairs {
		d, err := diffObjects(p.ref, p.live, p.next)
		if err != nil {
			return "", false, &ObjectError{Ref: p.ref, Err: err}
		}
		b.WriteString(d)
	}
	return b.String(), b.Len() > 0, nil
}

// diffObjects returns the unified diff from live to next, either of which
// may be nil, after dropping server-set fields; "" when they are equal.
func diffObjects(ref ObjectRef, live, next *unstructured.Unstructured) (string, error) {
	a, err := comparable(live)
	if err != nil {
		return "", err
	}
	b, err := comparable(next)
	if err != nil {
		return "", err
	}
	if a == b {
		return "", nil
	}
	name := ref.String()
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(a),
		B:        difflib.SplitLines(b),
		FromFile: "live/" + name,
		ToFile:   "dm/" + name,
		Context:  3,
	})
}

// comparable renders obj as YAML without the fields the server sets.
func comparable(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	obj = obj.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "status")
	for _, f := range serverSet {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	out, err := yaml.Marshal(obj.Object)
	if err != nil {
		return "", fmt.Errorf("encoding: %w", err)
	}
	return string(out), nil
}
