package kube

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
)

// TakeOverFields hands the fields that the client-side field managers
// named in managers own (Helm's "helm", which creates and updates objects
// without server-side apply) to the client's own apply manager, as kubectl
// does when moving an object from client-side to server-side apply
// (csaupgrade). A forced apply of the same values only shares those fields
// with their previous manager, so without this a later apply that changes
// one conflicts with a tool that no longer manages the object. Objects
// without such managers are not written.
func (c *Client) TakeOverFields(ctx context.Context, refs []ObjectRef, managers []string) error {
	csa := sets.New(managers...)
	errs := make([]error, len(refs))
	idx := make([]int, len(refs))
	for i := range idx {
		idx[i] = i
	}
	parallel(c.cfg.Concurrency, idx, func(i int) {
		ref := refs[i]
		m, ns, err := c.resource(ctx, ref)
		if err != nil {
			errs[i] = &ObjectError{Ref: ref, Err: err}
			return
		}
		ri := c.dynamic.Resource(m.Resource).Namespace(ns)
		u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			errs[i] = &ObjectError{Ref: ref, Err: err}
			return
		}
		patch, err := csaupgrade.UpgradeManagedFieldsPatch(u, csa, c.cfg.FieldManager)
		if err != nil || patch == nil {
			if err != nil {
				errs[i] = &ObjectError{Ref: ref, Err: fmt.Errorf("taking over the fields of %v: %w", managers, err)}
			}
			return
		}
		if _, err := ri.Patch(ctx, ref.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			errs[i] = &ObjectError{Ref: ref, Err: fmt.Errorf("taking over the fields of %v: %w", managers, err)}
		}
	})
	return errors.Join(errs...)
}
