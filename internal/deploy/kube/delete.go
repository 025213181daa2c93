package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/derrors"
)

// DeleteOptions modify Delete.
type DeleteOptions struct {
	// Wait polls until every object of a tier is gone, up to Timeout,
	// before deleting the next tier.
	Wait bool
	// Timeout bounds the whole deletion when positive.
	Timeout time.Duration
	// DryRun asks the server to check the deletions without doing them.
	DryRun bool
}

// Delete deletes refs in reverse tier order (custom resources first,
// namespaces last; the objects of a tier in parallel, in reverse order)
// with background propagation. A missing object, or one whose kind the
// cluster no longer serves, is not an error.
func (c *Client) Delete(ctx context.Context, refs []ObjectRef, opts DeleteOptions) error {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	tiers := byTier(refs, ObjectRef.GroupVersionKind)
	slices.Reverse(tiers)
	policy := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &policy}
	if opts.DryRun {
		del.DryRun = []string{metav1.DryRunAll}
	}
	for _, tier := range tiers {
		slices.Reverse(tier)
		errs := make([]error, len(refs))
		parallel(c.cfg.Concurrency, tier, func(i int) {
			m, ns, err := c.resource(ctx, refs[i])
			if err == nil {
				err = c.deleteObject(ctx, m, ns, refs[i].Name, del)
			}
			if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				errs[i] = &ObjectError{Ref: refs[i], Err: err}
			}
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if opts.Wait && !opts.DryRun {
			if err := c.waitGone(ctx, refs, tier); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitGone polls until the objects refs[i] for i in idx no longer exist.
func (c *Client) waitGone(ctx context.Context, refs []ObjectRef, idx []int) error {
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		var left []int
		present := make([]bool, len(refs))
		errs := make([]error, len(refs))
		parallel(c.cfg.Concurrency, idx, func(i int) {
			_, err := c.Get(ctx, refs[i])
			switch {
			case err == nil:
				present[i] = true
			case errors.Is(err, derrors.NotFound):
			case ctx.Err() != nil:
				present[i] = true
			default:
				errs[i] = err
			}
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for _, i := range idx {
			if present[i] {
				left = append(left, i)
			}
		}
		if len(left) == 0 {
			return nil
		}
		idx = left
		select {
		case <-ctx.Done():
			names := make([]string, len(left))
			for j, i := range left {
				names[j] = refs[i].String()
			}
			return fmt.Errorf("waiting for deletion: %w: still present: %s", ctx.Err(), strings.Join(names, ", "))
		case <-time.After(delay):
		}
	}
}
