package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotate sets the annotation key to value on every object of refs (in
// parallel) with a JSON merge patch under the client's field manager, so
// that no other field changes hands, and checks that the object the
// server stored carries it: the change is in the objects' history before
// Annotate returns, so a controller watching them sees it before any
// later change (a deletion). An object that does not exist, or whose kind
// the cluster no longer serves, is skipped; it is reported in missing.
func (c *Client) Annotate(ctx context.Context, refs []ObjectRef, key, value string) (missing []ObjectRef, err error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(refs))
	gone := make([]bool, len(refs))
	parallel(c.cfg.Concurrency, indexes(len(refs)), func(i int) {
		ref := refs[i]
		m, ns, err := c.resource(ctx, ref)
		if err == nil {
			var data []byte
			data, err = body(c.raw.Patch(types.MergePatchType).
				AbsPath(objectPath(m, ns, ref.Name)).
				Param("fieldManager", c.cfg.FieldManager).
				Body(patch).Do(ctx))
			if err == nil {
				var got metav1.PartialObjectMetadata
				if err = json.Unmarshal(data, &got); err == nil && got.Annotations[key] != value {
					err = fmt.Errorf("the stored object's annotation %s is %q, not %q", key, got.Annotations[key], value)
				}
			}
		}
		switch {
		case err == nil:
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			gone[i] = true
		default:
			errs[i] = &ObjectError{Ref: ref, Err: fmt.Errorf("annotating %s=%s: %w", key, value, err)}
		}
	})
	for i, g := range gone {
		if g {
			missing = append(missing, refs[i])
		}
	}
	return missing, errors.Join(errs...)
}
