package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/index"
)

// quotaFiles are a registry of n templates of one file of size bytes:
// its index costs n*(index.EntryBytes+size).
func quotaFiles(n, size int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("t%02d/v1.0.0/t%02d.jinja", i, i)] = strings.Repeat("#", size-1) + "\n"
	}
	return files
}

// TestTenantQuotas: a tenant cannot make registryd hold more than its
// namespace's share, nor all tenants more than the daemon's: with the
// built registryd on the test apiserver, under its template's rights,
// the newest Registry over --max-namespace-registries, over
// --max-namespace-bytes or over --max-index-bytes is not indexed and its
// Ready condition names the bound and the flag; when an older one is
// deleted it is indexed; a deleted Registry leaves no metrics series and
// no cache directory; a ClusterRegistry is exempt from the namespace's
// bounds but not from the daemon's.
func TestTenantQuotas(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	small, big := quotaFiles(2, 8000), quotaFiles(32, 1000)
	costSmall, costBig := int64(2*(index.EntryBytes+8000)), int64(32*(index.EntryBytes+1000))
	// The bounds: a namespace holds a big registry but not a small one
	// more; the daemon a big one and three small ones.
	nsBytes, allBytes := int64(96<<10), int64(140<<10)
	if costBig > nsBytes || costBig+costSmall <= nsBytes || costBig+3*costSmall > allBytes || costBig+4*costSmall <= allBytes {
		t.Fatalf("the test's sizes do not fit its bounds: small %d, big %d", costSmall, costBig)
	}
	repos := map[string]string{}
	for _, name := range []string{"r1", "r2", "r3", "b2", "c1"} {
		repos["acme/"+name] = githubtest.NewRepoFS(t, mapFS(t, small))
	}
	for _, name := range []string{"b1", "platform"} {
		repos["acme/"+name] = githubtest.NewRepoFS(t, mapFS(t, big))
	}
	gh := githubtest.New(repos)
	defer gh.Close()
	cache := t.TempDir()
	r := startReplica(t, replicaArgs(t, registrydAccount(t, env.Kubeconfig, c, system), gh.URL, "--cache-dir", cache,
		"--max-namespace-registries", "2", "--max-namespace-bytes", "96KiB", "--max-index-bytes", "140KiB")...)
	r.token = env.AdminToken // /metrics is guarded
	teamA, teamB, teamC := env.Namespace(t), env.Namespace(t), env.Namespace(t)

	registry := func(ns, name string) client.Object {
		spec := v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: name, Branch: "main"}}
		if ns == "" {
			return &v1alpha1.ClusterRegistry{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		}
		return &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	create := func(objs ...client.Object) {
		for _, o := range objs {
			must(t, c.Create(ctx, o))
			// Creation times have seconds: one a second keeps the order
			// the test means (ties go by namespace and name).
			time.Sleep(time.Second)
		}
	}
	ready := func(o client.Object) *metav1.Condition {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return nil
		}
		switch o := o.(type) {
		case *v1alpha1.Registry:
			return apimeta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		case *v1alpha1.ClusterRegistry:
			return apimeta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		}
		return nil
	}
	waitReady := func(o client.Object, reason, msg string) {
		t.Helper()
		var last *metav1.Condition
		waitForf(t, 90*time.Second, func() string {
			return fmt.Sprintf("%s Ready %s %q (last %+v)", client.ObjectKeyFromObject(o), reason, msg, last)
		}, func() bool {
			last = ready(o)
			return last != nil && last.Reason == reason && strings.Contains(last.Message, msg)
		})
	}
	served := func(ns, name string) bool {
		resp, err := r.getAs("/v1/registries/github.com/acme/"+name, env.AdminToken, ns)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	series := func(key string) int {
		resp, err := r.get("/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Count(string(b), `registry="`+key+`"`)
	}

	// Count: team-a's third Registry is not indexed.
	r1, r2, r3 := registry(teamA, "r1"), registry(teamA, "r2"), registry(teamA, "r3")
	create(r1, r2, r3)
	waitReady(r1, "Indexed", "")
	waitReady(r2, "Indexed", "")
	waitReady(r3, "NamespaceQuotaExceeded", "--max-namespace-registries")
	if served(teamA, "r3") {
		t.Error("a Registry over its namespace's count is served")
	}
	// Another namespace is not held back.
	b1 := registry(teamB, "b1")
	create(b1)
	waitReady(b1, "Indexed", "")
	// Room frees up: r3 is indexed, and r1 leaves nothing behind.
	keyR1 := teamA + "/github.com/acme/r1"
	if series(keyR1) == 0 {
		t.Fatalf("no series of %s before its deletion", keyR1)
	}
	dirs := func() int {
		m, _ := filepath.Glob(filepath.Join(cache, "registries", "*"))
		return len(m)
	}
	before := dirs()
	must(t, c.Delete(ctx, r1))
	waitReady(r3, "Indexed", "")
	waitForf(t, 30*time.Second, func() string { return fmt.Sprintf("%d series of the deleted %s", series(keyR1), keyR1) }, func() bool { return series(keyR1) == 0 })
	// r1's directory went, r3's came.
	waitForf(t, 30*time.Second, func() string { return fmt.Sprintf("%d cache directories, want %d", dirs(), before) }, func() bool { return dirs() == before })

	// Bytes: team-b's big registry leaves no room for a small one more.
	b2 := registry(teamB, "b2")
	create(b2)
	waitReady(b2, "NamespaceQuotaExceeded", "--max-namespace-bytes")
	if served(teamB, "b2") {
		t.Error("a Registry over its namespace's bytes is served")
	}
	must(t, c.Delete(ctx, b1))
	waitReady(b2, "Indexed", "")

	// The daemon: a ClusterRegistry is not bound by a namespace's bounds,
	// and comes first for the daemon's; past it, the newest Registry of
	// any namespace is not indexed.
	platform := registry("", "platform")
	create(platform)
	waitReady(platform, "Indexed", "")
	c1 := registry(teamC, "c1")
	create(c1)
	waitReady(c1, "DaemonQuotaExceeded", "--max-index-bytes")
	for _, o := range []client.Object{r2, r3, b2} {
		if got := ready(o); got == nil || got.Reason != "Indexed" {
			t.Errorf("%s: %+v, want Indexed: only the newest goes", client.ObjectKeyFromObject(o), got)
		}
	}
	must(t, c.Delete(ctx, platform))
	waitReady(c1, "Indexed", "")
}
