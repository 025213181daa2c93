package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// A roll-out with the controller's own account (the rights
// registry-example's template grants): the policy is read and its status
// written, an instance held back says so (Ready, reason WaitingForWave,
// naming the policy and its wave), and a namespace's RolloutPolicy
// governs its instances in place of the cluster's.
func TestRolloutAsControllerAccount(t *testing.T) {
	h := setup(t)
	ctx := context.Background()
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	other := h.env.Namespace(t)
	h.account(t, other, "deployer", true)
	writeVersion(t, h.dir, "waved", "1.0.0")
	waves := []v1alpha1.Wave{
		{Name: "first", Percent: ptr(int32(33)), SoakTime: metav1.Duration{Duration: 10 * time.Second}},
		{Name: "rest"},
	}
	cluster := &v1alpha1.TemplateRolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "waved-" + ns},
		Spec: v1alpha1.RolloutPolicySpec{Template: "waved:v1.0", Waves: waves}}
	must(t, h.c.Create(ctx, cluster))
	t.Cleanup(func() { _ = h.c.Delete(ctx, cluster) })
	// The other namespace goes at once, in one wave of its own.
	must(t, h.c.Create(ctx, &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "all"},
		Spec: v1alpha1.RolloutPolicySpec{Template: registryPrefix + "/waved:v1.0", Waves: []v1alpha1.Wave{{Name: "all"}}}}))
	policy := func() *v1alpha1.TemplateRolloutPolicy {
		p := &v1alpha1.TemplateRolloutPolicy{}
		must(t, h.c.Get(ctx, client.ObjectKey{Name: cluster.Name}, p))
		return p
	}
	eventually(t, "the policy reads v1.0.0", func() error {
		if v := policy().Status.Version; v != "v1.0.0" {
			return fmt.Errorf("version %q", v)
		}
		return nil
	})
	names := []string{"a", "b", "c"}
	for _, n := range names {
		h.instance(t, ns, n, v1alpha1.TemplateInstanceSpec{Template: "waved:v1.0", ServiceAccountName: "deployer"})
	}
	h.instance(t, other, "o", v1alpha1.TemplateInstanceSpec{Template: "waved:v1.0", ServiceAccountName: "deployer"})
	for _, n := range names {
		h.condition(t, ns, n, v1alpha1.ConditionReady, metav1.ConditionTrue)
	}
	writeVersion(t, h.dir, "waved", "1.0.1")
	var first, held string
	eventually(t, "the first wave soaking, the rest held", func() error {
		p := policy()
		if p.Status.Version != "v1.0.1" || len(p.Status.Waves) != 2 || p.Status.Waves[0].State != v1alpha1.WaveSoaking {
			return fmt.Errorf("version %s waves %+v", p.Status.Version, p.Status.Waves)
		}
		if len(p.Status.Waves[0].Instances) != 1 || len(p.Status.Waves[1].Instances) != 2 {
			return fmt.Errorf("waves %+v, want 1 and 2 instances", p.Status.Waves)
		}
		first = p.Status.Waves[0].Instances[0]
		held = p.Status.Waves[1].Instances[0]
		_, name, _ := strings.Cut(held, "/")
		ti := h.get(t, ns, name)
		c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
		if ti.Status.Resolved != registryPrefix+"/waved:v1.0.0" || c == nil || c.Reason != controller.ReasonWaitingForWave {
			return fmt.Errorf("%s resolved %s, Ready %+v", held, ti.Status.Resolved, c)
		}
		if !strings.Contains(c.Message, "TemplateRolloutPolicy "+cluster.Name) || !strings.Contains(c.Message, "wave rest") {
			return fmt.Errorf("Ready message %q names no policy and wave", c.Message)
		}
		return nil
	})
	_, name, _ := strings.Cut(first, "/")
	if got := h.get(t, ns, name).Status.Resolved; got != registryPrefix+"/waved:v1.0.1" {
		t.Errorf("first wave's %s resolved %s", first, got)
	}
	// The namespace's own policy moved its instance already.
	eventually(t, "the other namespace's instance on v1.0.1", func() error {
		if got := h.get(t, other, "o").Status.Resolved; got != registryPrefix+"/waved:v1.0.1" {
			return fmt.Errorf("resolved %s", got)
		}
		return nil
	})
	eventually(t, "every wave promoted", func() error {
		p := policy()
		for _, w := range p.Status.Waves {
			if w.State != v1alpha1.WavePromoted {
				return fmt.Errorf("waves %+v", p.Status.Waves)
			}
		}
		if meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady) {
			return nil
		}
		return fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	for _, n := range names {
		eventually(t, n+" on v1.0.1, not held", func() error {
			ti := h.get(t, ns, n)
			c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
			if ti.Status.Resolved != registryPrefix+"/waved:v1.0.1" || c == nil || c.Reason == controller.ReasonWaitingForWave {
				return fmt.Errorf("resolved %s, Ready %+v", ti.Status.Resolved, c)
			}
			return nil
		})
	}
}

// The instances of a TemplateDefinition's kind are covered as
// TemplateInstances are: held in their wave, then moved.
func TestRolloutDefinedKind(t *testing.T) {
	h := setup(t)
	ctx := context.Background()
	writeTemplate(t, h.dir, "wavekind", "1.0.0", cmTemplate("1.0.0"), "properties:\n  greeting: {type: string}\n")
	h.definition(t, &v1alpha1.TemplateDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "wavekind"},
		Spec: v1alpha1.TemplateDefinitionSpec{Group: "apps.example.com", Names: v1alpha1.DefinitionNames{Kind: "WaveApp"},
			Template: "wavekind:v1"}, // v1: v1.0 and its patches
	})
	p := &v1alpha1.TemplateRolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "wavekind"}, Spec: v1alpha1.RolloutPolicySpec{
		Template: "wavekind:v1.0",
		Waves: []v1alpha1.Wave{
			{Name: "first", Percent: ptr(int32(50)), SoakTime: metav1.Duration{Duration: 10 * time.Second}},
			{Name: "rest"},
		}}}
	must(t, h.c.Create(ctx, p))
	t.Cleanup(func() { _ = h.c.Delete(ctx, p) })
	policy := func() *v1alpha1.TemplateRolloutPolicy {
		got := &v1alpha1.TemplateRolloutPolicy{}
		must(t, h.c.Get(ctx, client.ObjectKey{Name: p.Name}, got))
		return got
	}
	eventually(t, "the policy reads v1.0.0", func() error {
		if v := policy().Status.Version; v != "v1.0.0" {
			return fmt.Errorf("version %q", v)
		}
		return nil
	})
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	gvk := schema.GroupVersionKind{Group: "apps.example.com", Version: "v1alpha1", Kind: "WaveApp"}
	for _, n := range []string{"x", "y"} {
		must(t, h.c.Create(ctx, object(gvk, ns, n, "deployer", map[string]any{"greeting": "hi"})))
		h.readyObject(t, gvk, ns, n)
	}
	writeTemplate(t, h.dir, "wavekind", "1.0.1", cmTemplate("1.0.1"), "properties:\n  greeting: {type: string}\n")
	resolved := func(name string) (string, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u))
		r, _, _ := unstructured.NestedString(u.Object, "status", "resolved")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Ready" {
				return r, fmt.Sprint(c["reason"])
			}
		}
		return r, ""
	}
	eventually(t, "the first WaveApp moved, the other held", func() error {
		got := policy()
		if got.Status.Version != "v1.0.1" || len(got.Status.Waves) != 2 || got.Status.Waves[0].State != v1alpha1.WaveSoaking {
			return fmt.Errorf("version %s waves %+v", got.Status.Version, got.Status.Waves)
		}
		if len(got.Status.Waves[0].Instances) != 1 || len(got.Status.Waves[1].Instances) != 1 {
			return fmt.Errorf("waves %+v", got.Status.Waves)
		}
		_, first, _ := strings.Cut(got.Status.Waves[0].Instances[0], "/")
		_, held, _ := strings.Cut(got.Status.Waves[1].Instances[0], "/")
		if r, _ := resolved(first); r != registryPrefix+"/wavekind:v1.0.1" {
			return fmt.Errorf("first %s resolved %s", first, r)
		}
		if r, reason := resolved(held); r != registryPrefix+"/wavekind:v1.0.0" || reason != controller.ReasonWaitingForWave {
			return fmt.Errorf("held %s resolved %s, Ready reason %s", held, r, reason)
		}
		return nil
	})
	eventually(t, "both WaveApps on v1.0.1", func() error {
		for _, n := range []string{"x", "y"} {
			if r, reason := resolved(n); r != registryPrefix+"/wavekind:v1.0.1" || reason == controller.ReasonWaitingForWave {
				return fmt.Errorf("%s resolved %s, Ready reason %s", n, r, reason)
			}
		}
		return nil
	})
}
