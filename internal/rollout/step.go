package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// Observed is what the controller sees of one covered instance.
type Observed struct {
	// Version is the patch it runs (from status.resolved), "" for none.
	Version string
	// Ready is its Ready condition True for its current generation.
	Ready bool
	// Failed is its Stalled condition True: it cannot go on without a
	// human (a template that fails to expand, an object refused).
	Failed bool
	// Message is its Ready condition's message, for a failed wave's.
	Message string
}

// Event is what a step did, for an event on the policy and a metric.
type Event struct {
	// Warning is true for a failure.
	Warning bool
	// Reason is RolloutStarted, WaveStarted, WavePromoted, WaveFailed,
	// WaveRolledBack, WaveHalted or RolloutSucceeded.
	Reason  string
	Message string
	// Wave names the wave, "" for the roll-out as a whole.
	Wave string
	// Instances are the instances the event concerns (a failed wave's).
	Instances []string
}

// Event reasons.
const (
	ReasonRolloutStarted   = "RolloutStarted"
	ReasonWaveStarted      = "WaveStarted"
	ReasonWavePromoted     = "WavePromoted"
	ReasonWaveFailed       = "WaveFailed"
	ReasonWaveRolledBack   = "WaveRolledBack"
	ReasonWaveHalted       = "WaveHalted"
	ReasonRolloutSucceeded = "RolloutSucceeded"
)

// maxFailed bounds status.failedVersions: the oldest go first.
const maxFailed = 64

// Input is one step's view of the world.
type Input struct {
	Spec *v1alpha1.RolloutPolicySpec
	// Latest is the highest patch of the series the registry publishes,
	// "" when it could not be read (nothing starts); LatestDigest its
	// digest.
	Latest, LatestDigest string
	// Instances are the instances the policy covers (updatePolicy Patch,
	// following the series), in any order.
	Instances []Instance
	// Observed is keyed by Instance.Key.
	Observed map[string]Observed
	Now      time.Time
}

// Output is what a step made of the status.
type Output struct {
	Events []Event
	// RequeueAfter is when the step wants to look again without a change
	// (a soak time or a deadline ending); 0 for no such time.
	RequeueAfter time.Duration
	// Moved names the instances whose target changed: they must be
	// reconciled.
	Moved []string
}

// Step moves the roll-out of st (changed in place) one step on from in.
// It is deterministic: the same status and input give the same result,
// so a restarted controller resumes where the last one left off.
func Step(st *v1alpha1.RolloutPolicyStatus, in Input) (Output, error) {
	out, err := step(st, in)
	st.WaveStates = States(st)
	return out, err
}

// States is the waves' states in order, comma-separated.
func States(st *v1alpha1.RolloutPolicyStatus) string {
	parts := make([]string, len(st.Waves))
	for i, w := range st.Waves {
		parts[i] = string(w.State)
	}
	return strings.Join(parts, ",")
}

func step(st *v1alpha1.RolloutPolicyStatus, in Input) (Output, error) {
	var out Output
	if st.Version == "" {
		// A new policy: the patch the registry has now is the fleet's; the
		// next one rolls out in waves.
		if in.Latest != "" {
			st.Version, st.VersionDigest = in.Latest, in.LatestDigest
		}
		return out, nil
	}
	if !InProgress(st) {
		if in.Latest == "" || semver.Compare(in.Latest, st.Version) <= 0 || slices.Contains(st.FailedVersions, in.Latest) {
			return out, nil
		}
		if err := start(st, in, &out); err != nil {
			return out, err
		}
	}
	assign, err := Assign(in.Spec.Waves, in.Instances)
	if err != nil {
		return out, err
	}
	place(st, in, assign, &out)
	for i := range st.Waves {
		w := &st.Waves[i]
		if w.State == v1alpha1.WavePromoted {
			continue
		}
		spec := waveSpec(in.Spec, w.Name)
		if w.State == v1alpha1.WavePending {
			if in.Spec.Paused {
				return out, nil
			}
			w.State, w.StartedAt, w.ReadyAt = v1alpha1.WaveProgressing, ptrTime(in.Now), nil
			out.Moved = append(out.Moved, w.Instances...)
			out.Events = append(out.Events, Event{Reason: ReasonWaveStarted, Wave: w.Name, Instances: w.Instances,
				Message: fmt.Sprintf("wave %s: %d instances take %s", w.Name, len(w.Instances), st.Version)})
		}
		if len(w.Instances) == 0 {
			// Nothing to wait for, nothing to soak.
			w.State = v1alpha1.WavePromoted
			continue
		}
		var unready, failed []string
		var why string
		for _, k := range w.Instances {
			o := in.Observed[k]
			switch {
			case o.Version == st.Version && o.Failed:
				failed = append(failed, k)
				if why == "" {
					why = o.Message
				}
			case o.Version != st.Version || !o.Ready:
				unready = append(unready, k)
			}
		}
		if len(failed) > 0 {
			fail(st, in.Spec, i, fmt.Sprintf("%s failed on %s: %s", names(failed), st.Version, why), failed, &out)
			return out, nil
		}
		if len(unready) > 0 {
			if spec.Deadline.Duration > 0 && w.StartedAt != nil {
				end := w.StartedAt.Add(spec.Deadline.Duration)
				if !in.Now.Before(end) {
					fail(st, in.Spec, i, fmt.Sprintf("%s not Ready on %s within the deadline %v", names(unready), st.Version, spec.Deadline.Duration), unready, &out)
					return out, nil
				}
				out.RequeueAfter = end.Sub(in.Now)
			}
			w.State, w.ReadyAt = v1alpha1.WaveProgressing, nil
			return out, nil
		}
		if w.ReadyAt == nil {
			w.State, w.ReadyAt = v1alpha1.WaveSoaking, ptrTime(in.Now)
		}
		if end := w.ReadyAt.Add(spec.SoakTime.Duration); in.Now.Before(end) {
			w.State = v1alpha1.WaveSoaking
			out.RequeueAfter = end.Sub(in.Now)
			return out, nil
		}
		if in.Spec.Paused {
			w.State = v1alpha1.WaveSoaking
			return out, nil
		}
		w.State, w.Message = v1alpha1.WavePromoted, ""
		out.Events = append(out.Events, Event{Reason: ReasonWavePromoted, Wave: w.Name,
			Message: fmt.Sprintf("wave %s: %d instances Ready on %s for %v", w.Name, len(w.Instances), st.Version, spec.SoakTime.Duration)})
	}
	out.Events = append(out.Events, Event{Reason: ReasonRolloutSucceeded,
		Message: fmt.Sprintf("%s rolled out to every wave", st.Version)})
	return out, nil
}

// start begins the roll-out of in.Latest: every wave Pending with the
// instances Assign gives it.
func start(st *v1alpha1.RolloutPolicyStatus, in Input, out *Output) error {
	prev, prevDigest := st.Previous, st.PreviousDigest
	if !Failed(st) {
		// Done (or the policy's first patch): what the fleet runs.
		prev, prevDigest = st.Version, st.VersionDigest
	}
	st.Previous, st.PreviousDigest, st.Version, st.VersionDigest, st.Aborted = prev, prevDigest, in.Latest, in.LatestDigest, false
	st.Waves = make([]v1alpha1.WaveStatus, len(in.Spec.Waves))
	for i, w := range in.Spec.Waves {
		st.Waves[i] = v1alpha1.WaveStatus{Name: w.Name, State: v1alpha1.WavePending}
	}
	out.Events = append(out.Events, Event{Reason: ReasonRolloutStarted,
		Message: fmt.Sprintf("%s rolls out in %d waves over %d instances (from %s)", in.Latest, len(in.Spec.Waves), len(in.Instances), prev)})
	return nil
}

// place keeps the waves' lists to the instances covered: a gone instance
// leaves its wave; one no wave lists joins the wave Assign gives it, or the
// wave under way when that one went already, and is moved with it.
func place(st *v1alpha1.RolloutPolicyStatus, in Input, assign []int, out *Output) {
	covered := make(map[string]bool, len(in.Instances))
	for _, i := range in.Instances {
		covered[i.Key()] = true
	}
	listed := map[string]bool{}
	for i := range st.Waves {
		w := &st.Waves[i]
		w.Instances = slices.DeleteFunc(w.Instances, func(k string) bool { return !covered[k] })
		for _, k := range w.Instances {
			listed[k] = true
		}
	}
	current := len(st.Waves) - 1
	for i, w := range st.Waves {
		if w.State != v1alpha1.WavePromoted {
			current = i
			break
		}
	}
	for n, inst := range in.Instances {
		k := inst.Key()
		if listed[k] {
			continue
		}
		i := min(assign[n], len(st.Waves)-1)
		if i < current {
			i = current
		}
		w := &st.Waves[i]
		w.Instances = append(w.Instances, k)
		if w.State != v1alpha1.WavePending {
			out.Moved = append(out.Moved, k)
		}
	}
	for i := range st.Waves {
		slices.Sort(st.Waves[i].Instances)
	}
}

// fail ends the roll-out at wave i: Rollback moves its instances back to
// the patch before (RolledBack), Halt leaves them (Failed); later waves
// never go (Halted). The patch is failed for the policy.
func fail(st *v1alpha1.RolloutPolicyStatus, spec *v1alpha1.RolloutPolicySpec, i int, msg string, culprits []string, out *Output) {
	w := &st.Waves[i]
	w.Message = truncate(msg, 1024)
	out.Events = append(out.Events, Event{Warning: true, Reason: ReasonWaveFailed, Wave: w.Name, Message: "wave " + w.Name + ": " + w.Message, Instances: culprits})
	if spec.FailurePolicy == v1alpha1.FailureHalt {
		w.State = v1alpha1.WaveFailed
		out.Events = append(out.Events, Event{Warning: true, Reason: ReasonWaveHalted, Wave: w.Name,
			Message: fmt.Sprintf("wave %s: halted; its %d instances stay on %s, no further wave takes it", w.Name, len(w.Instances), st.Version)})
	} else {
		w.State = v1alpha1.WaveRolledBack
		out.Moved = append(out.Moved, w.Instances...)
		out.Events = append(out.Events, Event{Warning: true, Reason: ReasonWaveRolledBack, Wave: w.Name, Instances: w.Instances,
			Message: fmt.Sprintf("wave %s: %d instances go back to %s", w.Name, len(w.Instances), st.Previous)})
	}
	for j := i + 1; j < len(st.Waves); j++ {
		st.Waves[j].State = v1alpha1.WaveHalted
	}
	markFailed(st, st.Version)
}

// Abort ends the roll-out in progress: every wave that went is RolledBack
// (its instances go back to the patch before), the others Halted, and the
// patch is failed for the policy. It returns the instances moved back;
// nothing when no roll-out is in progress.
func Abort(st *v1alpha1.RolloutPolicyStatus) ([]string, error) {
	if !InProgress(st) {
		return nil, fmt.Errorf("no roll-out in progress (version %s): nothing to abort", orNone(st.Version))
	}
	var moved []string
	for i := range st.Waves {
		w := &st.Waves[i]
		if w.State == v1alpha1.WavePending {
			w.State = v1alpha1.WaveHalted
			continue
		}
		w.State, w.Message = v1alpha1.WaveRolledBack, "aborted"
		moved = append(moved, w.Instances...)
	}
	st.Aborted = true
	markFailed(st, st.Version)
	st.WaveStates = States(st)
	return moved, nil
}

func markFailed(st *v1alpha1.RolloutPolicyStatus, v string) {
	if !slices.Contains(st.FailedVersions, v) {
		st.FailedVersions = append(st.FailedVersions, v)
	}
	if n := len(st.FailedVersions); n > maxFailed {
		st.FailedVersions = slices.Delete(st.FailedVersions, 0, n-maxFailed)
	}
}

func waveSpec(spec *v1alpha1.RolloutPolicySpec, name string) v1alpha1.Wave {
	for _, w := range spec.Waves {
		if w.Name == name {
			return w
		}
	}
	return v1alpha1.Wave{Name: name}
}

// names lists a few instances: "a/x, a/y and 3 more".
func names(keys []string) string {
	const shown = 3
	if len(keys) <= shown {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:shown], ", "), len(keys)-shown)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ptrTime is t as the status keeps it: whole seconds (what metav1.Time
// serializes), rounded up, so that a soak time read back from the status
// is never shorter than the one waited.
func ptrTime(t time.Time) *metav1.Time {
	r := t.Truncate(time.Second)
	if r.Before(t) {
		r = r.Add(time.Second)
	}
	mt := metav1.NewTime(r)
	return &mt
}
