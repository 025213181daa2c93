package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/index/indextest"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// fixture is a small registry with a registry.yaml that maps a collection
// to a deeper path.
var fixture = map[string]string{
	"registry.yaml":                        "collections:\n  apps: stacks/apps\n",
	"redis/v1.0.0/redis.jinja":             "kind: a\n",
	"redis/v1.0.0/example.yaml":            "resources: []\n",
	"redis/v1.0.3/redis.jinja":             "kind: b\n",
	"redis/v1.0.3/redis.jinja.schema":      "info: {title: Redis}\n",
	"redis/v1.0.3/example.yaml":            "resources: []\n",
	"redis/v1.1.0/redis.jinja":             "kind: c\n",
	"redis/v1.1.0/example.yaml":            "resources: []\n",
	"stacks/apps/shop/v2/shop.py":          "def GenerateConfig(ctx): pass\n",
	"stacks/apps/shop/v2/example.yaml":     "resources: []\n",
	"stacks/apps/shop/v2/shop.py.schema":   "properties: {}\n",
	"stacks/apps/shop/v2/helpers/lib.py":   "X = 1\n",
	"stacks/apps/shop/v2.1.0/shop.py":      "def GenerateConfig(ctx): return 1\n",
	"stacks/apps/shop/v2.1.0/example.yaml": "resources: []\n",
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := indextest.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// daemon is a registryd running in-process.
type daemon struct {
	url    string
	stderr *syncBuffer
	stop   func() error
}

// start runs registryd with args and environment vars until the test ends
// or stop is called; it returns once the server listens.
func start(t *testing.T, args []string, vars map[string]string) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	getenv := func(k string) string { return vars[k] }
	go func() {
		done <- run(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), env{
			stdout: io.Discard, stderr: stderr, getenv: getenv,
			onListen: func(addr string) { listening <- addr },
		})
	}()
	d := &daemon{stderr: stderr}
	var once sync.Once
	var stopErr error
	d.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(20 * time.Second):
				t.Error("registryd did not stop within 20s")
			}
		})
		return stopErr
	}
	t.Cleanup(func() { d.stop() })
	select {
	case addr := <-listening:
		d.url = "http://" + addr
	case err := <-done:
		t.Fatalf("registryd exited: %v\n%s", err, stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("registryd did not listen within 20s\n%s", stderr)
	}
	return d
}

func (d *daemon) get(t *testing.T, path string, out any) int {
	t.Helper()
	return d.do(t, "GET", path, nil, out)
}

func (d *daemon) do(t *testing.T, method, path string, header http.Header, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, d.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

func (d *daemon) resolve(t *testing.T, ref string) api.Resolution {
	t.Helper()
	var res api.Resolution
	if code := d.get(t, "/v1/resolve?ref="+ref, &res); code != 200 {
		t.Fatalf("resolve %s: status %d", ref, code)
	}
	return res
}

func TestLocalDirectory(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, fixture)
	d := start(t, []string{"--registry-dir", "github.com/acme/tpl=" + dir, "--cache-dir", t.TempDir()}, nil)
	if code := d.get(t, "/readyz", nil); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	tests := []struct{ ref, want string }{
		{"redis:v1.0", "github.com/acme/tpl/redis:v1.0.3"},
		{"redis:v1", "github.com/acme/tpl/redis:v1.0.3"},
		{"redis", "github.com/acme/tpl/redis:v1.1.0"},
		{"apps/shop:v2", "github.com/acme/tpl/apps/shop:v2.0.0"},
		{"github.com/acme/tpl/apps/shop:v2.1", "github.com/acme/tpl/apps/shop:v2.1.0"},
	}
	for _, tt := range tests {
		res := d.resolve(t, tt.ref)
		if res.Resolved != tt.want || res.Digest == "" || len(res.Files) == 0 {
			t.Errorf("resolve %s: %+v, want %s", tt.ref, res, tt.want)
		}
	}
	var e api.Error
	if code := d.get(t, "/v1/resolve?ref=redis:v9", &e); code != 404 || !strings.Contains(e.Error, "available") {
		t.Errorf("missing version: %d %+v", code, e)
	}
	if code := d.get(t, "/v1/resolve?ref=bad::ref", &e); code != 400 {
		t.Errorf("bad reference: %d %+v", code, e)
	}
	// Refresh is disabled without an admin token.
	if code := d.do(t, "POST", "/v1/registries/github.com/acme/tpl/refresh", nil, nil); code != 403 {
		t.Errorf("refresh without admin token configured: %d, want 403", code)
	}
	if err := d.stop(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if !strings.Contains(d.stderr.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", d.stderr)
	}
}

// TestLocalDirectoryEdited edits a local registry while registryd serves
// it, as make run users do: a new version is served without a refresh
// request, and a deleted file is never a 500.
func TestLocalDirectoryEdited(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, fixture)
	d := start(t, []string{"--registry-dir", "github.com/acme/tpl=" + dir, "--refresh", "1h", "--cache-dir", t.TempDir()}, nil)
	if res := d.resolve(t, "redis:v1.1"); res.Resolved != "github.com/acme/tpl/redis:v1.1.0" {
		t.Fatalf("before the edit: %+v", res)
	}
	writeTree(t, dir, map[string]string{"redis/v1.1.1/redis.jinja": "kind: d\n", "redis/v1.1.1/example.yaml": "resources: []\n"})
	deadline := time.Now().Add(10 * time.Second)
	for d.resolve(t, "redis:v1.1").Resolved != "github.com/acme/tpl/redis:v1.1.1" {
		if time.Now().After(deadline) {
			t.Fatal("a new version directory was not served within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	os.Remove(filepath.Join(dir, "redis", "v1.1.1", "example.yaml"))
	for _, path := range []string{"/v1/template?ref=redis:v1.1", "/v1/file?ref=redis:v1.1&path=example.yaml"} {
		if code := d.get(t, path, nil); code >= 500 {
			t.Errorf("GET %s after a delete: %d", path, code)
		}
	}
}

func TestEmbeddedDefault(t *testing.T) {
	d := start(t, []string{"--cache-dir", t.TempDir()}, nil)
	var regs api.RegistryList
	d.get(t, "/v1/registries", &regs)
	if regs.Default != dm.ExampleRegistryPrefix || len(regs.Registries) != 1 || regs.Registries[0].Kind != api.KindEmbedded {
		t.Fatalf("registries: %+v", regs)
	}
	res := d.resolve(t, "redis")
	if !strings.HasPrefix(res.Resolved, dm.ExampleRegistryPrefix+"/redis:v") {
		t.Errorf("resolved %s", res.Resolved)
	}
}

// TestPprof checks that --pprof-addr serves Go's profiles on its own
// address, and that the API's never does.
func TestPprof(t *testing.T) {
	pprofAddr := freeAddr(t)
	d := start(t, []string{"--cache-dir", t.TempDir(), "--pprof-addr", pprofAddr}, nil)
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("--pprof-addr's heap profile: %d %.200s", resp.StatusCode, body)
	}
	if code := d.get(t, "/debug/pprof/", nil); code != http.StatusNotFound {
		t.Errorf("the API's address answers /debug/pprof/ with %d, want 404", code)
	}
}

func TestConfigFile(t *testing.T) {
	base := t.TempDir()
	writeTree(t, filepath.Join(base, "reg"), fixture)
	writeTree(t, filepath.Join(base, "other"), map[string]string{"x/v1/x.gotmpl": "x\n", "x/v1/example.yaml": "{}\n"})
	cfg := filepath.Join(base, "registryd.yaml")
	writeTree(t, base, map[string]string{"registryd.yaml": `# registryd configuration
listen: 127.0.0.1:1  # overridden by --addr
default_registry: acme/tpl/apps
refresh: 1h
cache_dir: ` + filepath.Join(base, "cache") + `
admin_token_env: MY_ADMIN
registries:
- dir: reg
  prefix: github.com/acme/tpl
- dir: other
  prefix: acme/other
`})
	d := start(t, []string{"--config", cfg}, map[string]string{"MY_ADMIN": "adm"})
	if res := d.resolve(t, "shop:v2"); res.Resolved != "github.com/acme/tpl/apps/shop:v2.0.0" {
		t.Errorf("short reference with the configured default collection: %s", res.Resolved)
	}
	if res := d.resolve(t, "github.com/acme/other/x:v1"); res.Resolved != "github.com/acme/other/x:v1.0.0" {
		t.Errorf("second registry: %s", res.Resolved)
	}
	var r api.Registry
	if code := d.do(t, "POST", "/v1/registries/github.com/acme/other/refresh", http.Header{"Authorization": {"Bearer adm"}}, &r); code != 200 || r.Status != api.StatusOK {
		t.Errorf("refresh with the token from admin_token_env: %d %+v", code, r)
	}
}

func TestBadConfiguration(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"unknown.yaml":   "listen: x\nregistries:\n- dir: .\n  prefix: a/b\n  colour: blue\n",
		"noprefix.yaml":  "registries:\n- dir: .\n",
		"both.yaml":      "registries:\n- dir: .\n  github: a/b\n",
		"refresh.yaml":   "refresh: soon\n",
		"default.yaml":   "default_registry: a/b\nregistries:\n- dir: .\n  prefix: c/d\n",
		"reg/x/v1/x.py":  "x",
		"notyaml.yaml":   "registries: {",
		"type.yaml":      "refresh: [1]\n",
		"duplicate.yaml": "registries:\n- dir: reg\n  prefix: a/b\n- dir: reg\n  prefix: github.com/a/b\n",
	})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown field", []string{"--config", filepath.Join(dir, "unknown.yaml")}, `unknown key "registries[0].colour" (known keys here: github, branch`},
		{"dir without prefix", []string{"--config", filepath.Join(dir, "noprefix.yaml")}, "needs a prefix"},
		{"github and dir", []string{"--config", filepath.Join(dir, "both.yaml")}, "either github or dir"},
		{"bad refresh", []string{"--config", filepath.Join(dir, "refresh.yaml")}, "refresh"},
		{"unconfigured default", []string{"--config", filepath.Join(dir, "default.yaml")}, "not configured"},
		{"not YAML", []string{"--config", filepath.Join(dir, "notyaml.yaml")}, "notyaml.yaml: yaml: line 1:"},
		{"wrong type", []string{"--config", filepath.Join(dir, "type.yaml")}, "cannot unmarshal array into key refresh of type string"},
		{"duplicate", []string{"--config", filepath.Join(dir, "duplicate.yaml")}, "twice"},
		{"missing config", []string{"--config", filepath.Join(dir, "nope.yaml")}, "reading configuration"},
		{"registry-dir without prefix", []string{"--registry-dir", dir}, "PREFIX=DIR"},
		{"registry-dir not a directory", []string{"--registry-dir", "a/b=" + filepath.Join(dir, "nope")}, "no such file"},
		{"bad github", []string{"--github", "just-a-name"}, "OWNER/REPO"},
		{"bad github api", []string{"--github", "a/b", "--github-api", "ftp://x"}, "API URL"},
		{"bad flag", []string{"--nope"}, "unknown flag"},
		{"arguments", []string{"serve"}, "unknown command"},
		{"bad log level", []string{"--log-level", "loud"}, "log-level"},
		{"bad address", []string{"--addr", "256.0.0.1:1"}, "listening"},
		{"address in use", []string{"--addr", taken.Addr().String()}, "listening on " + taken.Addr().String() + ": another program serves that address already (a registryd still running?): give another with --addr HOST:PORT (make run ADDR=127.0.0.1:8081)"},
		{"bad namespace bytes", []string{"--watch-registries", "--max-namespace-bytes", "lots"}, "--max-namespace-bytes"},
		{"zero index bytes", []string{"--watch-registries", "--max-index-bytes", "0"}, "--max-index-bytes"},
		{"no namespace registries", []string{"--watch-registries", "--max-namespace-registries", "0"}, "--max-namespace-registries"},
		{"no listings", []string{"--watch-registries", "--max-listings", "0"}, "--max-listings 0"},
		{"namespace listings over the daemon's", []string{"--watch-registries", "--max-listings", "2", "--max-namespace-listings", "3"}, "no larger than --max-listings (2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := run(ctx, append(tt.args, "--cache-dir", t.TempDir()), env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error about %q", tt.args, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "JSON") {
				t.Errorf("run(%q) = %v: the configuration is YAML", tt.args, err)
			}
		})
	}
}

// TestDefaultIndexBytes: --max-index-bytes is half of GOMEMLIMIT, or
// 4 GiB without one.
func TestDefaultIndexBytes(t *testing.T) {
	for _, tt := range []struct{ limit, want int64 }{
		{math.MaxInt64, 4 << 30}, {0, 4 << 30}, {2 << 30, 1 << 30}, {10 << 30, 5 << 30},
	} {
		if got := defaultIndexBytes(tt.limit); got != tt.want {
			t.Errorf("defaultIndexBytes(%d) = %d, want %d", tt.limit, got, tt.want)
		}
	}
}

// TestGitHub runs registryd against the GitHub test server: request
// budgets of a cold index, resolves and an unchanged refresh, a refresh
// that sees a new commit, and a restart served from the persisted snapshot
// while GitHub is down.
func TestGitHub(t *testing.T) {
	const ghToken, adminToken = "ghp_testtoken123", "admin-secret-456"
	repo := githubtest.NewRepoFS(t, mapFS(t, fixture))
	gh := githubtest.New(map[string]string{"acme/tpl": repo})
	defer gh.Close()
	gh.RequireToken(ghToken)
	cache := t.TempDir()
	vars := map[string]string{"GITHUB_TOKEN": ghToken, "REGISTRYD_ADMIN_TOKEN": adminToken}
	args := []string{"--github", "acme/tpl@main", "--github-api", gh.URL, "--refresh", "1h", "--cache-dir", cache}

	d := start(t, args, vars)
	if code := d.get(t, "/readyz", nil); code != 200 {
		t.Fatalf("readyz after start: %d\n%s", code, d.stderr)
	}
	if n := gh.Requests(); n > 3 {
		t.Errorf("cold index took %d GitHub requests, want at most 3", n)
	}

	gh.ResetCounts()
	for i := 0; i < 20; i++ {
		if res := d.resolve(t, "redis:v1.0"); res.Resolved != "github.com/acme/tpl/redis:v1.0.3" {
			t.Fatalf("resolved %s", res.Resolved)
		}
	}
	d.resolve(t, "github.com/acme/tpl/apps/shop:v2")
	if n := gh.Requests(); n != 0 {
		t.Errorf("resolving took %d GitHub requests, want 0", n)
	}

	bearer := http.Header{"Authorization": {"Bearer " + adminToken}}
	var r api.Registry
	if code := d.do(t, "POST", "/v1/registries/github.com/acme/tpl/refresh", bearer, &r); code != 200 || r.Status != api.StatusOK {
		t.Fatalf("refresh: %d %+v", code, r)
	}
	if n, n304 := gh.Requests(), gh.Responses(http.StatusNotModified); n != 1 || n304 != 1 {
		t.Errorf("unchanged refresh took %d requests (%d answered 304), want 1 answered 304", n, n304)
	}
	if code := d.do(t, "POST", "/v1/registries/github.com/acme/tpl/refresh", http.Header{"Authorization": {"Bearer " + ghToken}}, nil); code != 401 {
		t.Errorf("refresh with the wrong token: %d, want 401", code)
	}

	head := githubtest.Commit(t, repo, map[string]string{"redis/v1.0.9/redis.jinja": "kind: d\n", "redis/v1.0.9/example.yaml": "resources: []\n"})
	if code := d.do(t, "POST", "/v1/registries/github.com/acme/tpl/refresh", bearer, &r); code != 200 || r.Version != head {
		t.Fatalf("refresh after a commit: %d %+v, want version %s", code, r, head)
	}
	if res := d.resolve(t, "redis:v1.0"); res.Resolved != "github.com/acme/tpl/redis:v1.0.9" {
		t.Errorf("after the refresh: resolved %s, want v1.0.9", res.Resolved)
	}

	// File content goes through the blob cache.
	if code := d.get(t, "/v1/template?ref=redis:v1.0.3", nil); code != 200 {
		t.Errorf("template: %d", code)
	}
	resp, err := http.Get(d.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`registryd_github_requests_total{code="304",endpoint="commit",registry="github.com/acme/tpl"} 1`,
		`registryd_index_results_total{registry="github.com/acme/tpl",result="unchanged"} 1`,
		`registryd_blob_cache_lookups_total{registry="github.com/acme/tpl",where="miss"}`,
		`registryd_template_versions{registry="github.com/acme/tpl"} 6`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	// Restart with GitHub down: the persisted snapshot is served at once.
	gh.Close()
	start2 := time.Now()
	d2 := start(t, args, vars)
	if code := d2.get(t, "/readyz", nil); code != 200 {
		t.Fatalf("readyz after restart: %d\n%s", code, d2.stderr)
	}
	if el := time.Since(start2); el > 5*time.Second {
		t.Errorf("restart took %s", el)
	}
	if res := d2.resolve(t, "redis:v1.0"); res.Resolved != "github.com/acme/tpl/redis:v1.0.9" {
		t.Errorf("after restart: resolved %s", res.Resolved)
	}
	var regs api.RegistryList
	d2.get(t, "/v1/registries", &regs)
	if st := regs.Registries[0].Status; st != api.StatusCached && st != api.StatusStale {
		t.Errorf("status after restart with GitHub down: %s, want cached or stale", st)
	}
	d2.stop()

	for _, log := range []string{d.stderr.String(), d2.stderr.String()} {
		for _, secret := range []string{ghToken, adminToken} {
			if strings.Contains(log, secret) {
				t.Errorf("a token appears in the logs:\n%s", log)
			}
		}
	}
}

func mapFS(t testing.TB, files map[string]string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	for name, content := range files {
		m[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	return m
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--version"}, env{stdout: &out, stderr: io.Discard, getenv: func(string) string { return "" }})
	if err != nil || !strings.HasPrefix(out.String(), "registryd ") || !strings.Contains(out.String(), "go1.") {
		t.Errorf("registryd --version = %v %q, want \"registryd <version> (... go1.N)\"", err, out.String())
	}
}
