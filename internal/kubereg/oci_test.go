package kubereg

import (
	"testing"
	"time"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// TestWantOCI: a Registry's spec.oci is served only from a host registryd
// may reach, under a prefix of its own, with its credential from the
// object's own namespace; spec.mirror likewise.
func TestWantOCI(t *testing.T) {
	w := &Watcher{opts: Options{Namespace: "dm-system", GitHubAPI: "https://ghe/api/v3/", Refresh: time.Hour,
		AllowedOCIHosts: []string{"registry.internal:5000", "ghcr.io"}}, static: map[string]bool{}}
	w.secrets = newSecretWatches(w)
	ok := &v1alpha1.RegistryOCI{URL: "oci://registry.internal:5000/acme/templates", PlainHTTP: true}
	tests := []struct {
		name    string
		spec    v1alpha1.RegistrySpec
		reason  string
		stalled bool
		secret  string
	}{
		{"served", v1alpha1.RegistrySpec{OCI: ok, Prefix: "github.com/acme/templates"}, "", false, ""},
		{"no prefix", v1alpha1.RegistrySpec{OCI: ok}, "InvalidSpec", true, ""},
		{"github and oci", v1alpha1.RegistrySpec{OCI: ok, Prefix: "a.io/b/c", GitHub: v1alpha1.RegistryGitHub{Owner: "a", Repo: "b"}}, "InvalidSpec", true, ""},
		{"neither", v1alpha1.RegistrySpec{Prefix: "a.io/b/c"}, "InvalidSpec", true, ""},
		{"host not allowed", v1alpha1.RegistrySpec{OCI: &v1alpha1.RegistryOCI{URL: "oci://169.254.169.254/x"}, Prefix: "a.io/b/c"}, "HostNotAllowed", true, ""},
		{"bad url", v1alpha1.RegistrySpec{OCI: &v1alpha1.RegistryOCI{URL: "oci://ghcr.io/Upper"}, Prefix: "a.io/b/c"}, "InvalidSpec", true, ""},
		{"credentials not watched yet", v1alpha1.RegistrySpec{OCI: &v1alpha1.RegistryOCI{URL: "oci://ghcr.io/acme/t", CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "creds"}}, Prefix: "a.io/b/c"}, "SecretNotFound", false, "ns/creds"},
		{"mirror not allowed", v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "a", Repo: "b"}, Mirror: &v1alpha1.RegistryOCI{URL: "oci://evil.example/x"}}, "HostNotAllowed", true, ""},
		{"mirror credentials", v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "a", Repo: "b"}, Mirror: &v1alpha1.RegistryOCI{URL: "oci://ghcr.io/a/b", CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "push"}}}, "SecretNotFound", false, "ns/push"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needed := map[string]bool{}
			d, pr := w.want(object{key: "Registry/ns/r", namespace: "ns", name: "r", spec: tt.spec}, map[string]string{}, needed)
			switch {
			case tt.reason == "" && pr != nil:
				t.Fatalf("problem %+v", pr)
			case tt.reason != "" && (pr == nil || pr.reason != tt.reason || pr.stalled != tt.stalled):
				t.Fatalf("problem %+v, want %s (stalled %v)", pr, tt.reason, tt.stalled)
			}
			if tt.secret != "" && !needed[tt.secret] {
				t.Errorf("Secret %s not watched: %v", tt.secret, needed)
			}
			if pr == nil {
				o := d.spec.OCI
				if o == nil || o.URL != ok.URL || !o.PlainHTTP || string(o.DockerConfig) != "{}" || d.spec.GitHub != nil || d.prefix != "github.com/acme/templates" {
					t.Errorf("desired %+v", d.spec)
				}
				// The same object again is the same registry; a rotated
				// credential is the same source.
				e := d
				eo := *o
				eo.DockerConfig = []byte(`{"auths":{}}`)
				e.spec.OCI = &eo
				if !d.same(d) || d.same(e) || !d.sameSource(e) {
					t.Errorf("same %v, with another credential %v, same source %v", d.same(d), d.same(e), d.sameSource(e))
				}
			}
		})
	}
}
