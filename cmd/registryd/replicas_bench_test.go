package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// apiRequests sums the apiserver's apiserver_request_total for the
// resources registryd uses (registries, clusterregistries, configmaps,
// secrets, leases), as its /metrics reports them.
func apiRequests(t testing.TB, env *kubetest.Env) float64 {
	t.Helper()
	code, b, err := env.Do(context.Background(), env.AdminToken, "GET", "/metrics", nil)
	if err != nil || code != 200 {
		t.Fatalf("apiserver /metrics: %d %v", code, err)
	}
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		for _, res := range []string{"registries", "clusterregistries", "configmaps", "secrets", "leases"} {
			if strings.Contains(line, `resource="`+res+`"`) {
				var v float64
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
				total += v
			}
		}
	}
	return total
}

// BenchmarkReplicas measures issue 16's replica numbers with three
// registryd processes, the test apiserver and the GitHub test server
// (make bench-replicas): push-to-served-by-all p95 over 20 pushes, GitHub
// requests per push across the replicas, example tests per new version,
// and the idle apiserver requests per replica per minute (from the
// apiserver's apiserver_request_total, less a minute of the apiserver's
// own lease traffic measured before the replicas start).
func BenchmarkReplicas(b *testing.B) {
	env, c := startCluster(b)
	const hookSecret = "hook-secret-bench"
	// The apiserver's own traffic on these resources (its identity
	// Lease), one minute of it.
	minute := time.Minute
	if d, err := time.ParseDuration(os.Getenv("DM_BENCH_IDLE")); err == nil {
		minute = d
	}
	base0 := apiRequests(b, env)
	time.Sleep(minute)
	baseline := (apiRequests(b, env) - base0) * float64(time.Minute) / float64(minute)

	repo := githubtest.NewRepoFS(b, mapFS(b, fixture))
	gh := githubtest.New(map[string]string{"acme/tpl": repo})
	defer gh.Close()
	rs := startReplicas(b, registrydAccount(b, env.Kubeconfig, c, system), gh.URL, "--example-settle", "20s", "--webhook-secret", hookSecret)
	for _, r := range rs {
		r.token = env.AdminToken // /metrics is guarded
	}
	createClusterRegistry(b, c)
	waitTested(b, rs, 5, 3*time.Minute)
	runs := func() (n float64) {
		for _, r := range rs {
			n += r.metric(examplesRun)
		}
		return n
	}
	before := runs()

	pushes := 20
	if n, err := strconv.Atoi(os.Getenv("DM_BENCH_PUSHES")); err == nil && n > 0 {
		pushes = n // shorter runs while working on it
	}
	var lat []time.Duration
	ghRequests := 0
	byKind := map[string]int{}
	for i := range pushes {
		v := fmt.Sprintf("v1.0.%d", 100+i)
		// Distinct content: results are kept by content digest, and two
		// identical version directories share one.
		head := githubtest.Commit(b, repo, map[string]string{"redis/" + v + "/redis.jinja": "kind: " + v + "\n", "redis/" + v + "/example.yaml": "resources: []\n"})
		gh.ResetCounts()
		start := time.Now()
		if code, body := rs[i%3].push(b, hookSecret, head); code != 202 {
			b.Fatalf("push %d: %d %s", i, code, body)
		}
		want := "github.com/acme/tpl/redis:" + v
		for _, r := range rs {
			waitFor(b, 30*time.Second, "all replicas to serve "+v, func() bool { return r.resolved("github.com/acme/tpl/redis:v1.0") == want })
		}
		lat = append(lat, time.Since(start))
		// Late requests of the push (a replica's second refresh) count too.
		time.Sleep(time.Second)
		ghRequests += gh.Requests()
		for _, k := range []string{"repo", "commit", "tree", "blob", "other"} {
			byKind[k] += gh.RequestsTo(k)
		}
	}
	slices.Sort(lat)
	p95 := lat[(len(lat)*95+99)/100-1]
	waitTested(b, rs, 5+float64(pushes), 3*time.Minute)
	perVersion := (runs() - before) / float64(pushes)

	idle0 := apiRequests(b, env)
	time.Sleep(minute)
	idle := ((apiRequests(b, env)-idle0)*float64(time.Minute)/float64(minute) - baseline) / 3

	b.ReportMetric(float64(p95.Milliseconds()), "push-p95-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "push-p50-ms")
	b.ReportMetric(float64(ghRequests)/float64(pushes), "github-requests/push")
	b.ReportMetric(perVersion, "example-tests/version")
	b.ReportMetric(idle, "idle-apiserver-requests/replica/min")
	b.Logf("GitHub requests over %d pushes by kind: %v (304 answers: counted in these)", pushes, byKind)
	b.Logf("push to one of 3 replicas -> served by all: p50 %s, p95 %s over %d pushes; GitHub requests per push %.1f; example tests per new version %.2f; idle apiserver requests per replica per minute %.1f (apiserver's own baseline %.0f/min subtracted)",
		lat[len(lat)/2].Round(time.Millisecond), p95.Round(time.Millisecond), pushes, float64(ghRequests)/float64(pushes), perVersion, idle, baseline)
}
