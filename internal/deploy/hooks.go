package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
)

// Helm's hook annotations. An expanded object that carries AnnotationHook
// is a hook, whatever engine made it: deploy reads these annotations, not
// Helm's types, so that hooks run the same whether a chart was rendered
// in-process, by another program or by a registryd.
const (
	// AnnotationHook lists the events the hook runs at, comma-separated:
	// pre-install, post-install, pre-upgrade, post-upgrade, pre-rollback,
	// post-rollback, pre-delete, post-delete (test hooks never run).
	AnnotationHook = "helm.sh/hook"
	// AnnotationHookWeight orders an event's hooks into tiers (an
	// integer; 0 when absent or not one, as in Helm).
	AnnotationHookWeight = "helm.sh/hook-weight"
	// AnnotationHookDeletePolicy lists when a hook object is deleted:
	// before-hook-creation (the default), hook-succeeded, hook-failed.
	AnnotationHookDeletePolicy = "helm.sh/hook-delete-policy"
)

// The hook delete policies.
const (
	policyBeforeCreation = "before-hook-creation"
	policySucceeded      = "hook-succeeded"
	policyFailed         = "hook-failed"
)

// The actions whose hooks run: each runs "pre-" hooks before its objects
// and "post-" hooks after them.
const (
	actionInstall  = "install"
	actionUpgrade  = "upgrade"
	actionRollback = "rollback"
	actionDelete   = "delete"
)

// hook is what an object's hook annotations say.
type hook struct {
	events   []string
	weight   int
	policies []string
}

// hookOf reads u's hook annotations; ok is false for an ordinary object.
func hookOf(u *unstructured.Unstructured) (h hook, ok bool) {
	a := u.GetAnnotations()
	ev, ok := a[AnnotationHook]
	if !ok {
		return hook{}, false
	}
	h.events = splitList(ev)
	h.weight, _ = strconv.Atoi(strings.TrimSpace(a[AnnotationHookWeight]))
	h.policies = splitList(a[AnnotationHookDeletePolicy])
	if len(h.policies) == 0 {
		// Helm's default, so that the hook runs afresh each time.
		h.policies = []string{policyBeforeCreation}
	}
	return h, true
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// tiers returns the hooks of event (such as pre-install) in the order
// Helm's execHook runs them: by weight, then name, the expansion's order
// between equal names; each tier holds the hooks of one weight.
func (p *plan) tiers(event string) [][]*object {
	if strings.HasSuffix(event, "-") {
		return nil // an action of none
	}
	var hs []*object
	for _, o := range p.hooks {
		if slices.Contains(o.hook.events, event) {
			hs = append(hs, o)
		}
	}
	slices.SortStableFunc(hs, func(a, b *object) int {
		if a.hook.weight != b.hook.weight {
			return a.hook.weight - b.hook.weight
		}
		return strings.Compare(a.obj.GetName(), b.obj.GetName())
	})
	var out [][]*object
	for i, o := range hs {
		if i == 0 || o.hook.weight != hs[i-1].hook.weight {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], o)
	}
	return out
}

// actionHooks returns the hooks an action runs (its pre- and post-
// events); none for action "".
func (p *plan) actionHooks(action string) []*object {
	if action == "" {
		return nil
	}
	var out []*object
	for _, o := range p.hooks {
		if slices.Contains(o.hook.events, "pre-"+action) || slices.Contains(o.hook.events, "post-"+action) {
			out = append(out, o)
		}
	}
	return out
}

// hookRuns lists the hooks the plan's action runs, as Result.Hooks: the
// pre- event's tiers, then the post- event's.
func (p *plan) hookRuns() []Hook {
	var out []Hook
	for _, ev := range []string{"pre-" + p.action, "post-" + p.action} {
		for _, tier := range p.tiers(ev) {
			for _, o := range tier {
				out = append(out, Hook{Event: ev, Weight: o.hook.weight, Path: o.path, Object: o.obj})
			}
		}
	}
	return out
}

// dryRunServer sends what the action would apply to the server in dry
// runs, in the order the action applies it: the pre- hooks tier by tier,
// the objects wave by wave, the post- hooks. Nothing is waited for, since
// nothing runs. Every refusal is reported, not only the first: a dry run
// is a check, and the objects after a refused hook are worth checking too.
func (c *Config) dryRunServer(ctx context.Context, p *plan, live map[kube.ObjectRef]*metav1.PartialObjectMetadata, force bool) error {
	pre := c.dryRunHooks(ctx, p, "pre-"+p.action, live, force)
	_, objs := c.applyWaves(ctx, p, kube.ApplyOptions{Force: force, DryRun: true}, time.Time{})
	post := c.dryRunHooks(ctx, p, "post-"+p.action, live, force)
	return errors.Join(pre, objs, post)
}

// dryRunHooks sends the hooks of event to the server in dry runs, tier by
// tier. A hook that exists and that the real run deletes first
// (before-hook-creation) is checked as created anew (kube's Recreate):
// applied over the old object, a Job whose template changed would be
// refused as immutable, which the real run never meets. The error names
// each hook the server refused.
func (c *Config) dryRunHooks(ctx context.Context, p *plan, event string, live map[kube.ObjectRef]*metav1.PartialObjectMetadata, force bool) error {
	var errs []error
	for _, tier := range p.tiers(event) {
		var over, anew []*unstructured.Unstructured
		byRef := make(map[kube.ObjectRef]*object, len(tier))
		for _, o := range tier {
			byRef[o.ref()] = o
			if live[o.ref()] != nil && deletedBy(o, policyBeforeCreation) {
				anew = append(anew, o.obj)
			} else {
				over = append(over, o.obj)
			}
		}
		for _, batch := range []struct {
			objs     []*unstructured.Unstructured
			recreate bool
		}{{over, false}, {anew, true}} {
			if len(batch.objs) == 0 {
				continue
			}
			_, err := c.Cluster.Apply(ctx, batch.objs, kube.ApplyOptions{Force: force, DryRun: true, Recreate: batch.recreate})
			if err == nil {
				continue
			}
			errs = append(errs, eachObjectError(err, func(oe *kube.ObjectError, e error) error {
				o := byRef[oe.Ref]
				if o == nil {
					return fmt.Errorf("%s hooks: %w", event, e)
				}
				if batch.recreate {
					return fmt.Errorf("%s, checked as created anew (the run deletes the one that exists first, before-hook-creation): %w", hookWhere(o, event), oe.Err)
				}
				return fmt.Errorf("%s: %w", hookWhere(o, event), oe.Err)
			}))
		}
	}
	return errors.Join(errs...)
}

// hookWhere names a hook for messages: its kind and name, event, weight
// and layout path.
func hookWhere(o *object, event string) string {
	return fmt.Sprintf("%s hook %s (weight %d, layout path %s)", event, o.ref(), o.hook.weight, o.path)
}

// runHooks runs the hooks of event tier by tier: for each tier it deletes
// the hooks whose policy is before-hook-creation (waiting until they are
// gone), applies the tier, and waits until every Job of it has completed
// and every Pod has succeeded (other kinds are ready once applied, as in
// Helm); then the next tier. When every tier succeeded, the hooks whose
// policy is hook-succeeded are deleted; a failed hook with hook-failed is
// deleted before the error is returned. The error names each failed hook
// and why. CustomResourceDefinitions are never deleted by a policy.
func (c *Config) runHooks(ctx context.Context, p *plan, event string, force bool, deadline time.Time) error {
	tiers := p.tiers(event)
	if len(tiers) == 0 {
		return nil
	}
	var ran []*object
	for _, tier := range tiers {
		names := make([]string, len(tier))
		for i, o := range tier {
			names[i] = o.ref().String()
		}
		c.logf("dm: %s hooks, weight %d: %s", event, tier[0].hook.weight, strings.Join(names, ", "))
		if err := c.deleteHooks(ctx, tier, policyBeforeCreation, deadline); err != nil {
			return fmt.Errorf("%s hooks: %w", event, err)
		}
		objs := make([]*unstructured.Unstructured, len(tier))
		for i, o := range tier {
			objs[i] = o.obj
		}
		if _, err := c.Cluster.Apply(ctx, objs, kube.ApplyOptions{Force: force}); err != nil {
			return fmt.Errorf("%s hooks: %w", event, annotateErr(err, func(ref kube.ObjectRef) string {
				for _, o := range tier {
					if o.ref() == ref {
						return o.path
					}
				}
				return ""
			}))
		}
		failed, err := c.waitHooks(ctx, tier, event, deadline)
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			var errs []error
			var del []*object
			for _, f := range failed {
				errs = append(errs, f.err)
				del = append(del, f.o)
			}
			if derr := c.deleteHooks(ctx, del, policyFailed, deadline); derr != nil {
				errs = append(errs, derr)
			}
			return errors.Join(errs...)
		}
		ran = append(ran, tier...)
	}
	slices.Reverse(ran)
	if err := c.deleteHooks(ctx, ran, policySucceeded, deadline); err != nil {
		return fmt.Errorf("%s hooks: %w", event, err)
	}
	return nil
}

// deletedBy reports whether policy deletes hook o: o's policies include
// it, and o is no CustomResourceDefinition (whose deletion would take its
// custom resources).
func deletedBy(o *object, policy string) bool {
	ref := o.ref()
	return slices.Contains(o.hook.policies, policy) && !(ref.Group == "apiextensions.k8s.io" && ref.Kind == "CustomResourceDefinition")
}

// deleteHooks deletes those of hooks whose policies include policy, and
// waits until they are gone.
func (c *Config) deleteHooks(ctx context.Context, hooks []*object, policy string, deadline time.Time) error {
	var refs []kube.ObjectRef
	for _, o := range hooks {
		if deletedBy(o, policy) {
			refs = append(refs, o.ref())
		}
	}
	if len(refs) == 0 {
		return nil
	}
	if err := c.Cluster.Delete(ctx, refs, kube.DeleteOptions{Wait: true, Timeout: time.Until(deadline)}); err != nil {
		return fmt.Errorf("deleting hooks (%s): %w", policy, err)
	}
	for _, r := range refs {
		c.logf("dm: deleted hook %s (%s)", r, policy)
	}
	return nil
}

// hookFailure is a hook that failed, and why.
type hookFailure struct {
	o   *object
	err error
}

// waitHooks polls the tier's Jobs and Pods until each has finished, and
// returns those that failed. It fails itself at the deadline, naming the
// hooks still running.
func (c *Config) waitHooks(ctx context.Context, tier []*object, event string, deadline time.Time) ([]hookFailure, error) {
	todo := slices.Clone(tier)
	var failed []hookFailure
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []*object
		for _, o := range todo {
			k := o.ref().Kind
			if k != "Job" && k != "Pod" {
				continue
			}
			u, err := c.Cluster.Get(ctx, o.ref())
			if err != nil {
				if errors.Is(err, derrors.NotFound) {
					// Deleted by someone else, or by a TTL controller once done.
					continue
				}
				return nil, fmt.Errorf("%s: reading it: %w", hookWhere(o, event), err)
			}
			done, why := hookDone(u)
			switch {
			case !done:
				left = append(left, o)
			case why != "":
				failed = append(failed, hookFailure{o, fmt.Errorf("%s failed: %s", hookWhere(o, event), why)})
			default:
				c.logf("dm: %s %s succeeded", event, o.ref())
			}
		}
		if len(left) == 0 {
			return failed, nil
		}
		todo = left
		if time.Now().After(deadline) {
			names := make([]string, len(left))
			for i, o := range left {
				names[i] = hookWhere(o, event)
			}
			return nil, fmt.Errorf("%s hooks did not finish before the timeout: %s: %w", event, strings.Join(names, ", "), derrors.LimitExceeded)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s hooks: %w", event, ctx.Err())
		case <-tick.C:
		}
	}
}

// hookDone says whether a Job or Pod hook has finished, and if it failed,
// why: a Job by its Complete or Failed condition (the Failed condition's
// reason and message), a Pod by its phase.
func hookDone(u *unstructured.Unstructured) (done bool, failed string) {
	switch u.GetKind() {
	case "Job":
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			switch m["type"] {
			case "Complete", "SuccessCriteriaMet":
				return true, ""
			case "Failed", "FailureTarget":
				reason, _ := m["reason"].(string)
				msg, _ := m["message"].(string)
				return true, "Job failed: " + joinNonEmpty(reason, msg)
			}
		}
		return false, ""
	case "Pod":
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		switch phase {
		case "Succeeded":
			return true, ""
		case "Failed":
			reason, _, _ := unstructured.NestedString(u.Object, "status", "reason")
			msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
			return true, "Pod failed: " + joinNonEmpty(reason, msg)
		}
		return false, ""
	}
	return true, ""
}

func joinNonEmpty(reason, msg string) string {
	switch {
	case reason == "" && msg == "":
		return "no reason given"
	case reason == "":
		return msg
	case msg == "":
		return reason
	}
	return reason + ": " + msg
}
