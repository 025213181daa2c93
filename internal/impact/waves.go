package impact

import (
	"context"
	"fmt"
	"io"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/rollout"
)

// policy is a roll-out policy as wavesOf reads it.
type policy struct {
	spec   v1alpha1.RolloutPolicySpec
	status v1alpha1.RolloutPolicyStatus
}

// wavesOf returns the wave each listed instance that a roll-out policy
// governs would be in when the next patch rolls out, by NAMESPACE/NAME:
// the waves dm-controller assigns at a roll-out's start (rollout.Assign)
// over the instances the policy covers (rollout.WaveOf's rule, once per
// policy rather than per instance). While a roll-out is under way, or
// when the caller sees only part of what a TemplateRolloutPolicy covers
// (one namespace), an instance the policy's status already places keeps
// that wave. A caller who may not list
// policies is warned and sees no waves.
//
// refused are the instances whose policy lists version among its failed
// patches: no instance it covers takes them.
func wavesOf(ctx context.Context, dyn dynamic.Interface, ns string, all bool, page int64, def resolve.Registry, version string, listed []candidate, log io.Writer) (waves map[string]string, refused map[string]bool, err error) {
	var ps []policy
	var rs []rollout.Policy
	add := func(kind string) func(u *unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error {
			var p policy
			spec, _ := u.Object["spec"].(map[string]any)
			status, _ := u.Object["status"].(map[string]any)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &p.spec); err != nil {
				return fmt.Errorf("%s %s: spec: %w", kind, u.GetName(), err)
			}
			if status != nil {
				// A status that does not read places no instance.
				_ = runtime.DefaultUnstructuredConverter.FromUnstructured(status, &p.status)
			}
			s, err := rollout.PolicySeries(p.spec.Template, def)
			if err != nil || u.GetDeletionTimestamp() != nil {
				return nil // it governs nothing, as for the controller
			}
			ps = append(ps, p)
			rs = append(rs, rollout.Policy{Namespace: u.GetNamespace(), Name: u.GetName(), Series: s})
			return nil
		}
	}
	for _, k := range []struct {
		kind, resource, ns string
	}{{"TemplateRolloutPolicy", "templaterolloutpolicies", ""}, {"RolloutPolicy", "rolloutpolicies", ns}} {
		err := list(ctx, dyn, v1alpha1.GroupVersion.WithResource(k.resource), k.ns, page, add(k.kind))
		switch {
		case apierrors.IsNotFound(err):
			// The controller installed without roll-outs: no policy.
		case apierrors.IsForbidden(err):
			if log != nil {
				fmt.Fprintf(log, "dm: warning: you may not list %ss: the waves they assign are not shown\n", k.kind)
			}
			return nil, nil, nil
		case err != nil:
			return nil, nil, listError(k.kind+"s", k.ns, err)
		}
	}
	if len(ps) == 0 {
		return nil, nil, nil
	}
	// The instances each policy covers: those that follow its series'
	// patches and that it governs.
	covered := make([][]rollout.Instance, len(ps))
	for _, c := range listed {
		ti := c.ti
		if ti.Spec.UpdatePolicy == v1alpha1.UpdateManual || ti.Spec.Suspend || ti.DeletionTimestamp != nil {
			continue
		}
		s, _, ok := rollout.SeriesOf(ti.Spec.Template, def)
		if !ok {
			continue
		}
		if i := rollout.Governing(ti.Namespace, s, rs); i >= 0 {
			covered[i] = append(covered[i], rollout.Instance{Namespace: ti.Namespace, Name: ti.Name, Labels: ti.Labels})
		}
	}
	out, refused := map[string]string{}, map[string]bool{}
	for i, in := range covered {
		if len(in) == 0 {
			continue
		}
		if slices.Contains(ps[i].status.FailedVersions, version) {
			for _, inst := range in {
				refused[inst.Key()] = true
			}
			continue
		}
		idx, err := rollout.Assign(ps[i].spec.Waves, in)
		if err != nil {
			return nil, nil, fmt.Errorf("assigning the waves of %s: %w", policyName(rs[i]), err)
		}
		// A roll-out under way keeps its waves until it ends; a partial
		// view of a cluster-wide policy's instances is not the
		// controller's, and the status's placement is the better guess.
		keep := rs[i].Namespace == "" && !all || rollout.InProgress(&ps[i].status)
		for j, inst := range in {
			if keep {
				if w := rollout.TargetOf(&ps[i].status, inst.Key()).Wave; w != "" {
					out[inst.Key()] = w
					continue
				}
			}
			if idx[j] < len(ps[i].spec.Waves) {
				out[inst.Key()] = ps[i].spec.Waves[idx[j]].Name
			}
		}
	}
	return out, refused, nil
}

// policyName names a policy as messages do.
func policyName(p rollout.Policy) string {
	if p.Namespace != "" {
		return "RolloutPolicy " + p.Namespace + "/" + p.Name
	}
	return "TemplateRolloutPolicy " + p.Name
}
