package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// BenchmarkTokenFlood measures a legitimate first read under a flood of
// made-up bearer tokens (make bench-auth): one registryd under its
// template's rights against the test apiserver serves team-a's Registry;
// 64 attacker connections send made-up tokens naming team-a as fast as
// registryd answers them (half JWTs of the apiserver's issuer and
// audience, which only a review can refuse, half opaque), from one
// address, then from 64; meanwhile team-a's admin reads a file with a
// token registryd has never seen (a new TokenRequest each, FIRST_READS of
// them, default 20), each from an address of its own. Target: every first read under
// 1 s. Reported: the first reads' median and worst, the flood's requests
// and the reviews it caused a second.
func BenchmarkTokenFlood(b *testing.B) {
	env, c := startCluster(b)
	ctx := context.Background()
	teamA := env.Namespace(b)
	tenantAdmin(b, env, c, teamA)
	gh := githubtest.New(map[string]string{"acme/tpl": githubtest.NewRepoFS(b, mapFS(b, map[string]string{"cm/v1.0.0/cm.jinja": "resources: []\n"}))})
	defer gh.Close()
	r := startReplica(b, replicaArgs(b, registrydAccount(b, env.Kubeconfig, c, system), gh.URL, "--token-audience", saIssuer)...)
	r.token = env.AdminToken
	reg := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "tpl"},
		Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: "tpl", Branch: "main"}}}
	must(b, c.Create(ctx, reg))
	waitFor(b, 90*time.Second, "the Registry to be Ready", func() bool {
		got := &v1alpha1.Registry{}
		return c.Get(ctx, client.ObjectKeyFromObject(reg), got) == nil && apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)
	})
	file := "/v1/file?ref=" + url.QueryEscape("github.com/acme/tpl/cm:v1") + "&path=cm.jinja"
	reads := 20
	if v, err := strconv.Atoi(os.Getenv("FIRST_READS")); err == nil && v > 0 {
		reads = v
	}
	for _, mode := range []struct {
		name      string
		addresses int
	}{{"one-address", 1}, {"64-addresses", 64}} {
		reviews0 := r.unknownReviews()
		start := time.Now()
		flood := startFlood(r.url, file, teamA, 64, func(conn int) string { return fmt.Sprintf("127.0.3.%d", 1+conn%mode.addresses) }, mode.name)
		time.Sleep(2 * time.Second) // the flood in full swing
		var lat []time.Duration
		failed := 0
		for i := range reads {
			// A user's first read: a token never seen, from an address
			// of its own (one user does not send 20 new tokens at once).
			user := clientFrom(fmt.Sprintf("127.0.4.%d", 1+i), 30*time.Second)
			tok := accountToken(b, env, teamA, "admin")
			t0 := time.Now()
			code, _, _ := getFrom(user, r.url, file, tok, teamA)
			lat = append(lat, time.Since(t0))
			if code != 200 {
				failed++
			}
		}
		flood.end()
		sent, throttled := flood.sent.Load(), flood.throttled.Load()
		elapsed := time.Since(start).Seconds()
		slices.Sort(lat)
		p50, worst := lat[len(lat)/2], lat[len(lat)-1]
		b.ReportMetric(float64(p50.Microseconds())/1000, mode.name+"-first-read-p50-ms")
		b.ReportMetric(float64(worst.Microseconds())/1000, mode.name+"-first-read-max-ms")
		caused := (r.unknownReviews() - reviews0 - float64(reads)) / elapsed
		b.ReportMetric(float64(sent)/elapsed, mode.name+"-flood-req/s")
		b.ReportMetric(caused, mode.name+"-flood-reviews/s")
		b.Logf("%s: %d first reads under a flood of %d requests (%.0f a second, %d answered 429, %.1f reviews a second): median %s, worst %s, %d not answered 200 (target: every one under 1 s)",
			mode.name, reads, sent, float64(sent)/elapsed, throttled, caused,
			p50.Round(time.Millisecond), worst.Round(time.Millisecond), failed)
		if failed > 0 {
			b.Errorf("%s: %d of %d first reads were not answered 200", mode.name, failed, reads)
		}
	}
}
