package rollout

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// sim is a fleet that follows a policy's targets at once: each step, every
// instance runs TargetOf and is Ready on it unless bad says otherwise.
type sim struct {
	t     *testing.T
	spec  v1alpha1.RolloutPolicySpec
	st    v1alpha1.RolloutPolicyStatus
	fleet []Instance
	runs  map[string]string
	// moves counts how often each instance changed version.
	moves map[string]int
	bad   map[string]bool // versions that never become Ready
	stall map[string]bool // versions whose instances stall
	now   time.Time
	seen  []string // event reasons, in order
}

func newSim(t *testing.T, n int, spec v1alpha1.RolloutPolicySpec) *sim {
	s := &sim{t: t, spec: spec, fleet: fleet(n), runs: map[string]string{}, moves: map[string]int{},
		bad: map[string]bool{}, stall: map[string]bool{}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return s
}

func (s *sim) step(latest string) Output {
	s.t.Helper()
	obs := map[string]Observed{}
	for _, in := range s.fleet {
		v := s.runs[in.Key()]
		obs[in.Key()] = Observed{Version: v, Ready: v != "" && !s.bad[v] && !s.stall[v], Failed: s.stall[v], Message: "boom"}
	}
	out, err := Step(&s.st, Input{Spec: &s.spec, Latest: latest, Instances: s.fleet, Observed: obs, Now: s.now})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range out.Events {
		s.seen = append(s.seen, e.Reason)
	}
	// The fleet follows.
	for _, in := range s.fleet {
		tg := TargetOf(&s.st, in.Key())
		if tg.Version == "" {
			continue
		}
		if old := s.runs[in.Key()]; old != tg.Version {
			if old != "" {
				s.moves[in.Key()]++
			}
			s.runs[in.Key()] = tg.Version
		}
	}
	return out
}

func (s *sim) states() string {
	var out []string
	for _, w := range s.st.Waves {
		out = append(out, string(w.State))
	}
	return strings.Join(out, ",")
}

func (s *sim) on(v string) int {
	n := 0
	for _, r := range s.runs {
		if r == v {
			n++
		}
	}
	return n
}

var threeWaves = v1alpha1.RolloutPolicySpec{
	Template: "web:v1.2",
	Waves: []v1alpha1.Wave{
		{Name: "canary", Percent: pct(10), SoakTime: metav1.Duration{Duration: time.Minute}, Deadline: metav1.Duration{Duration: 5 * time.Minute}},
		{Name: "half", Percent: pct(40), SoakTime: metav1.Duration{Duration: time.Minute}, Deadline: metav1.Duration{Duration: 5 * time.Minute}},
		{Name: "rest", SoakTime: metav1.Duration{Duration: time.Minute}, Deadline: metav1.Duration{Duration: 5 * time.Minute}},
	},
	FailurePolicy: v1alpha1.FailureRollback,
}

func TestStepGoodPatch(t *testing.T) {
	s := newSim(t, 20, threeWaves)
	s.step("v1.2.4")
	if s.st.Version != "v1.2.4" || s.on("v1.2.4") != 20 {
		t.Fatalf("baseline: version %s, %d on it", s.st.Version, s.on("v1.2.4"))
	}
	s.step("v1.2.5") // starts; canary moves
	if got := s.states(); got != "Progressing,Pending,Pending" {
		t.Fatalf("states %s", got)
	}
	if s.on("v1.2.5") != 2 {
		t.Fatalf("%d instances on v1.2.5 after the canary started, want 2", s.on("v1.2.5"))
	}
	s.step("v1.2.5") // canary Ready: soaking
	if got := s.states(); got != "Soaking,Pending,Pending" {
		t.Fatalf("states %s", got)
	}
	s.now = s.now.Add(30 * time.Second)
	out := s.step("v1.2.5")
	if got := s.states(); got != "Soaking,Pending,Pending" || out.RequeueAfter <= 0 || out.RequeueAfter > 31*time.Second {
		t.Fatalf("mid-soak: states %s requeue %v", got, out.RequeueAfter)
	}
	s.now = s.now.Add(31 * time.Second)
	s.step("v1.2.5") // canary promoted, half started
	if got := s.states(); got != "Promoted,Progressing,Pending" || s.on("v1.2.5") != 10 {
		t.Fatalf("states %s, %d on v1.2.5", got, s.on("v1.2.5"))
	}
	for range 6 {
		s.now = s.now.Add(40 * time.Second)
		s.step("v1.2.5")
	}
	if got := s.states(); got != "Promoted,Promoted,Promoted" || s.on("v1.2.5") != 20 {
		t.Fatalf("states %s, %d on v1.2.5", got, s.on("v1.2.5"))
	}
	if s.st.WaveStates != s.states() {
		t.Errorf("waveStates %q, want %q", s.st.WaveStates, s.states())
	}
	want := []string{ReasonRolloutStarted, ReasonWaveStarted, ReasonWavePromoted, ReasonWaveStarted, ReasonWavePromoted, ReasonWaveStarted, ReasonWavePromoted, ReasonRolloutSucceeded}
	if !slices.Equal(s.seen, want) {
		t.Errorf("events %v, want %v", s.seen, want)
	}
	for k, n := range s.moves {
		if n != 1 {
			t.Errorf("%s moved %d times, want once", k, n)
		}
	}
	// Done: nothing more happens, and the next patch starts anew from it.
	before := s.st.DeepCopy()
	s.step("v1.2.5")
	if s.states() != "Promoted,Promoted,Promoted" || s.st.Previous != before.Previous {
		t.Errorf("a done roll-out changed: %s", s.states())
	}
	s.step("v1.2.6")
	if s.st.Previous != "v1.2.5" || s.st.Version != "v1.2.6" {
		t.Errorf("next roll-out from %s to %s, want v1.2.5 to v1.2.6", s.st.Previous, s.st.Version)
	}
}

func TestStepFailures(t *testing.T) {
	for _, tt := range []struct {
		name      string
		policy    v1alpha1.FailurePolicy
		stall     bool
		states    string
		onBad     int
		lastEvent string
	}{
		{"deadline, rollback", v1alpha1.FailureRollback, false, "RolledBack,Halted,Halted", 0, ReasonWaveRolledBack},
		{"stalled, rollback", v1alpha1.FailureRollback, true, "RolledBack,Halted,Halted", 0, ReasonWaveRolledBack},
		{"deadline, halt", v1alpha1.FailureHalt, false, "Failed,Halted,Halted", 2, ReasonWaveHalted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := threeWaves
			spec.FailurePolicy = tt.policy
			s := newSim(t, 20, spec)
			s.step("v1.2.4")
			if tt.stall {
				s.stall["v1.2.5"] = true
			} else {
				s.bad["v1.2.5"] = true
			}
			s.step("v1.2.5")
			if !tt.stall {
				s.now = s.now.Add(4 * time.Minute)
				s.step("v1.2.5")
				if s.states() != "Progressing,Pending,Pending" {
					t.Fatalf("before the deadline: %s", s.states())
				}
				s.now = s.now.Add(2 * time.Minute)
			}
			s.step("v1.2.5")
			if got := s.states(); got != tt.states {
				t.Fatalf("states %s, want %s", got, tt.states)
			}
			if !slices.Equal(s.st.FailedVersions, []string{"v1.2.5"}) {
				t.Errorf("failed versions %v", s.st.FailedVersions)
			}
			if n := s.on("v1.2.5"); n != tt.onBad {
				t.Errorf("%d instances on the failed patch, want %d", n, tt.onBad)
			}
			if s.seen[len(s.seen)-1] != tt.lastEvent {
				t.Errorf("events %v", s.seen)
			}
			if !strings.Contains(s.st.Waves[0].Message, "v1.2.5") {
				t.Errorf("message %q names no version", s.st.Waves[0].Message)
			}
			// The failed patch is never taken again; a newer one rolls out
			// from the last good patch.
			s.step("v1.2.5")
			if s.states() != tt.states {
				t.Errorf("the failed patch started again: %s", s.states())
			}
			s.step("v1.2.6")
			if s.st.Version != "v1.2.6" || s.st.Previous != "v1.2.4" || s.states() != "Progressing,Pending,Pending" {
				t.Errorf("newer patch: %s from %s, %s", s.st.Version, s.st.Previous, s.states())
			}
			if s.on("v1.2.4") != 18 || s.on("v1.2.6") != 2 {
				t.Errorf("%d on v1.2.4, %d on v1.2.6", s.on("v1.2.4"), s.on("v1.2.6"))
			}
		})
	}
}

func TestStepPausedAndAbort(t *testing.T) {
	s := newSim(t, 20, threeWaves)
	s.step("v1.2.4")
	s.step("v1.2.5")
	s.spec.Paused = true
	s.now = s.now.Add(time.Hour)
	s.step("v1.2.5") // Ready: soaking
	s.now = s.now.Add(time.Hour)
	s.step("v1.2.5")
	if got := s.states(); got != "Soaking,Pending,Pending" {
		t.Fatalf("paused: %s", got)
	}
	s.spec.Paused = false
	s.step("v1.2.5")
	if got := s.states(); got != "Promoted,Progressing,Pending" {
		t.Fatalf("resumed: %s", got)
	}
	moved, err := Abort(&s.st)
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 10 || s.states() != "RolledBack,RolledBack,Halted" || !s.st.Aborted {
		t.Fatalf("abort moved %d, states %s", len(moved), s.states())
	}
	s.step("v1.2.5")
	if s.on("v1.2.4") != 20 {
		t.Errorf("%d back on v1.2.4, want 20", s.on("v1.2.4"))
	}
	if _, err := Abort(&s.st); err == nil {
		t.Error("a second abort was accepted")
	}
}

func TestStepInstanceAdded(t *testing.T) {
	s := newSim(t, 20, threeWaves)
	s.step("v1.2.4")
	s.step("v1.2.5")
	s.step("v1.2.5")
	s.now = s.now.Add(2 * time.Minute)
	s.step("v1.2.5") // half going
	// A new instance and a deleted one.
	gone := s.fleet[0].Key()
	s.fleet = append(s.fleet[1:], Instance{Namespace: "ns-9", Name: "late"})
	out := s.step("v1.2.5")
	listed := 0
	for _, w := range s.st.Waves {
		if slices.Contains(w.Instances, gone) {
			t.Errorf("deleted %s still in wave %s", gone, w.Name)
		}
		if slices.Contains(w.Instances, "ns-9/late") {
			listed++
			if w.State == v1alpha1.WavePromoted {
				t.Errorf("the new instance joined promoted wave %s", w.Name)
			}
		}
	}
	if listed != 1 {
		t.Fatalf("the new instance is in %d waves", listed)
	}
	_ = out
	for range 8 {
		s.now = s.now.Add(time.Minute)
		s.step("v1.2.5")
	}
	if s.states() != "Promoted,Promoted,Promoted" || s.runs["ns-9/late"] != "v1.2.5" {
		t.Errorf("states %s, the new one runs %s", s.states(), s.runs["ns-9/late"])
	}
}

// A restarted controller reads the status back (whole seconds) and goes
// on: the same steps from the decoded status give the same result.
func TestStepResumes(t *testing.T) {
	a := newSim(t, 20, threeWaves)
	a.now = a.now.Add(123456789 * time.Nanosecond)
	a.step("v1.2.4")
	a.step("v1.2.5")
	a.step("v1.2.5")
	b := newSim(t, 20, threeWaves)
	raw, err := json.Marshal(a.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &b.st); err != nil {
		t.Fatal(err)
	}
	b.runs, b.now = maps.Clone(a.runs), a.now
	for range 10 {
		a.now = a.now.Add(40 * time.Second)
		b.now = a.now
		a.step("v1.2.5")
		b.step("v1.2.5")
		if a.states() != b.states() {
			t.Fatalf("%s and %s diverged", a.states(), b.states())
		}
	}
	if a.states() != "Promoted,Promoted,Promoted" {
		t.Errorf("states %s", a.states())
	}
}

// The digests go with their versions: the patch before is pinned by its
// own digest, the new one by its.
func TestStepDigests(t *testing.T) {
	st := &v1alpha1.RolloutPolicyStatus{}
	spec := threeWaves
	in := Input{Spec: &spec, Latest: "v1.2.4", LatestDigest: "sha256:a", Instances: fleet(20), Now: time.Now()}
	if _, err := Step(st, in); err != nil {
		t.Fatal(err)
	}
	in.Latest, in.LatestDigest = "v1.2.5", "sha256:b"
	if _, err := Step(st, in); err != nil {
		t.Fatal(err)
	}
	if st.VersionDigest != "sha256:b" || st.PreviousDigest != "sha256:a" {
		t.Fatalf("digests %q (version), %q (previous)", st.VersionDigest, st.PreviousDigest)
	}
	canary := st.Waves[0].Instances[0]
	rest := st.Waves[2].Instances[0]
	if got := TargetOf(st, canary); got.Digest != "sha256:b" {
		t.Errorf("canary target %+v", got)
	}
	if got := TargetOf(st, rest); got.Digest != "sha256:a" || !got.Held {
		t.Errorf("held target %+v", got)
	}
}
