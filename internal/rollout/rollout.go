// Package rollout is the pure logic of a template patch's roll-out in
// waves: which policy governs an instance, which wave each instance is in,
// which version an instance may run, and the step that moves a roll-out
// from what the controller observed. It reads no cluster: dm-controller
// feeds it its cache's view and writes what it returns.
package rollout

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Instance is an instance a policy may cover: a TemplateInstance or an
// object of a TemplateDefinition's kind.
type Instance struct {
	Namespace, Name string
	Labels          map[string]string
}

// Key is the instance's name in a wave's status: NAMESPACE/NAME.
func (i Instance) Key() string { return i.Namespace + "/" + i.Name }

// Series is a template's MAJOR.MINOR, its reference qualified against the
// default registry: host/owner/repo/[collection/]template:vMAJOR.MINOR.
type Series string

// SeriesOf returns the series a reference follows under updatePolicy
// Patch, as dm resolves versions: web:v1.2, web:v1.2.3 (v1.2, patch 3 or
// higher) and web:v1 (v1.0) all follow the patches of one MAJOR.MINOR;
// the series is the reference qualified against def with its version
// vMAJOR.MINOR. ok is false for a reference no policy governs: one pinned
// by digest, a pre-release (exact), one without a version (it follows
// every MAJOR), or one that does not parse. floor is the lowest patch the
// reference allows (v1.2.3), "" when it names none.
func SeriesOf(ref string, def resolve.Registry) (s Series, floor string, ok bool) {
	r, err := resolve.Parse(ref)
	if err != nil || r.Digest != "" || r.Version == "" || strings.ContainsAny(r.Version, "-+") {
		return "", "", false
	}
	sv, ok := index.ParseSemver(r.Version)
	if !ok {
		return "", "", false
	}
	if strings.Count(r.Version, ".") == 2 {
		floor = r.Version
	}
	r.Version = fmt.Sprintf("v%d.%d", sv.Major, sv.Minor)
	q, err := resolve.Qualify(r, def)
	if err != nil {
		return "", "", false
	}
	return Series(q.String()), floor, true
}

// PolicySeries returns the series of a policy's spec.template, which must
// be a reference with a vMAJOR.MINOR version and no digest.
func PolicySeries(template string, def resolve.Registry) (Series, error) {
	r, err := resolve.Parse(template)
	if err != nil {
		return "", fmt.Errorf("spec.template: %w", err)
	}
	if r.Digest != "" || !minorOnly(r.Version) {
		return "", fmt.Errorf("spec.template %q: want a reference whose version is vMAJOR.MINOR (such as web:v1.2), without a patch or a digest", template)
	}
	q, err := resolve.Qualify(r, def)
	if err != nil {
		return "", fmt.Errorf("spec.template: %w", err)
	}
	return Series(q.String()), nil
}

// minorOnly reports whether v is vMAJOR.MINOR, no patch, no pre-release.
func minorOnly(v string) bool {
	if !strings.HasPrefix(v, "v") || strings.ContainsAny(v, "-+") {
		return false
	}
	return strings.Count(v, ".") == 1
}

// InSeries reports whether version (v1.2.5) is a patch of s.
func (s Series) InSeries(version string) bool {
	_, minor, ok := strings.Cut(string(s), ":")
	return ok && strings.HasPrefix(version, minor+".") && !strings.ContainsAny(version, "-+")
}

// Policy names a policy for Governing: Namespace is "" for a
// TemplateRolloutPolicy.
type Policy struct {
	Namespace, Name string
	Series          Series
}

// Governing returns the index in policies of the policy that governs an
// instance of namespace ns following series s, -1 for none: its
// namespace's RolloutPolicy for the series first, else a
// TemplateRolloutPolicy. Of two of the same scope, the lower name wins, so
// that every controller picks the same.
func Governing(ns string, s Series, policies []Policy) int {
	best := -1
	for i, p := range policies {
		if p.Series != s || (p.Namespace != "" && p.Namespace != ns) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := policies[best]
		switch {
		case p.Namespace != "" && b.Namespace == "":
			best = i
		case (p.Namespace == "") == (b.Namespace == "") && p.Name < b.Name:
			best = i
		}
	}
	return best
}

// hash is the stable rank of an instance: the first 8 bytes of the
// SHA-256 of NAMESPACE/NAME, the same in every process and release.
func hash(key string) uint64 {
	sum := sha256.Sum256([]byte(key))
	return binary.BigEndian.Uint64(sum[:8])
}

// Assign returns the wave index of each instance, in the order given.
// Waves take instances in order: a wave takes those of the instances no
// earlier wave took that its selector selects (every one without a
// selector); with a percent, only the first ceil(percent × N / 100) of
// them (N: all the instances given) in the order of a stable hash of
// NAMESPACE/NAME, so that the same set is always split the same way. An
// instance no wave takes is in the last wave: a policy never leaves an
// instance without a wave, and the last wave is the rest of the fleet.
func Assign(waves []v1alpha1.Wave, instances []Instance) ([]int, error) {
	out := make([]int, len(instances))
	if len(waves) == 0 {
		return out, nil
	}
	order := make([]int, len(instances))
	for i := range order {
		order[i] = i
	}
	keys := make([]string, len(instances))
	ranks := make([]uint64, len(instances))
	for i, in := range instances {
		keys[i], ranks[i] = in.Key(), hash(in.Key())
	}
	slices.SortFunc(order, func(a, b int) int {
		if ranks[a] != ranks[b] {
			if ranks[a] < ranks[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(keys[a], keys[b])
	})
	taken := make([]bool, len(instances))
	for w, wave := range waves {
		var sel labels.Selector
		if wave.Selector != nil {
			s, err := metav1.LabelSelectorAsSelector(wave.Selector)
			if err != nil {
				return nil, fmt.Errorf("spec.waves[%d] (%s).selector: %w", w, wave.Name, err)
			}
			sel = s
		}
		limit := len(instances)
		if wave.Percent != nil {
			p := int(*wave.Percent)
			if p < 0 || p > 100 {
				return nil, fmt.Errorf("spec.waves[%d] (%s).percent %d: want 0 to 100", w, wave.Name, p)
			}
			limit = (p*len(instances) + 99) / 100
		}
		n := 0
		for _, i := range order {
			if n >= limit {
				break
			}
			if taken[i] || (sel != nil && !sel.Matches(labels.Set(instances[i].Labels))) {
				continue
			}
			taken[i], out[i] = true, w
			n++
		}
	}
	for i := range taken {
		if !taken[i] {
			out[i] = len(waves) - 1
		}
	}
	return out, nil
}

// Target is what a policy's status lets one instance run.
type Target struct {
	// Version is the patch the instance may run (v1.2.4); "" when the
	// policy has no roll-out state yet: the instance keeps what it runs.
	Version string
	// Digest is Version's digest, "" when the status has none.
	Digest string
	// Held is true when the instance is kept from status.version by a
	// wave that has not reached it (or has been rolled back).
	Held bool
	// Wave names the instance's wave, "" when no wave lists it.
	Wave string
}

// TargetOf returns the version the instance named key (NAMESPACE/NAME)
// may run under a policy's status.
func TargetOf(st *v1alpha1.RolloutPolicyStatus, key string) Target {
	if st.Version == "" {
		return Target{}
	}
	if st.Previous == "" {
		// No roll-out yet: the patch the policy found is the fleet's.
		return Target{Version: st.Version, Digest: st.VersionDigest}
	}
	for _, w := range st.Waves {
		if !slices.Contains(w.Instances, key) {
			continue
		}
		switch w.State {
		case v1alpha1.WaveProgressing, v1alpha1.WaveSoaking, v1alpha1.WavePromoted, v1alpha1.WaveFailed:
			return Target{Version: st.Version, Digest: st.VersionDigest, Wave: w.Name}
		}
		return Target{Version: st.Previous, Digest: st.PreviousDigest, Held: true, Wave: w.Name}
	}
	if Done(st) {
		return Target{Version: st.Version, Digest: st.VersionDigest}
	}
	// Not yet placed in a wave (new to the policy): the patch before,
	// until the controller places it.
	return Target{Version: st.Previous, Digest: st.PreviousDigest, Held: true}
}

// Done reports whether every wave of the roll-out was promoted.
func Done(st *v1alpha1.RolloutPolicyStatus) bool {
	for _, w := range st.Waves {
		if w.State != v1alpha1.WavePromoted {
			return false
		}
	}
	return true
}

// Failed reports whether the roll-out failed or was aborted.
func Failed(st *v1alpha1.RolloutPolicyStatus) bool {
	if st.Aborted {
		return true
	}
	for _, w := range st.Waves {
		switch w.State {
		case v1alpha1.WaveFailed, v1alpha1.WaveRolledBack:
			return true
		}
	}
	return false
}

// InProgress reports whether a roll-out is under way: started, neither
// done nor failed.
func InProgress(st *v1alpha1.RolloutPolicyStatus) bool {
	return st.Previous != "" && !Done(st) && !Failed(st)
}

// WaveOf names the wave of the instance named key (NAMESPACE/NAME) under
// a policy: the wave its status lists it in, else the wave Assign gives
// it among instances (every instance the policy covers, key's included):
// the wave the next patch would reach it in. "" when instances does not
// hold key.
func WaveOf(spec *v1alpha1.RolloutPolicySpec, st *v1alpha1.RolloutPolicyStatus, instances []Instance, key string) (string, error) {
	if InProgress(st) {
		for _, w := range st.Waves {
			if slices.Contains(w.Instances, key) {
				return w.Name, nil
			}
		}
	}
	i := slices.IndexFunc(instances, func(in Instance) bool { return in.Key() == key })
	if i < 0 || len(spec.Waves) == 0 {
		return "", nil
	}
	assign, err := Assign(spec.Waves, instances)
	if err != nil {
		return "", err
	}
	return spec.Waves[assign[i]].Name, nil
}
