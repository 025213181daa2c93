package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/index/indextest"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

const prefix = "github.com/acme/tpl"

const schema = `info:
  title: Redis
  description: A Redis master & replicas.
required: [name]
properties:
  name:
    type: string
    description: Name of the deployment.
  replicas:
    type: integer
    default: 2
`

// fixture is a small registry: a root collection with redis (patch and
// minor versions, a pre-release) and dup (ambiguous v1 and v1.0.0), a
// common collection with web, and a version directory that is not a
// version.
var fixture = map[string]string{
	"redis/v1/redis.jinja":                "kind: v1\n",
	"redis/v1/redis.jinja.schema":         schema,
	"redis/v1/example.yaml":               "resources: []\n",
	"redis/v1.0.1/redis.jinja":            "kind: v1.0.1\n",
	"redis/v1.0.1/redis.jinja.schema":     schema,
	"redis/v1.0.1/example.yaml":           "resources: [101]\n",
	"redis/v1.2.0/redis.jinja":            "kind: v1.2.0\n",
	"redis/v1.2.0/example.yaml":           "resources: [120]\n",
	"redis/v2.0.0-rc.1/redis.jinja":       "kind: rc\n",
	"redis/v2.0.0-rc.1/example.yaml":      "resources: []\n",
	"dup/v1/dup.py":                       "def GenerateConfig(ctx): pass\n",
	"dup/v1.0.0/dup.py":                   "def GenerateConfig(ctx): return 1\n",
	"common/web/v1.0.0/web.gotmpl":        "{{ .name }}\n",
	"common/web/v1.0.0/web.gotmpl.schema": "info: {title: Web}\n",
	"common/web/v1.0.0/example.yaml":      "resources: []\n",
	"common/web/latest/web.gotmpl":        "bad\n",
	"common/web/v1.1.0/web.gotmpl":        "{{ .name }} 1.1\n",
	"common/web/v1.1.0/helpers/x.tmpl":    "x\n",
	"common/web/v1.1.0/example.yaml":      "resources: []\n",
	"README.md":                           "# test registry\n",
}

func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := indextest.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
}

type env struct {
	srv     *Server
	http    *httptest.Server
	reg     *index.Registry
	dir     string
	metrics *Metrics
}

// newEnv serves the fixture from a temporary directory; with refresh
// false the registry has no index yet.
func newEnv(t testing.TB, token string, refresh bool) *env {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, fixture)
	m := NewMetrics()
	reg, err := api.OpenRegistry(api.RegistrySpec{Prefix: prefix, Dir: dir}, api.Setup{Hooks: api.Hooks{
		OnIndex: m.ObserveIndex, CacheLookup: m.CacheLookupFunc, GitHubRequest: m.GitHubRequestFunc,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if refresh {
		if err := reg.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	def, err := resolve.ParseRegistry(prefix)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Resolver: resolve.New(def, reg), AdminToken: token, Metrics: m})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &env{srv: s, http: hs, reg: reg, dir: dir, metrics: m}
}

func (e *env) do(t testing.TB, method, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestRoutes(t *testing.T) {
	e := newEnv(t, "", true)
	tests := []struct {
		method, path string
		status       int
		// contains are substrings of the body; check, if set, inspects it.
		contains []string
		check    func(t *testing.T, resp *http.Response, body []byte)
	}{
		{"GET", "/healthz", 200, []string{`"ok"`}, nil},
		{"GET", "/readyz", 200, []string{`"ready":true`}, nil},
		{"GET", "/v1/", 200, []string{"/v1/resolve"}, nil},
		{"GET", "/v1/registries", 200, []string{`"name":"github.com/acme/tpl"`, `"kind":"local"`, `"status":"ok"`, `"default":true`, `"templates":3`}, nil},
		{"GET", "/v1/registries/github.com/acme/tpl", 200, []string{`"findings":[`, `not a version`}, nil},
		{"GET", "/v1/registries/acme/tpl", 200, []string{`"name":"github.com/acme/tpl"`}, nil},
		{"GET", "/v1/registries/github.com%2Facme%2Ftpl", 200, []string{`"name":"github.com/acme/tpl"`}, nil},
		{"GET", "/v1/registries/github.com/nope/x", 404, []string{`"error":`, "not configured"}, nil},
		{"GET", "/v1/registries/github.com/acme/tpl/refresh", 405, []string{"POST"}, nil},
		{"GET", "/v1/collections", 200, []string{`"name":""`, `"name":"common"`}, nil},
		{"GET", "/v1/collections?registry=github.com/nope/x", 404, nil, nil},
		{"GET", "/v1/templates", 200, []string{`"name":"redis"`, `"name":"web"`, `"latest":"v1.2.0"`}, nil},
		{"GET", "/v1/templates?q=^red", 200, []string{`"name":"redis"`}, func(t *testing.T, _ *http.Response, b []byte) {
			var l api.TemplateList
			mustJSON(t, b, &l)
			if len(l.Templates) != 1 {
				t.Errorf("got %d templates, want 1", len(l.Templates))
			}
		}},
		{"GET", "/v1/templates?registry=acme/tpl/common", 200, []string{`"name":"web"`}, func(t *testing.T, _ *http.Response, b []byte) {
			var l api.TemplateList
			mustJSON(t, b, &l)
			if len(l.Templates) != 1 || l.Templates[0].Ref != prefix+"/common/web" {
				t.Errorf("got %+v, want only common/web", l.Templates)
			}
		}},
		{"GET", "/v1/templates?collection=nope", 404, nil, nil},
		{"GET", "/v1/templates?q=(", 400, []string{"pattern"}, nil},
		{"GET", "/v1/versions?ref=redis", 200, []string{`"version":"v1.0.0"`, `"version":"v2.0.0-rc.1"`, `"prerelease":true`}, nil},
		{"GET", "/v1/versions?ref=redis:v1", 400, nil, nil},
		{"GET", "/v1/versions?ref=nope", 404, nil, nil},
		{"GET", "/v1/versions", 400, []string{"missing query parameter ref"}, nil},
		{"GET", "/v1/template?ref=redis:v1.0", 200, nil, func(t *testing.T, _ *http.Response, b []byte) {
			var tv api.TemplateVersion
			mustJSON(t, b, &tv)
			if tv.Resolved != prefix+"/redis:v1.0.1" || tv.Title != "Redis" || tv.ExampleContent != "resources: [101]\n" || len(tv.Versions) != 4 {
				t.Errorf("got %+v", tv)
			}
			if len(tv.Properties) != 2 || tv.Properties[0].Name != "name" || !tv.Properties[0].Required || tv.Properties[1].Default != 2.0 {
				t.Errorf("properties %+v", tv.Properties)
			}
		}},
		{"GET", "/v1/template?ref=dup:v1", 409, []string{"both hold"}, nil},
		{"GET", "/v1/file?ref=redis:v1.0&path=example.yaml", 200, []string{"resources: [101]"}, func(t *testing.T, resp *http.Response, _ []byte) {
			if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if et := resp.Header.Get("ETag"); len(et) != 42 {
				t.Errorf("ETag %q", et)
			}
		}},
		{"GET", "/v1/file?ref=common/web:v1.1&path=helpers/x.tmpl", 200, []string{"x"}, nil},
		{"GET", "/v1/file?ref=redis:v1.0&path=nope", 404, nil, nil},
		{"GET", "/v1/file?ref=redis:v1.0", 400, nil, nil},
		{"GET", "/v1/resolve?ref=redis:v1.0", 200, []string{`"resolved":"github.com/acme/tpl/redis:v1.0.1"`, `"version":"v1.0.1"`, `"digest":"sha256:`, `"files":[`, `"template_file":"redis.jinja"`}, nil},
		{"GET", "/v1/resolve?ref=redis", 200, []string{`"resolved":"github.com/acme/tpl/redis:v1.2.0"`, `"note":"no version given`}, nil},
		{"GET", "/v1/resolve?ref=redis:v2.0.0-rc.1", 200, []string{`"version":"v2.0.0-rc.1"`}, nil},
		{"GET", "/v1/resolve?ref=" + url.QueryEscape(prefix+"/common/web:v1"), 200, []string{`"resolved":"github.com/acme/tpl/common/web:v1.0.0"`}, nil},
		{"GET", "/v1/resolve?ref=web:v1.1&registry=acme/tpl/common", 200, []string{`"resolved":"github.com/acme/tpl/common/web:v1.1.0"`}, nil},
		{"GET", "/v1/resolve?ref=redis:v1.3", 404, []string{"available: v1.0.0, v1.0.1, v1.2.0"}, nil},
		{"GET", "/v1/resolve?ref=github.com/other/x/redis:v1", 404, []string{"not configured"}, nil},
		{"GET", "/v1/resolve?ref=dup:v1", 409, []string{"fix the registry"}, nil},
		{"GET", "/v1/resolve?ref=a/b/c/d/e/f:v1", 400, nil, nil},
		{"GET", "/v1/resolve?ref=redis:1.0", 400, nil, nil},
		{"GET", "/v1/resolve?ref=%zz", 400, nil, nil},
		{"GET", "/v1/resolve", 400, []string{"missing query parameter ref"}, nil},
		{"GET", "/v1/resolve?ref=redis&registry=not/a/valid/registry/x", 400, nil, nil},
		{"GET", "/v1/search?q=web", 200, []string{`"template":"web"`, `"match":"name"`}, nil},
		{"GET", "/v1/search?q=common", 200, []string{`"match":"collection"`}, nil},
		{"GET", "/v1/search?q=helpers", 200, []string{`"match":"path"`}, nil},
		{"GET", "/v1/search?q=zzz", 200, []string{`"results":[]`}, nil},
		{"GET", "/v1/search", 400, nil, nil},
		{"GET", "/nope", 404, []string{`"error":"no route GET /nope`}, nil},
		{"GET", "/v1/registry", 404, nil, nil},
		{"DELETE", "/v1/resolve?ref=redis", 405, []string{`"error":"method DELETE not allowed`}, allow("GET, HEAD")},
		{"POST", "/v1/search", 405, nil, allow("GET, HEAD")},
		{"PUT", "/healthz", 405, nil, allow("GET, HEAD")},
		{"GET", "/v1/expand", 405, []string{"allowed: POST"}, allow("POST")},
		{"PUT", "/v1/registries/github.com/acme/tpl/refresh", 405, nil, allow("GET, HEAD, POST")},
		{"GET", "/v1/resolve?ref=" + strings.Repeat("x", 20<<10), 431, []string{"request URL of", "exceeds the limit of 16384 bytes"}, nil},
		{"GET", "/v1/templates?q=" + strings.Repeat("x", 200<<10), 431, []string{"request URL of"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, body := e.do(t, tt.method, tt.path, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.status, body)
			}
			if !strings.HasPrefix(tt.path, "/v1/file") || tt.status != 200 {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
				if !json.Valid(body) {
					t.Errorf("body is not JSON: %s", body)
				}
			}
			if tt.status >= 400 {
				var e api.Error
				if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
					t.Errorf("error body %s: want {\"error\": ...}", body)
				}
			}
			for _, c := range tt.contains {
				if !bytes.Contains(body, []byte(c)) {
					t.Errorf("body %s\ndoes not contain %s", body, c)
				}
			}
			if tt.check != nil {
				tt.check(t, resp, body)
			}
		})
	}
}

// allow checks a 405's Allow header.
func allow(want string) func(t *testing.T, resp *http.Response, _ []byte) {
	return func(t *testing.T, resp *http.Response, _ []byte) {
		if got := resp.Header.Get("Allow"); got != want {
			t.Errorf("Allow %q, want %q", got, want)
		}
	}
}

// TestHead checks that HEAD answers wherever GET does, without a body.
func TestHead(t *testing.T) {
	e := newEnv(t, "", true)
	for _, path := range []string{"/healthz", "/v1/resolve?ref=redis:v1.0", "/v1/templates", "/v1/file?ref=redis:v1.0&path=example.yaml", "/metrics", "/v1/resolve?ref=nope:v1"} {
		get, _ := e.do(t, "GET", path, nil)
		head, body := e.do(t, "HEAD", path, nil)
		if head.StatusCode != get.StatusCode || len(body) != 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s = %d %q (%d body bytes), want GET's %d %q and no body", path, head.StatusCode, head.Header.Get("Content-Type"), len(body), get.StatusCode, get.Header.Get("Content-Type"))
		}
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

func TestFileETag(t *testing.T) {
	e := newEnv(t, "", true)
	resp, _ := e.do(t, "GET", "/v1/file?ref=redis:v1.0&path=example.yaml", nil)
	etag := resp.Header.Get("ETag")
	resp, body := e.do(t, "GET", "/v1/file?ref=redis:v1.0&path=example.yaml", http.Header{"If-None-Match": {etag}})
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("conditional GET: status %d, body %q; want 304 and no body", resp.StatusCode, body)
	}
}

// TestResolveEncoding checks that the hand-built answer of the hot path is
// byte for byte what encoding/json makes of the same resolution.
func TestResolveEncoding(t *testing.T) {
	e := newEnv(t, "", true)
	svc := api.NewService(e.srv.resolver, expand.Options{})
	for _, ref := range []string{"redis:v1.0", "redis", "redis:v1.0.1", "common/web", prefix + "/common/web:v1.1", "redis:v1.2@" + digestOf(t, e, "redis:v1.2")} {
		t.Run(ref, func(t *testing.T) {
			want, err := svc.Resolve(context.Background(), ref, "")
			if err != nil {
				t.Fatal(err)
			}
			wantBytes, _ := json.Marshal(want)
			for i := 0; i < 2; i++ { // encoding, then from the cache
				resp, body := e.do(t, "GET", "/v1/resolve?ref="+url.QueryEscape(ref), nil)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				if string(body) != string(wantBytes)+"\n" {
					t.Errorf("got  %s\nwant %s", body, wantBytes)
				}
			}
		})
	}
}

func digestOf(t *testing.T, e *env, ref string) string {
	res, err := e.srv.resolver.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return res.Digest
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "<html>&", "tab\tnew\nline", "ünïcode", "\u2028", "bad\xffutf8"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestRefQuery(t *testing.T) {
	tests := []struct {
		raw, ref, registry string
		namespace          string
		wantErr            bool
	}{
		{"ref=a:v1", "a:v1", "", "", false},
		{"x=1&ref=a%2Fb:v1&registry=o/r", "a/b:v1", "o/r", "", false},
		{"registry=o%2Fr&ref=a+b", "a b", "o/r", "", false},
		{"ref=first&ref=second", "first", "", "", false},
		{"namespace=team-a&ref=x", "x", "", "team-a", false},
		{"ref=x&namespace=a&namespace=b", "x", "", "a", false},
		{"ref=%zz", "", "", "", true},
		{"", "", "", "", false},
	}
	for _, tt := range tests {
		ref, reg, ns, err := refQuery(tt.raw)
		if ref != tt.ref || reg != tt.registry || ns != tt.namespace || (err != nil) != tt.wantErr {
			t.Errorf("refQuery(%q) = %q, %q, %q, %v; want %q, %q, %q, error %v", tt.raw, ref, reg, ns, err, tt.ref, tt.registry, tt.namespace, tt.wantErr)
		}
	}
}

func TestRefresh(t *testing.T) {
	const token = "s3cret-admin-token"
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	tests := []struct {
		name   string
		token  string // configured
		path   string
		header http.Header
		status int
	}{
		{"no header", token, "/v1/registries/github.com/acme/tpl/refresh", nil, 401},
		{"wrong token", token, "/v1/registries/github.com/acme/tpl/refresh", http.Header{"Authorization": {"Bearer nope"}}, 401},
		{"token prefix", token, "/v1/registries/github.com/acme/tpl/refresh", http.Header{"Authorization": {"Bearer " + token[:5]}}, 401},
		{"basic scheme", token, "/v1/registries/github.com/acme/tpl/refresh", http.Header{"Authorization": {"Basic " + token}}, 401},
		{"disabled", "", "/v1/registries/github.com/acme/tpl/refresh", bearer, 403},
		{"unknown registry", token, "/v1/registries/github.com/acme/nope/refresh", bearer, 404},
		{"not a refresh", token, "/v1/registries/github.com/acme/tpl", bearer, 404},
		{"escaped name", token, "/v1/registries/github.com%2Facme%2Ftpl/refresh", bearer, 200},
		{"ok", token, "/v1/registries/github.com/acme/tpl/refresh", bearer, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.token, true)
			resp, body := e.do(t, "POST", tt.path, tt.header)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if bytes.Contains(body, []byte(token)) {
				t.Errorf("the answer holds the token: %s", body)
			}
			if tt.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tt.status == 200 {
				var r api.Registry
				mustJSON(t, body, &r)
				if r.Name != prefix || r.Status != api.StatusOK || !r.Ready {
					t.Errorf("got %+v", r)
				}
			}
		})
	}
}

// TestRefreshAnswersAfterRefresh checks that the answer reflects the
// refreshed index.
func TestRefreshAnswersAfterRefresh(t *testing.T) {
	e := newEnv(t, "tok", true)
	writeTree(t, e.dir, map[string]string{"redis/v1.2.7/redis.jinja": "new\n", "redis/v1.2.7/example.yaml": "x: 1\n"})
	resp, body := e.do(t, "GET", "/v1/resolve?ref=redis:v1.2", nil)
	if !bytes.Contains(body, []byte(`"version":"v1.2.0"`)) {
		t.Fatalf("before the refresh: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do(t, "POST", "/v1/registries/github.com/acme/tpl/refresh", http.Header{"Authorization": {"Bearer tok"}})
	if resp.StatusCode != 200 {
		t.Fatalf("refresh: %d %s", resp.StatusCode, body)
	}
	var r api.Registry
	mustJSON(t, body, &r)
	if r.Versions != 9 {
		t.Errorf("after the refresh the registry has %d versions, want 9", r.Versions)
	}
	_, body = e.do(t, "GET", "/v1/resolve?ref=redis:v1.2", nil)
	if !bytes.Contains(body, []byte(`"version":"v1.2.7"`)) {
		t.Errorf("after the refresh: %s", body)
	}
}

func TestReadyz(t *testing.T) {
	e := newEnv(t, "", false)
	resp, body := e.do(t, "GET", "/readyz", nil)
	if resp.StatusCode != 503 || !bytes.Contains(body, []byte(prefix)) {
		t.Errorf("before the first index: %d %s; want 503 naming %s", resp.StatusCode, body, prefix)
	}
	resp, body = e.do(t, "GET", "/v1/resolve?ref=redis", nil)
	if resp.StatusCode != 503 {
		t.Errorf("resolve before the first index: %d %s; want 503", resp.StatusCode, body)
	}
	resp, _ = e.do(t, "GET", "/healthz", nil)
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
	if err := e.reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do(t, "GET", "/readyz", nil)
	if resp.StatusCode != 200 {
		t.Errorf("after the first index: %d %s", resp.StatusCode, body)
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, "", true)
	e.metrics.GitHubRequestFunc(prefix)("commit", 304)
	for _, p := range []string{"/v1/resolve?ref=redis", "/v1/resolve?ref=nope", "/v1/file?ref=redis:v1&path=example.yaml", "/v1/templates", "/nope"} {
		e.do(t, "GET", p, nil)
	}
	resp, body := e.do(t, "GET", "/metrics", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	for _, name := range []string{
		"registryd_index_duration_seconds", "registryd_index_results_total", "registryd_github_requests_total",
		"registryd_blob_cache_lookups_total", "registryd_resolve_duration_seconds", "registryd_http_requests_total",
		"registryd_templates", "registryd_template_versions", "registryd_registry_ready", "registryd_lint_findings",
		"registryd_index_last_success_timestamp_seconds", "registryd_admin_auth_failures_total", "go_goroutines",
	} {
		if _, ok := fams[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if got := fams["registryd_templates"].GetMetric()[0].GetGauge().GetValue(); got != 3 {
		t.Errorf("registryd_templates = %v, want 3", got)
	}
	if got := fams["registryd_template_versions"].GetMetric()[0].GetGauge().GetValue(); got != 8 {
		t.Errorf("registryd_template_versions = %v, want 8", got)
	}
	if got := fams["registryd_resolve_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); got != 2 {
		t.Errorf("resolve histogram count = %v, want 2", got)
	}
	want := map[string]float64{"/v1/resolve 200": 1, "/v1/resolve 404": 1, "/v1/templates 200": 1, "unmatched 404": 1}
	for _, m := range fams["registryd_http_requests_total"].GetMetric() {
		var route, code string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "route":
				route = l.GetValue()
			case "code":
				code = l.GetValue()
			}
		}
		if w, ok := want[route+" "+code]; ok && m.GetCounter().GetValue() != w {
			t.Errorf("http_requests_total{route=%q,code=%q} = %v, want %v", route, code, m.GetCounter().GetValue(), w)
		}
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestClient runs the HTTP client against the server.
func TestClient(t *testing.T) {
	e := newEnv(t, "tok", true)
	c, err := api.NewClient(e.http.URL, e.http.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	svc := api.NewService(e.srv.resolver, expand.Options{})

	gotRes, err := c.Resolve(ctx, "redis:v1", "")
	if err != nil {
		t.Fatal(err)
	}
	wantRes, _ := svc.Resolve(ctx, "redis:v1", "")
	if !jsonEqual(gotRes, wantRes) {
		t.Errorf("Resolve: got %+v, want %+v", gotRes, wantRes)
	}
	if _, err := c.Resolve(ctx, "redis:v9", ""); !errors.Is(err, derrors.NotFound) || !strings.Contains(err.Error(), "available") {
		t.Errorf("Resolve of a missing version: %v", err)
	}
	if _, err := c.Resolve(ctx, "dup:v1", ""); !errors.Is(err, derrors.Ambiguous) {
		t.Errorf("Resolve of an ambiguous version: %v", err)
	}
	if _, err := c.Resolve(ctx, "Bad Ref", ""); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("Resolve of a bad reference: %v", err)
	}
	regs, err := c.Registries(ctx)
	if err != nil || len(regs.Registries) != 1 || regs.Default != prefix {
		t.Errorf("Registries: %+v, %v", regs, err)
	}
	tl, err := c.Templates(ctx, api.TemplateQuery{Q: "web"})
	if err != nil || len(tl.Templates) != 1 {
		t.Errorf("Templates: %+v, %v", tl, err)
	}
	vs, err := c.Versions(ctx, "common/web", "")
	if err != nil || vs.Latest != "v1.1.0" {
		t.Errorf("Versions: %+v, %v", vs, err)
	}
	tv, err := c.Template(ctx, "redis:v1", "")
	wantTV, _ := svc.Template(ctx, "redis:v1", "")
	// The server adds the example's test: pending, since nothing runs it.
	wantTV.ExampleTest = &api.ExampleStatus{Status: "pending"}
	if err != nil || !jsonEqual(tv, wantTV) {
		t.Errorf("Template: %+v, %v", tv, err)
	}
	sr, err := c.Search(ctx, "redis", "")
	if err != nil || len(sr.Results) != 1 {
		t.Errorf("Search: %+v, %v", sr, err)
	}
	f, err := c.ReadFile(ctx, "redis:v1.0", "", "example.yaml")
	if err != nil || string(f) != "resources: [101]\n" {
		t.Errorf("File: %q, %v", f, err)
	}
	if _, err := c.Refresh(ctx, prefix, "wrong"); !errors.Is(err, derrors.Unauthorized) {
		t.Errorf("Refresh with a wrong token: %v", err)
	}
	r, err := c.Refresh(ctx, prefix, "tok")
	if err != nil || r.Status != api.StatusOK {
		t.Errorf("Refresh: %+v, %v", r, err)
	}
	one, err := c.Registry(ctx, prefix)
	if err != nil || len(one.Findings) == 0 {
		t.Errorf("Registry: %+v, %v", one, err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkResolveHandler measures the hot path without the network.
func BenchmarkResolveHandler(b *testing.B) {
	e := newEnv(b, "", true)
	req := httptest.NewRequest("GET", "/v1/resolve?ref=redis:v1.0", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		e.srv.ServeHTTP(w, req)
	}
}

// TestReadyOptional: a registry ReadyOptional names does not fail /readyz
// when it has no index; it and ReadyNotes' notes are in the answer.
func TestReadyOptional(t *testing.T) {
	ready := &index.Registry{Name: "github.com/a/ready"}
	ready.Install(index.Build(ready.Name, indextest.Tree(map[string]string{"t/v1.0.0/t.py": "x"}), nil))
	empty := &index.Registry{Name: "github.com/a/empty"}
	tests := []struct {
		name     string
		optional func(string) bool
		notes    func() []string
		code     int
		want     []string
	}{
		{"required", nil, nil, 503, []string{"no index yet for github.com/a/empty"}},
		// Registries from cluster objects are counted, not named: /readyz
		// answers anyone.
		{"optional", func(n string) bool { return n == empty.Name }, nil, 200, []string{`"notes":["1 registries from cluster objects have no index yet`}},
		{"notes", func(string) bool { return true }, func() []string { return []string{"apiserver unreachable"} }, 200, []string{"apiserver unreachable", `"ready":true`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{Resolver: resolve.New(resolve.Registry{}, ready, empty), ReadyOptional: tt.optional, ReadyNotes: tt.notes})
			w := httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
			if w.Code != tt.code {
				t.Errorf("%d %s, want %d", w.Code, w.Body, tt.code)
			}
			for _, want := range tt.want {
				if !strings.Contains(w.Body.String(), want) {
					t.Errorf("answer %s lacks %s", w.Body, want)
				}
			}
		})
	}
}
