package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// writesByResource sums the apiserver's apiserver_request_total of writes
// (POST, PUT, PATCH, APPLY, DELETE) by resource (subresource after a
// slash: templateinstances/status).
func (s *scale) writesByResource() map[string]int {
	s.t.Helper()
	code, body, err := s.env.Do(context.Background(), s.env.AdminToken, "GET", "/metrics", nil)
	if err != nil || code != 200 {
		s.t.Fatalf("apiserver /metrics: %d %v", code, err)
	}
	out := map[string]int{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, _ := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		l := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE":
		default:
			continue
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		var n float64
		fmt.Sscanf(value, "%g", &n)
		out[res] += int(n)
	}
	return out
}

// diff is after - before, without the zeros.
func diff(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func perInstance(m map[string]int, n int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(m[k])/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// BenchmarkRollout measures the controller's cost of a patch rolled out
// to DM_BENCH_INSTANCES (default 1,000) instances in three waves (5%,
// 25%, the rest) against the test apiserver, with the dm-controller
// binary (make bench-rollout): the apiserver writes per instance, by
// resource, of a patch that no policy governs (the reference: one
// revision and its status) and of the same fleet's next patch through the
// policy's waves, and how long each took.
func BenchmarkRollout(b *testing.B) {
	total := 1000
	if v := os.Getenv("DM_BENCH_INSTANCES"); v != "" {
		fmt.Sscanf(v, "%d", &total)
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "bench-rollout: "+format+"\n", args...)
	}
	for range b.N {
		f := newFleet(b, kubetest.Start(b))
		f.writeWave("1.0.0", false)
		f.run()
		for i := range total {
			f.instance(f.nss[i%3], fmt.Sprintf("app-%04d", i), "wave:v1.0", nil, "")
		}
		readyOn := func(v string) func() string {
			return func() string {
				n := 0
				for _, ti := range f.instances() {
					if readyAt(ti, v) {
						n++
					}
				}
				if n != total {
					return fmt.Sprintf("%d of %d Ready on %s", n, total, v)
				}
				return ""
			}
		}
		start := time.Now()
		f.until(30*time.Minute, readyOn("v1.0.0"))
		say("%d instances Ready on v1.0.0 in %v", total, time.Since(start).Round(time.Second))

		// The reference: a patch no policy governs.
		time.Sleep(5 * time.Second) // the last status writes land
		before := f.writesByResource()
		start = time.Now()
		f.writeWave("1.0.1", false)
		f.until(30*time.Minute, readyOn("v1.0.1"))
		time.Sleep(5 * time.Second)
		plain := diff(before, f.writesByResource())
		say("ungoverned patch to %d instances in %v; writes per instance: %s", total, time.Since(start).Round(time.Second), perInstance(plain, total))

		// The same fleet through three waves.
		pname := "bench-" + f.ns
		f.create(&v1alpha1.TemplateRolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: pname}, Spec: v1alpha1.RolloutPolicySpec{
			Template: "wave:v1.0",
			Waves: []v1alpha1.Wave{
				{Name: "canary", Percent: pct(5), SoakTime: dur(2 * time.Second)},
				{Name: "early", Percent: pct(25), SoakTime: dur(2 * time.Second)},
				{Name: "rest"},
			},
		}})
		f.until(time.Minute, func() string {
			if p := f.policy(pname); p == nil || p.Status.Version != "v1.0.1" {
				return "the policy found no v1.0.1"
			}
			return ""
		})
		time.Sleep(5 * time.Second)
		before = f.writesByResource()
		start = time.Now()
		f.writeWave("1.0.2", false)
		f.until(30*time.Minute, func() string {
			if p := f.policy(pname); states(p) != "Promoted,Promoted,Promoted" {
				return "waves " + states(p)
			}
			return readyOn("v1.0.2")()
		})
		took := time.Since(start)
		time.Sleep(5 * time.Second)
		waved := diff(before, f.writesByResource())
		say("3-wave roll-out to %d instances in %v (soak 2s twice); writes per instance: %s", total, took.Round(time.Second), perInstance(waved, total))
		// No instance took a version twice.
		for _, k := range []int{0, total / 2, total - 1} {
			ns, name := f.nss[k%3], fmt.Sprintf("app-%04d", k)
			if vs := f.versions(ns, name); !slices.Equal(vs, []string{"v1.0.0", "v1.0.1", "v1.0.2"}) {
				b.Errorf("%s/%s revisions %v, want one per version", ns, name, vs)
			}
		}
		sum := func(m map[string]int) (n int) {
			for _, v := range m {
				n += v
			}
			return n
		}
		b.ReportMetric(float64(sum(plain))/float64(total), "plain-writes/instance")
		b.ReportMetric(float64(sum(waved))/float64(total), "waved-writes/instance")
		b.ReportMetric(took.Seconds(), "waved-rollout-s")
	}
}
