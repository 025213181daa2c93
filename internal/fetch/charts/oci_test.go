package charts

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/dmhq/dm/internal/derrors"
)

// ociRegistry runs a registry (go-containerregistry's implementation of
// the distribution API) on loopback with the test chart pushed at
// charts/basic:1.0.0 by Helm's own registry client.
func ociRegistry(t *testing.T) (host string, requests *atomic.Int64) {
	t.Helper()
	requests = &atomic.Int64{}
	reg := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	host = u.Host

	p := packVersions(t, t.TempDir(), "1.0.0")["1.0.0"]
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(t.TempDir()+"/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(data, host+"/charts/basic:1.0.0"); err != nil {
		t.Fatal(err)
	}
	return host, requests
}

func TestOCI(t *testing.T) {
	host, requests := ociRegistry(t)
	ctx := context.Background()
	cache := t.TempDir()
	f := &Fetcher{AllowHosts: []string{host}, PlainHTTP: true, CacheDir: cache, RegistryConfig: t.TempDir() + "/config.json"}
	c, err := f.OCI(ctx, "oci://"+host+"/charts/basic:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(strings.NewReader(string(c.Data)))
	if err != nil || ch.Name() != "basic" || c.Name != "basic" || c.Version != "1.0.0" {
		t.Fatalf("pulled %s %s: %v %v", c.Name, c.Version, ch, err)
	}
	if _, err := os.Stat(cache + "/sha256-" + c.Digest + ".tgz"); err != nil {
		t.Errorf("not cached: %v", err)
	}

	tests := []struct {
		name string
		f    *Fetcher
		ref  string
		kind error
		want []string
		none bool
	}{
		{name: "missing tag", f: f, ref: "oci://" + host + "/charts/basic:9.9.9", kind: derrors.NotFound, want: []string{"charts/basic:9.9.9"}},
		{name: "no version", f: f, ref: "oci://" + host + "/charts/basic", kind: derrors.InvalidArgument, want: []string{"no version"}, none: true},
		{name: "not oci", f: f, ref: "https://" + host + "/charts/basic:1.0.0", kind: derrors.InvalidArgument, want: []string{"oci://HOST/PATH:VERSION"}, none: true},
		{name: "host not allowed", f: &Fetcher{PlainHTTP: true}, ref: "oci://" + host + "/charts/basic:1.0.0", kind: derrors.Forbidden, want: []string{host, "not among the allowed"}, none: true},
		{name: "too large", f: &Fetcher{AllowHosts: []string{host}, PlainHTTP: true, MaxBytes: 200, RegistryConfig: f.RegistryConfig}, ref: "oci://" + host + "/charts/basic:1.0.0", kind: derrors.LimitExceeded, want: []string{"charts/basic:1.0.0", "MaxBytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := requests.Load()
			_, err := tt.f.OCI(ctx, tt.ref)
			if !errors.Is(err, tt.kind) {
				t.Fatalf("error %v, want %v", err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tt.none && requests.Load() != before {
				t.Errorf("a request reached the registry")
			}
		})
	}
}
