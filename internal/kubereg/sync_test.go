package kubereg

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/index"
)

// TestWant: how an object's registry is to be served, or why it cannot be.
func TestWant(t *testing.T) {
	w := &Watcher{opts: Options{Namespace: "dm-system", GitHubAPI: "https://ghe/api/v3/", Refresh: time.Hour, MinRefresh: time.Minute,
		AllowedAPIs: []string{"https://ghe/api/v3/", "https://other.example/api"}},
		static: map[string]bool{"github.com/flag/reg": true}}
	w.secrets = newSecretWatches(w)
	gh := v1alpha1.RegistryGitHub{Owner: "acme", Repo: "tpl"}
	tests := []struct {
		name    string
		spec    v1alpha1.RegistrySpec
		claimed map[string]string
		prefix  string
		reason  string
		stalled bool
	}{
		{"default prefix", v1alpha1.RegistrySpec{GitHub: gh}, nil, "github.com/acme/tpl", "", false},
		{"own prefix", v1alpha1.RegistrySpec{GitHub: gh, Prefix: "example.com/a/b"}, nil, "example.com/a/b", "", false},
		{"bad prefix", v1alpha1.RegistrySpec{GitHub: gh, Prefix: "a/b/c/d/e"}, nil, "", "InvalidSpec", true},
		{"flag's prefix", v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "flag", Repo: "reg"}}, nil, "", "PrefixConflict", true},
		{"prefix served everywhere", v1alpha1.RegistrySpec{GitHub: gh}, map[string]string{"github.com/acme/tpl": "ClusterRegistry/y"}, "", "PrefixConflict", true},
		{"prefix taken in the namespace", v1alpha1.RegistrySpec{GitHub: gh}, map[string]string{"ns/github.com/acme/tpl": "Registry/ns/y"}, "", "PrefixConflict", true},
		{"prefix of another namespace", v1alpha1.RegistrySpec{GitHub: gh}, map[string]string{"other/github.com/acme/tpl": "Registry/other/y"}, "github.com/acme/tpl", "", false},
		{"API not allowed", v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "a", Repo: "b", APIURL: "http://169.254.169.254/"}}, nil, "", "APINotAllowed", true},
		{"secret not watched yet", v1alpha1.RegistrySpec{GitHub: gh, TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "s", Key: "k"}}, nil, "github.com/acme/tpl", "SecretNotFound", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claimed := tt.claimed
			if claimed == nil {
				claimed = map[string]string{}
			}
			needed := map[string]bool{}
			d, pr := w.want(object{key: "Registry/ns/r", namespace: "ns", name: "r", spec: tt.spec}, claimed, needed)
			switch {
			case tt.reason == "" && pr != nil:
				t.Fatalf("problem %+v", pr)
			case tt.reason != "" && (pr == nil || pr.reason != tt.reason || pr.stalled != tt.stalled):
				t.Fatalf("problem %+v, want %s (stalled %v)", pr, tt.reason, tt.stalled)
			}
			if tt.prefix != "" && d.prefix != tt.prefix {
				t.Errorf("prefix %q, want %q", d.prefix, tt.prefix)
			}
			if pr == nil && (d.spec.GitHub.APIURL != "https://ghe/api/v3/" || d.refresh != time.Hour || d.spec.Namespace != "ns" || d.spec.Object != "r") {
				t.Errorf("defaults not applied: %+v, refresh %s", d.spec.GitHub, d.refresh)
			}
			if tt.spec.TokenSecretRef != nil && !needed["ns/s"] {
				t.Errorf("the Secret ns/s is not watched: %v", needed)
			}
		})
	}
	// Another allowed API, with or without its trailing slash; a refresh
	// interval under the floor is raised to it, and said.
	d, pr := w.want(object{key: "Registry/ns/r", namespace: "ns", name: "r", spec: v1alpha1.RegistrySpec{
		GitHub:          v1alpha1.RegistryGitHub{Owner: "a", Repo: "b", APIURL: "https://other.example/api/"},
		RefreshInterval: &metav1.Duration{Duration: 20 * time.Millisecond}}}, map[string]string{}, map[string]bool{})
	if pr != nil || d.refresh != time.Minute || !strings.Contains(d.note, "below registryd's --min-refresh-interval") {
		t.Errorf("allowed API with a short interval: %+v, refresh %s, note %q", pr, d.refresh, d.note)
	}
	// A ClusterRegistry's Secrets are in registryd's namespace.
	needed := map[string]bool{}
	w.want(object{key: "ClusterRegistry/c", spec: v1alpha1.RegistrySpec{GitHub: gh, RefreshInterval: &metav1.Duration{Duration: time.Minute},
		WebhookSecretRef: &v1alpha1.SecretKeyReference{Name: "hook", Key: "k"}}}, map[string]string{}, needed)
	if !needed["dm-system/hook"] {
		t.Errorf("ClusterRegistry Secret not looked up in registryd's namespace: %v", needed)
	}
}

// TestResultName: results shard by registry and first digest digit, in
// names a ConfigMap may have.
func TestResultName(t *testing.T) {
	a := resultName("github.com/acme/tpl", "sha256:abc")
	b := resultName("github.com/acme/tpl", "sha256:0bc")
	c := resultName("github.com/acme/other", "sha256:abc")
	if a == b || a == c || !strings.HasSuffix(a, "-a") || len(a) > 63 {
		t.Errorf("names %s %s %s", a, b, c)
	}
	if k := resultKey("sha256:abc"); k != "sha256.abc" {
		t.Errorf("key %s", k)
	}
}

// TestCleanCache: the cache directories of registries served, and of the
// flags' registries, stay; the others (objects deleted while registryd
// was down) go.
func TestCleanCache(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"served", "flag", "orphan"} {
		if err := os.MkdirAll(filepath.Join(dir, "registries", id, "blobs"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w := &Watcher{opts: Options{Setup: api.Setup{CacheDir: dir}, StaticIdentities: []string{"flag"}, CacheGCDelay: time.Millisecond},
		log: slog.New(slog.DiscardHandler), running: map[string]*running{"Registry/ns/r": {g: &index.Registry{Name: "github.com/a/b", Identity: "served"}}}}
	w.cleanCacheAfter(context.Background())
	got, _ := os.ReadDir(filepath.Join(dir, "registries"))
	var names []string
	for _, e := range got {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "flag served" {
		t.Errorf("left %v, want flag and served", names)
	}
}
