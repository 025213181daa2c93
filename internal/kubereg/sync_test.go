package kubereg

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// TestWant: how an object's registry is to be served, or why it cannot be.
func TestWant(t *testing.T) {
	w := &Watcher{opts: Options{Namespace: "dm-system", GitHubAPI: "https://ghe/api/v3/", Refresh: time.Hour},
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
		{"taken prefix", v1alpha1.RegistrySpec{GitHub: gh}, map[string]string{"github.com/acme/tpl": "Registry/x/y"}, "", "PrefixConflict", true},
		{"secret not watched yet", v1alpha1.RegistrySpec{GitHub: gh, TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "s", Key: "k"}}, nil, "github.com/acme/tpl", "SecretNotFound", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claimed := tt.claimed
			if claimed == nil {
				claimed = map[string]string{}
			}
			needed := map[string]bool{}
			d, pr := w.want(object{key: "Registry/ns/r", namespace: "ns", spec: tt.spec}, claimed, needed)
			switch {
			case tt.reason == "" && pr != nil:
				t.Fatalf("problem %+v", pr)
			case tt.reason != "" && (pr == nil || pr.reason != tt.reason || pr.stalled != tt.stalled):
				t.Fatalf("problem %+v, want %s (stalled %v)", pr, tt.reason, tt.stalled)
			}
			if tt.prefix != "" && d.prefix != tt.prefix {
				t.Errorf("prefix %q, want %q", d.prefix, tt.prefix)
			}
			if pr == nil && (d.spec.GitHub.APIURL != "https://ghe/api/v3/" || d.refresh != time.Hour) {
				t.Errorf("defaults not applied: %+v, refresh %s", d.spec.GitHub, d.refresh)
			}
			if tt.spec.TokenSecretRef != nil && !needed["ns/s"] {
				t.Errorf("the Secret ns/s is not watched: %v", needed)
			}
		})
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
