// Package policyctl reads and changes roll-out policies in a cluster for
// people (dm rollout): a TemplateRolloutPolicy by name, or a namespace's
// RolloutPolicy; it pauses and resumes promotion and aborts a roll-out.
package policyctl

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/rollout"
)

// Ref names a policy: Namespace "" is a TemplateRolloutPolicy, any other a
// RolloutPolicy of that namespace.
type Ref struct{ Namespace, Name string }

// Kind is the policy's kind.
func (r Ref) Kind() string {
	if r.Namespace == "" {
		return "TemplateRolloutPolicy"
	}
	return "RolloutPolicy"
}

// String is KIND NAME or KIND NAMESPACE/NAME.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind() + " " + r.Name
	}
	return r.Kind() + " " + r.Namespace + "/" + r.Name
}

func (r Ref) resource(dyn dynamic.Interface) dynamic.ResourceInterface {
	if r.Namespace == "" {
		return dyn.Resource(schema.GroupVersionResource{Group: "dm.io", Version: "v1alpha1", Resource: "templaterolloutpolicies"})
	}
	return dyn.Resource(schema.GroupVersionResource{Group: "dm.io", Version: "v1alpha1", Resource: "rolloutpolicies"}).Namespace(r.Namespace)
}

// Policy is a policy read from the cluster.
type Policy struct {
	Ref    Ref
	Spec   v1alpha1.RolloutPolicySpec
	Status v1alpha1.RolloutPolicyStatus
	obj    *unstructured.Unstructured
}

// Get reads the policy ref names.
func Get(ctx context.Context, dyn dynamic.Interface, ref Ref) (*Policy, error) {
	u, err := ref.resource(dyn).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		hint := "; a namespace's RolloutPolicy is named with -n NAMESPACE"
		if ref.Namespace != "" {
			hint = "; a cluster's TemplateRolloutPolicy is named without -n"
		}
		return nil, fmt.Errorf("%s not found%s: %w", ref, hint, derrors.NotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	var tp v1alpha1.TemplateRolloutPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tp); err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	return &Policy{Ref: ref, Spec: tp.Spec, Status: tp.Status, obj: u}, nil
}

// SetPaused pauses (or resumes) promotion: spec.paused.
func SetPaused(ctx context.Context, dyn dynamic.Interface, ref Ref, paused bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"paused":%t}}`, paused)
	if _, err := ref.resource(dyn).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			_, err = Get(ctx, dyn, ref) // its message names the kind to use
		}
		return fmt.Errorf("setting spec.paused of %s: %w", ref, err)
	}
	return nil
}

// maxConflicts bounds the retries of a status write that meets the
// controller's.
const maxConflicts = 5

// Abort ends the roll-out in progress: every wave that went is rolled
// back (dm-controller moves its instances back to the patch before), the
// others never go, and the patch is failed for the policy. It returns the
// policy as written and the instances moved back.
func Abort(ctx context.Context, dyn dynamic.Interface, ref Ref) (*Policy, []string, error) {
	for range maxConflicts {
		p, err := Get(ctx, dyn, ref)
		if err != nil {
			return nil, nil, err
		}
		moved, err := rollout.Abort(&p.Status)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w: %w", ref, err, derrors.Conflict)
		}
		st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p.Status)
		if err != nil {
			return nil, nil, err
		}
		p.obj.Object["status"] = st
		_, err = ref.resource(dyn).UpdateStatus(ctx, p.obj, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue // the controller wrote meanwhile: abort what it wrote
		}
		if err != nil {
			return nil, nil, fmt.Errorf("writing the status of %s: %w", ref, err)
		}
		return p, moved, nil
	}
	return nil, nil, errors.New(ref.String() + ": the status kept changing while aborting; try again")
}
