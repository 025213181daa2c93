package dm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// The interface contracts of the issues are driven from outside by running
// the binaries; these tests build them and do the same.

func buildBinaries(t testing.TB) (registryd, dmBin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	dir, err := built.get()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "registryd"), filepath.Join(dir, "dm")
}

// testBinaries are registryd, dm, dm-helm and dm-helm-render, built by the first test that needs
// them and shared by the rest: linking both again for each of a dozen
// tests cost the package more than a minute on the 2-core machine.
type testBinaries struct {
	once sync.Once
	dir  string
	err  error
}

// built is the package's one testBinaries; TestMain removes its directory.
var built testBinaries

func (b *testBinaries) get() (string, error) {
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "dm-test-binaries-")
		if b.err != nil {
			return
		}
		// dm-helm and dm-helm-render beside dm, as make install puts them: dm
		// renders charts in them.
		// Without cgo, as make build and make install build them: with
		// cgo each OS thread of a sandbox worker is a pthread whose 8 MiB
		// stack counts toward the worker's address-space limit, and a
		// worker that happened to start a few threads met MaxMemory
		// running a template that allocates nothing.
		cmd := exec.Command("go", "build", "-o", b.dir+"/", "./cmd/registryd", "./cmd/dm", "./cmd/dm-helm", "./cmd/dm-helm-render", "./cmd/dm-sigstore")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	return b.dir, b.err
}

// remove deletes the binaries once the tests are done.
func (b *testBinaries) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startRegistryd runs the binary until the test ends (then SIGTERM, which
// must shut it down cleanly) and waits for /readyz.
func startRegistryd(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	url, _ := startRegistrydProcess(t, bin, env, args...)
	return url
}

// startRegistrydProcess is startRegistryd, also returning the process.
func startRegistrydProcess(t *testing.T, bin string, env []string, args ...string) (string, *os.Process) {
	t.Helper()
	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--addr", addr, "--cache-dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("registryd did not exit cleanly on SIGTERM: %v\n%s", err, logs.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("registryd did not stop within 20s of SIGTERM")
		}
	})
	for i := 0; i < 200; i++ {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return "http://" + addr, cmd.Process
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("registryd not ready:\n%s", logs.String())
	return "", nil
}

func runDM(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DM_SERVER=")
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: not JSON: %s", url, b)
	}
	return resp.StatusCode, v
}

func TestContractLocal(t *testing.T) {
	t.Parallel()
	registryd, dm := buildBinaries(t)
	const prefix = "github.com/acme/templates"
	url := startRegistryd(t, registryd, nil, "--registry-dir", prefix+"=./registry-example")

	status, v := getJSON(t, url+"/v1/resolve?ref="+prefix+"/common/web:v1.2")
	if status != 200 || v["resolved"] != prefix+"/common/web:v1.2.3" || v["version"] != "v1.2.3" || v["digest"] == nil || v["files"] == nil {
		t.Errorf("resolve: %d %v", status, v)
	}
	for ref, want := range map[string]int{"redis:v1.9": 404, "redis:1": 400} {
		if status, v := getJSON(t, url+"/v1/resolve?ref="+ref); status != want || v["error"] == nil {
			t.Errorf("resolve %s: %d %v, want %d with error", ref, status, v, want)
		}
	}

	for _, args := range [][]string{
		{"--registry-dir", prefix + "=./registry-example", "resolve", "redis:v1"},
		{"--registry-dir", prefix + "=./registry-example", "--registry", "acme/templates/common", "resolve", "web:v1.2"},
		{"--server", url, "resolve", "redis:v1"},
	} {
		code, out, errOut := runDM(t, dm, args...)
		if code != 0 || (out != prefix+"/redis:v1.0.2\n" && out != prefix+"/common/web:v1.2.3\n") {
			t.Errorf("dm %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if code, out, errOut := runDM(t, dm, "--server", url, "resolve", "redis:v1.9"); code == 0 || out != "" || !strings.Contains(errOut, "not found") {
		t.Errorf("dm resolve failure: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	if code, _, errOut := runDM(t, dm, "lint", "registry-example"); code != 0 {
		t.Errorf("dm lint registry-example: exit %d: %s", code, errOut)
	}
	bad := t.TempDir()
	os.MkdirAll(filepath.Join(bad, "t", "v1"), 0o755)
	os.WriteFile(filepath.Join(bad, "t", "v1", "t.jinja"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(bad, "t", "v1", "t.py"), []byte("y"), 0o644)
	if code, _, _ := runDM(t, dm, "lint", bad); code != 1 {
		t.Errorf("dm lint with two template files: exit %d, want 1", code)
	}

	code, out, errOut := runDM(t, dm, "--registry-dir", prefix+"=./registry-example", "expand", "redis:v1", "--properties", "replicas=2", "-o", "json")
	var res struct {
		Config struct {
			Resources []map[string]any `json:"resources"`
		} `json:"config"`
		Layout     map[string]any `json:"layout"`
		References []any          `json:"references"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Config.Resources) == 0 || res.Layout["resources"] == nil || len(res.References) != 1 {
		t.Errorf("dm expand: exit %d, %s %s", code, out, errOut)
	}
	code, out, errOut = runDM(t, dm, "process", "-f", "registry-example/postgres/v1.0.0/postgres.yaml", "-p", "DATABASE_SERVICE_NAME=db", "-o", "json")
	if code != 0 || !strings.Contains(out, `"kind": "List"`) {
		t.Errorf("dm process: exit %d, %s %s", code, out, errOut)
	}
}

func TestContractGitHub(t *testing.T) {
	t.Parallel()
	registryd, _ := buildBinaries(t)
	repo := githubtest.NewRepo(t, "registry-example")
	srv := githubtest.New(map[string]string{"acme/templates": repo})
	defer srv.Close()
	srv.RequireToken("ghp_contracttoken")
	url := startRegistryd(t, registryd, []string{"GITHUB_TOKEN=ghp_contracttoken", "REGISTRYD_ADMIN_TOKEN=admintoken"},
		"--github", "acme/templates@main", "--github-api", srv.URL, "--refresh", "1h")
	if n := srv.Requests(); n > 3 {
		t.Errorf("cold index: %d GitHub requests, want at most 3", n)
	}
	if status, v := getJSON(t, url+"/v1/resolve?ref=github.com/acme/templates/redis:v1.1"); status != 200 || v["resolved"] != "github.com/acme/templates/redis:v1.1.0" {
		t.Fatalf("resolve: %d %v", status, v)
	}
	// A new version appears after an authorised refresh, which answers when done.
	githubtest.Commit(t, repo, map[string]string{"redis/v1.1.1/redis.jinja": "resources: []\n", "redis/v1.1.1/example.yaml": "resources: []\n"})
	refresh := func(token string) int {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/registries/github.com/acme/templates/refresh", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := refresh("wrong"); code != 401 {
		t.Errorf("refresh with a wrong token: %d, want 401", code)
	}
	if code := refresh("admintoken"); code != 200 {
		t.Fatalf("refresh: %d", code)
	}
	if _, v := getJSON(t, url+"/v1/resolve?ref=github.com/acme/templates/redis:v1.1"); v["resolved"] != "github.com/acme/templates/redis:v1.1.1" {
		t.Errorf("after refresh: %v", v)
	}
	srv.ResetCounts()
	if code := refresh("admintoken"); code != 200 || srv.Requests() != 1 || srv.Responses(304) != 1 {
		t.Errorf("unchanged refresh: %d, %d requests, %d answered 304", code, srv.Requests(), srv.Responses(304))
	}
	srv.ResetCounts()
	for i := 0; i < 5; i++ {
		getJSON(t, url+fmt.Sprintf("/v1/resolve?ref=github.com/acme/templates/redis:v1.%d", i%2))
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("resolves made %d GitHub requests, want 0", n)
	}
}

// TestContractCatalog drives the catalog's HTML routes and the tested
// examples in GET /v1/template as issue 8's interface contract states
// them, against the embedded registry-example.
func TestContractCatalog(t *testing.T) {
	t.Parallel()
	registryd, _ := buildBinaries(t)
	url := startRegistryd(t, registryd, nil)
	page := func(method, path, form string) (int, string, string) {
		t.Helper()
		var resp *http.Response
		var err error
		if method == "POST" {
			resp, err = http.Post(url+path, "application/x-www-form-urlencoded", strings.NewReader(form))
		} else {
			resp, err = http.Get(url + path)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	tests := []struct {
		method, path, form string
		status             int
		want               string
	}{
		{"GET", "/", "", 200, `href="/r/github.com/acme/templates"`},
		{"GET", "/search?q=redis", "", 200, `href="/t/github.com/acme/templates/redis"`},
		{"GET", "/t/github.com/acme/templates/redis:v1", "", 200, "github.com/acme/templates/redis:v1.0.2"},
		{"GET", "/t/github.com/acme/templates/redis", "", 200, "github.com/acme/templates/redis:v2.0.0"},
		{"GET", "/t/github.com/acme/templates/nope:v1", "", 404, "nope"},
		{"GET", "/t/github.com/acme/templates/redis:v1/diff?from=v1.1.0", "", 200, "v1.1.0 → v1.0.2"},
		{"POST", "/t/github.com/acme/templates/redis:v1/preview", "replicas=3", 200, "kind: Deployment"},
		{"POST", "/t/github.com/acme/templates/redis:v1/preview", "replicas=x", 422, "replicas"},
	}
	for _, tt := range tests {
		code, ct, body := page(tt.method, tt.path, tt.form)
		if code != tt.status || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, tt.want) {
			t.Errorf("%s %s: %d %s, want %d text/html with %q", tt.method, tt.path, code, ct, tt.status, tt.want)
		}
	}
	// The examples are tested in the background, soon after the index.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, v := getJSON(t, url+"/v1/template?ref=github.com/acme/templates/redis:v1")
		if ex, _ := v["example"].(map[string]any); ex != nil && ex["status"] == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/template has no tested example after 30s: %v", v["example"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
