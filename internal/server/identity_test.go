package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"weak"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// tenantAuthorizer lets token "a" get Registry team-a/x, token "b" get
// team-b/x, and token "metrics" get /metrics.
type tenantAuthorizer struct{}

func (tenantAuthorizer) Authenticate(_ context.Context, c Caller) error {
	switch c.Token {
	case "a", "b", "metrics":
		return nil
	}
	return ErrUnauthenticated
}

func (tenantAuthorizer) AllowedRegistry(_ context.Context, c Caller, ns, name string) bool {
	return name == "x" && (c.Token == "a" && ns == "team-a" || c.Token == "b" && ns == "team-b")
}

func (tenantAuthorizer) AllowedPath(_ context.Context, c Caller, path string) bool {
	return c.Token == "metrics" && path == "/metrics"
}

// tenantFiles are the files of namespace ns's registry: a template cm
// whose ConfigMap holds the tenant's text, one template of its own, and
// an example that expands (team-a) or does not (team-b).
func tenantFiles(tenant string) fstest.MapFS {
	example := "resources:\n- name: x\n  type: cm:v1\n"
	if tenant == "b" {
		example = "resources:\n- name: x\n  type: missing:v1\n"
	}
	return fstest.MapFS{
		"cm/v1.0.0/cm.jinja":                                 {Data: []byte("resources:\n- name: cm\n  type: ConfigMap\n  properties: {data: {text: tenant-" + tenant + "-text}}\n")},
		"cm/v1.0.0/example.yaml":                             {Data: []byte(example)},
		"only" + tenant + "/v1.0.0/only" + tenant + ".jinja": {Data: []byte("resources: []\n")},
	}
}

// TestSamePrefixTwoNamespaces: two namespaces' Registries of one name
// serving one prefix (team-a/x and team-b/x, both github.com/acme/
// templates) keep apart everything kept per registry: resolutions, files,
// expansions, search, catalog pages, example results, index changes,
// metrics series. Neither's state shows in or overwrites the other's, and
// when team-a's goes, nothing of it stays (no reference to its registry
// or its snapshot), while team-b's is untouched.
func TestSamePrefixTwoNamespaces(t *testing.T) {
	ctx := context.Background()
	const prefix = "github.com/acme/templates"
	open := func(ns, tenant string) *index.Registry {
		g := &index.Registry{Name: prefix, Namespace: ns, Object: "x", Identity: "identity-" + tenant, Kind: api.KindLocal,
			Source: fetch.NewLocal(tenantFiles(tenant))}
		if err := g.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga, gb := open("team-a", "a"), open("team-b", "b")
	resolver := resolve.New(resolve.Registry{}, ga, gb)
	metrics := NewMetrics()
	for _, g := range []*index.Registry{ga, gb} {
		metrics.ObserveIndex(g.Key(), "ok", time.Millisecond)
		metrics.CacheLookupFunc(g.Key())("memory")
	}
	s := New(Options{Resolver: resolver, Authorizer: tenantAuthorizer{}, Metrics: metrics, ExampleSettle: -1})
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.Run(rctx)

	do := func(method, target, token, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "text/html,application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	ref := url.QueryEscape(prefix + "/cm:v1")
	digest := func(token, ns string) string {
		_, body := do("GET", "/v1/resolve?ref="+ref+"&namespace="+ns, token, "")
		var res api.Resolution
		_ = json.Unmarshal([]byte(body), &res)
		return res.Digest
	}
	da, db := digest("a", "team-a"), digest("b", "team-b")
	if da == "" || db == "" || da == db {
		t.Fatalf("digests %q and %q", da, db)
	}
	// Wait until both examples are tested.
	deadline := time.Now().Add(30 * time.Second)
	for s.examples.CountsFor(ga.Key()).OK != 1 || s.examples.CountsFor(gb.Key()).Error != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("examples: a %+v, b %+v", s.examples.CountsFor(ga.Key()), s.examples.CountsFor(gb.Key()))
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Each tenant's view, asked twice in turns so that what one filled is
	// there when the other asks.
	type view struct {
		token, ns, self, other, digest, otherDigest, status string
	}
	views := []view{
		{"a", "team-a", "tenant-a-text", "tenant-b-text", da, db, "ok"},
		{"b", "team-b", "tenant-b-text", "tenant-a-text", db, da, "error"},
	}
	check := func(phase string, v view) {
		t.Helper()
		q := "&namespace=" + v.ns
		for _, c := range []struct {
			what, method, target, body string
			want, not                  []string
		}{
			{"resolve", "GET", "/v1/resolve?ref=" + ref + q, "", []string{v.digest}, []string{v.otherDigest}},
			{"file", "GET", "/v1/file?ref=" + ref + "&path=cm.jinja" + q, "", []string{v.self}, []string{v.other}},
			{"template", "GET", "/v1/template?ref=" + ref + q, "", []string{v.digest, `"status":"` + v.status + `"`}, []string{v.otherDigest}},
			{"search", "GET", "/v1/search?q=only" + q, "", []string{"only" + v.token}, []string{"only" + map[string]string{"a": "b", "b": "a"}[v.token]}},
			{"expand", "POST", "/v1/expand?namespace=" + v.ns, `{"ref":"` + prefix + `/cm:v1","deployment":"d","namespace":"` + v.ns + `"}`, []string{v.self}, []string{v.other}},
			{"version page", "GET", "/t/" + prefix + "/cm:v1?namespace=" + v.ns, "", []string{v.digest[7:19]}, []string{v.otherDigest[7:19]}},
			{"registry page", "GET", "/r/" + prefix + "?namespace=" + v.ns, "", []string{"only" + v.token}, []string{"only" + map[string]string{"a": "b", "b": "a"}[v.token]}},
			{"changes", "GET", "/v1/index/changes?namespace=" + v.ns, "", []string{v.ns + "/" + prefix}, []string{map[string]string{"a": "team-b", "b": "team-a"}[v.token]}},
		} {
			code, body := do(c.method, c.target, v.token, c.body)
			if code != 200 {
				t.Errorf("%s: %s as %s: %d %.300s", phase, c.what, v.ns, code, body)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s: %s as %s lacks %q: %.400s", phase, c.what, v.ns, w, body)
				}
			}
			for _, n := range c.not {
				if strings.Contains(body, n) {
					t.Errorf("%s: %s as %s shows the other namespace's %q: %.400s", phase, c.what, v.ns, n, body)
				}
			}
		}
	}
	for round := range 2 {
		for _, v := range views {
			check([]string{"first", "second"}[round], v)
		}
	}
	// Metrics: one series set per registry key.
	_, body := do("GET", "/metrics", "metrics", "")
	for _, key := range []string{ga.Key(), gb.Key()} {
		if !strings.Contains(body, `registry="`+key+`"`) {
			t.Errorf("/metrics has no series of %s", key)
		}
	}

	// team-a's Registry goes: nothing of it stays.
	weakA, weakSnap := weak.Make(ga), weak.Make(ga.Snapshot())
	keyA := ga.Key()
	resolver.Remove(ga)
	s.Forget(ga)
	ga = nil
	if n := metrics.Series(keyA); n != 0 {
		t.Errorf("%d series of the removed registry %s", n, keyA)
	}
	if c := s.examples.CountsFor(keyA); c != (struct{ OK, Error, Pending int }{}) {
		t.Errorf("example results of the removed registry: %+v", c)
	}
	// A worker that tested team-a's example may still hold its job on
	// its stack for a moment: collect until it lets go, or fail.
	for i := 0; i < 100 && (weakA.Value() != nil || weakSnap.Value() != nil); i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if weakA.Value() != nil || weakSnap.Value() != nil {
		t.Errorf("the removed registry (%v) or its snapshot (%v) is still referred to", weakA.Value() != nil, weakSnap.Value() != nil)
	}
	check("after team-a's went", views[1])
	if code, body := do("GET", "/v1/resolve?ref="+ref+"&namespace=team-a", "a", ""); code != 404 || bytes.Contains([]byte(body), []byte(da)) {
		t.Errorf("team-a's removed registry still resolves: %d %s", code, body)
	}
	if n := metrics.Series(gb.Key()); n == 0 {
		t.Errorf("team-b's series went with team-a's")
	}
	_ = http.StatusOK
}
