package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestServerCredentials: dm --server sends --server-token (else
// DM_SERVER_TOKEN, else the kubeconfig context's token) and the namespace
// (-n, else the context's) with every request, so that registryd shows
// it the namespace's registries it may get.
func TestServerCredentials(t *testing.T) {
	var mu sync.Mutex
	var auth, ns string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth, ns = r.Header.Get("Authorization"), r.URL.Query().Get("namespace")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"resolved":"github.com/acme/tpl/x:v1.0.0","requested":"x:v1","registry":"github.com/acme/tpl","collection":"","template":"x","version":"v1.0.0","digest":"sha256:00","path":"x/v1.0.0","files":[]}`))
	}))
	defer hs.Close()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: from-kubeconfig}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ctx-ns}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		vars             map[string]string
		args             []string
		wantAuth, wantNS string
	}{
		{"flag", nil, []string{"--server-token", "flag-token", "-n", "team-a"}, "Bearer flag-token", "team-a"},
		{"environment", map[string]string{"DM_SERVER_TOKEN": "env-token"}, []string{"-n", "team-a"}, "Bearer env-token", "team-a"},
		{"kubeconfig", nil, []string{"--kubeconfig", kubeconfig}, "Bearer from-kubeconfig", "ctx-ns"},
		{"kubeconfig, -n", nil, []string{"--kubeconfig", kubeconfig, "-n", "team-b"}, "Bearer from-kubeconfig", "team-b"},
		{"none", nil, []string{"--kubeconfig", filepath.Join(t.TempDir(), "none")}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := dmRun(t, tt.vars, append([]string{"resolve", "x:v1", "--server", hs.URL}, tt.args...)...)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if auth != tt.wantAuth || ns != tt.wantNS {
				t.Errorf("sent Authorization %q, namespace %q; want %q, %q", auth, ns, tt.wantAuth, tt.wantNS)
			}
		})
	}
}

func TestTokenSafe(t *testing.T) {
	for url, want := range map[string]bool{
		"https://registry.example.com": true, "http://127.0.0.1:8080": true, "http://localhost:8080": true,
		"http://[::1]:8080": true, "http://registryd.dm-system.svc": false, "http://10.0.0.1": false, "::": false,
	} {
		if got := tokenSafe(url); got != want {
			t.Errorf("tokenSafe(%q) = %v, want %v", url, got, want)
		}
	}
}
