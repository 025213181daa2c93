package rollout

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/resolve"
)

var def = resolve.Registry{Host: "github.com", Owner: "acme", Repo: "t"}

func TestSeriesOf(t *testing.T) {
	for _, tt := range []struct {
		ref   string
		want  Series
		floor string
		ok    bool
	}{
		{"web:v1.2", "github.com/acme/t/web:v1.2", "", true},
		{"github.com/acme/t/web:v1.2", "github.com/acme/t/web:v1.2", "", true},
		{"apps/web:v1.2", "github.com/acme/t/apps/web:v1.2", "", true},
		{"github.com/other/r/web:v1.2", "github.com/other/r/web:v1.2", "", true},
		{"web:v1.2.3", "github.com/acme/t/web:v1.2", "v1.2.3", true}, // v1.2, patch 3 or higher
		{"web:v1", "github.com/acme/t/web:v1.0", "", true},           // v1 is v1.0 and its patches
		{"web", "", "", false},                                        // follows every version
		{"web:v1.2.0-rc.1", "", "", false},                            // a pre-release is exact
		{"web:v1.2@sha256:" + fmt.Sprintf("%064x", 1), "", "", false}, // pinned by digest
		{"not a ref", "", "", false},
	} {
		got, floor, ok := SeriesOf(tt.ref, def)
		if got != tt.want || ok != tt.ok || floor != tt.floor {
			t.Errorf("SeriesOf(%q) = %q, %q, %v; want %q, %q, %v", tt.ref, got, floor, ok, tt.want, tt.floor, tt.ok)
		}
	}
	if _, err := PolicySeries("web:v1.2.3", def); err == nil {
		t.Error("PolicySeries accepted an exact version")
	}
	if s, err := PolicySeries("web:v1.2", def); err != nil || s != "github.com/acme/t/web:v1.2" {
		t.Errorf("PolicySeries(web:v1.2) = %q, %v", s, err)
	}
	s := Series("github.com/acme/t/web:v1.2")
	for v, want := range map[string]bool{"v1.2.0": true, "v1.2.15": true, "v1.20.0": false, "v1.3.0": false, "v1.2.1-rc.1": false} {
		if got := s.InSeries(v); got != want {
			t.Errorf("InSeries(%s) = %v, want %v", v, got, want)
		}
	}
}

func TestGoverning(t *testing.T) {
	web := Series("github.com/acme/t/web:v1.2")
	other := Series("github.com/acme/t/web:v1.3")
	policies := []Policy{
		{Name: "z-cluster", Series: web},
		{Name: "a-cluster", Series: web},
		{Namespace: "team-a", Name: "mine", Series: web},
		{Namespace: "team-b", Name: "other-minor", Series: other},
	}
	for _, tt := range []struct {
		ns     string
		series Series
		want   int
	}{
		{"team-a", web, 2},   // the namespace's own first
		{"team-b", web, 1},   // the lower-named cluster policy
		{"team-c", web, 1},   // likewise
		{"team-b", other, 3}, // its own, other MINOR
		{"team-a", other, -1},
		{"team-a", "github.com/acme/t/db:v1.0", -1},
	} {
		if got := Governing(tt.ns, tt.series, policies); got != tt.want {
			t.Errorf("Governing(%s, %s) = %d, want %d", tt.ns, tt.series, got, tt.want)
		}
	}
}

func fleet(n int) []Instance {
	var out []Instance
	for i := range n {
		ns := fmt.Sprintf("ns-%d", i%3)
		l := map[string]string{}
		if i%5 == 0 {
			l["tier"] = "canary"
		}
		out = append(out, Instance{Namespace: ns, Name: fmt.Sprintf("app-%02d", i), Labels: l})
	}
	return out
}

func pct(p int32) *int32 { return &p }

func counts(assign []int, waves int) []int {
	c := make([]int, waves)
	for _, w := range assign {
		c[w]++
	}
	return c
}

func TestAssign(t *testing.T) {
	canary := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}
	for _, tt := range []struct {
		name  string
		waves []v1alpha1.Wave
		n     int
		want  []int
	}{
		{"percent then rest", []v1alpha1.Wave{{Name: "a", Percent: pct(10)}, {Name: "b", Percent: pct(40)}, {Name: "c"}}, 20, []int{2, 8, 10}},
		{"percent rounds up", []v1alpha1.Wave{{Name: "a", Percent: pct(1)}, {Name: "b"}}, 20, []int{1, 19}},
		{"selector", []v1alpha1.Wave{{Name: "canary", Selector: canary}, {Name: "rest"}}, 20, []int{4, 16}},
		{"selector and percent: of all covered", []v1alpha1.Wave{{Name: "canary", Selector: canary, Percent: pct(10)}, {Name: "rest"}}, 20, []int{2, 18}},
		{"unselected fall in the last wave", []v1alpha1.Wave{{Name: "canary", Selector: canary}, {Name: "half", Percent: pct(50)}}, 20, []int{4, 16}},
		{"zero percent", []v1alpha1.Wave{{Name: "none", Percent: pct(0)}, {Name: "all"}}, 20, []int{0, 20}},
		{"one wave", []v1alpha1.Wave{{Name: "all", Percent: pct(10)}}, 20, []int{20}},
		{"no instances", []v1alpha1.Wave{{Name: "a", Percent: pct(10)}, {Name: "b"}}, 0, []int{0, 0}},
		{"1000 over three", []v1alpha1.Wave{{Name: "a", Percent: pct(5)}, {Name: "b", Percent: pct(25)}, {Name: "c"}}, 1000, []int{50, 250, 700}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := fleet(tt.n)
			got, err := Assign(tt.waves, in)
			if err != nil {
				t.Fatal(err)
			}
			if c := counts(got, len(tt.waves)); !slices.Equal(c, tt.want) {
				t.Errorf("wave sizes %v, want %v", c, tt.want)
			}
			// The same set in another order is split the same way.
			rev := slices.Clone(in)
			slices.Reverse(rev)
			again, err := Assign(tt.waves, rev)
			if err != nil {
				t.Fatal(err)
			}
			slices.Reverse(again)
			if !slices.Equal(got, again) {
				t.Error("the order of the instances changed the waves")
			}
			for i, w := range got {
				if tt.waves[w].Selector != nil && w != len(tt.waves)-1 && in[i].Labels["tier"] != "canary" {
					t.Errorf("%s in wave %s that does not select it", in[i].Key(), tt.waves[w].Name)
				}
			}
		})
	}
	if _, err := Assign([]v1alpha1.Wave{{Name: "bad", Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Nope"}}}}}, fleet(2)); err == nil {
		t.Error("a bad selector was accepted")
	}
}

// The hash is part of the contract: a restarted (or upgraded) controller
// must pick the same instances.
func TestAssignStable(t *testing.T) {
	got, err := Assign([]v1alpha1.Wave{{Name: "a", Percent: pct(10)}, {Name: "b"}}, fleet(20))
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for i, w := range got {
		if w == 0 {
			first = append(first, fleet(20)[i].Key())
		}
	}
	if want := []string{"ns-2/app-02", "ns-2/app-17"}; !slices.Equal(first, want) {
		t.Errorf("first wave %v, want %v (the stable hash changed)", first, want)
	}
}

func TestTargetOf(t *testing.T) {
	st := &v1alpha1.RolloutPolicyStatus{Version: "v1.2.5", Previous: "v1.2.4", Waves: []v1alpha1.WaveStatus{
		{Name: "a", State: v1alpha1.WavePromoted, Instances: []string{"n/a"}},
		{Name: "b", State: v1alpha1.WaveSoaking, Instances: []string{"n/b"}},
		{Name: "c", State: v1alpha1.WavePending, Instances: []string{"n/c"}},
	}}
	for _, tt := range []struct {
		st   *v1alpha1.RolloutPolicyStatus
		key  string
		want Target
	}{
		{&v1alpha1.RolloutPolicyStatus{}, "n/a", Target{}},
		{&v1alpha1.RolloutPolicyStatus{Version: "v1.2.4"}, "n/a", Target{Version: "v1.2.4"}},
		{st, "n/a", Target{Version: "v1.2.5", Wave: "a"}},
		{st, "n/b", Target{Version: "v1.2.5", Wave: "b"}},
		{st, "n/c", Target{Version: "v1.2.4", Held: true, Wave: "c"}},
		{st, "n/new", Target{Version: "v1.2.4", Held: true}},
		{&v1alpha1.RolloutPolicyStatus{Version: "v1.2.5", Previous: "v1.2.4", Waves: []v1alpha1.WaveStatus{
			{Name: "a", State: v1alpha1.WavePromoted, Instances: []string{"n/a"}}}}, "n/new", Target{Version: "v1.2.5"}},
		{&v1alpha1.RolloutPolicyStatus{Version: "v1.2.5", Previous: "v1.2.4", Waves: []v1alpha1.WaveStatus{
			{Name: "a", State: v1alpha1.WaveRolledBack, Instances: []string{"n/a"}}, {Name: "b", State: v1alpha1.WaveHalted, Instances: []string{"n/b"}}}},
			"n/a", Target{Version: "v1.2.4", Held: true, Wave: "a"}},
		{&v1alpha1.RolloutPolicyStatus{Version: "v1.2.5", Previous: "v1.2.4", Waves: []v1alpha1.WaveStatus{
			{Name: "a", State: v1alpha1.WaveFailed, Instances: []string{"n/a"}}, {Name: "b", State: v1alpha1.WaveHalted, Instances: []string{"n/b"}}}},
			"n/a", Target{Version: "v1.2.5", Wave: "a"}},
	} {
		if got := TargetOf(tt.st, tt.key); got != tt.want {
			t.Errorf("TargetOf(%s, %s) = %+v, want %+v", tt.st.Version, tt.key, got, tt.want)
		}
	}
}

func TestWaveOf(t *testing.T) {
	spec := &v1alpha1.RolloutPolicySpec{Waves: []v1alpha1.Wave{{Name: "a", Percent: pct(10)}, {Name: "b"}}}
	in := fleet(20)
	assign, err := Assign(spec.Waves, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, inst := range in {
		got, err := WaveOf(spec, &v1alpha1.RolloutPolicyStatus{}, in, inst.Key())
		if err != nil || got != spec.Waves[assign[i]].Name {
			t.Errorf("WaveOf(%s) = %q, %v; want %s", inst.Key(), got, err, spec.Waves[assign[i]].Name)
		}
	}
	// Under way, the status's lists count.
	st := &v1alpha1.RolloutPolicyStatus{Version: "v1.0.1", Previous: "v1.0.0", Waves: []v1alpha1.WaveStatus{
		{Name: "a", State: v1alpha1.WaveProgressing, Instances: []string{in[0].Key()}}, {Name: "b", State: v1alpha1.WavePending}}}
	if got, _ := WaveOf(spec, st, in, in[0].Key()); got != "a" {
		t.Errorf("listed instance in wave %q, want a", got)
	}
	if got, _ := WaveOf(spec, st, in, "nowhere/x"); got != "" {
		t.Errorf("unknown instance in wave %q", got)
	}
}
