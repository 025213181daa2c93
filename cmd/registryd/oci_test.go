package main

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/index"
)

// mirrored waits until the OCI registry at url lists n versions and
// returns its listing.
func mirrored(t *testing.T, url string, n int, d *daemon) *fetch.Tree {
	t.Helper()
	src, err := oci.NewSource(oci.SourceOptions{Options: oci.Options{URL: url, PlainHTTP: true, Keychain: authn.NewMultiKeychain()}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		tree, err := src.Tree(t.Context(), nil)
		got := 0
		if err == nil {
			got = index.Build("x.io/a/b", tree, nil).Versions
			if got == n {
				return tree
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror holds %d versions, want %d (%v)\n%s", got, n, err, d.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMirrorTo: registryd --mirror-to pushes every version of a registry
// to an OCI registry after its first index and each new version after
// the refresh that sees it; a registryd serving the mirror with
// --registry-oci resolves every version to the digest the source has.
func TestMirrorTo(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, fixture)
	reg := ocitest.New(t, ocitest.Options{})
	target := reg.URL + "/mirror"
	d := start(t, []string{"--registry-dir", "github.com/acme/tpl=" + dir, "--mirror-to", "github.com/acme/tpl=" + target, "--plain-http"}, nil)
	// v1.0.0 and v1.0.3 and v1.1.0 of redis, v2 (v2.0.0) and v2.1.0 of shop.
	mirrored(t, target, 5, d)

	// A new version is pushed after the refresh that sees it (a local
	// directory is watched).
	writeTree(t, dir, map[string]string{"redis/v1.2.0/redis.jinja": "kind: d\n", "redis/v1.2.0/example.yaml": "resources: []\n"})
	mirrored(t, target, 6, d)

	// The mirror, served as a registry, resolves as its source does.
	m := start(t, []string{"--registry-oci", "github.com/acme/tpl=" + target, "--plain-http"}, nil)
	for _, ref := range []string{"redis:v1.0", "redis:v1.2", "apps/shop:v2", "apps/shop:v2.1"} {
		var a, b api.Resolution
		if code := d.get(t, "/v1/resolve?ref="+ref, &a); code != 200 {
			t.Fatalf("source %s: %d", ref, code)
		}
		if code := m.get(t, "/v1/resolve?ref="+ref, &b); code != 200 {
			t.Fatalf("mirror %s: %d\n%s", ref, code, m.stderr)
		}
		if a.Resolved != b.Resolved || a.Digest != b.Digest || a.Digest == "" {
			t.Errorf("%s: source %s %s, mirror %s %s", ref, a.Resolved, a.Digest, b.Resolved, b.Digest)
		}
	}
	resp, err := http.Get(m.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`registryd_oci_requests_total{code="200",endpoint="manifest",registry="github.com/acme/tpl"}`,
		`registryd_oci_requests_total{code="200",endpoint="catalog",registry="github.com/acme/tpl"} `} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var reglist api.RegistryList
	m.get(t, "/v1/registries", &reglist)
	if len(reglist.Registries) != 1 || reglist.Registries[0].Kind != api.KindOCI || strings.Contains(reglist.Registries[0].Location, "@") {
		t.Errorf("registries: %+v", reglist.Registries)
	}

	// A version changed under its number is not pushed over the mirror's:
	// the mirror is refused and says which.
	os.WriteFile(filepath.Join(dir, "redis/v1.2.0/redis.jinja"), []byte("kind: changed\n"), 0o644)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(d.stderr.String(), "never overwritten") {
		if time.Now().After(deadline) {
			t.Fatalf("no conflict logged:\n%s", d.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(d.stderr.String(), reg.Host+"/mirror/redis:v1.2.0") {
		t.Errorf("the conflict does not name the tag:\n%s", d.stderr)
	}
}

// TestOCIConfigFile: the configuration file's oci entries and mirror_to.
func TestOCIConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "registryd.yaml")
	os.WriteFile(filepath.Join(dir, "docker.json"), []byte(`{"auths":{}}`), 0o600)
	os.WriteFile(cfg, []byte(`registries:
- oci: oci://127.0.0.1:5000/acme/templates
  prefix: github.com/acme/templates
  plain_http: true
  docker_config: docker.json
- dir: ./reg
  prefix: github.com/acme/local
  mirror_to: oci://127.0.0.1:5000/acme/local
  mirror_plain_http: true
`), 0o644)
	c, err := loadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := c.specs(func(string) string { return "" }, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].OCI == nil || !specs[0].OCI.PlainHTTP || string(specs[0].OCI.DockerConfig) != `{"auths":{}}` || specs[0].Prefix != "github.com/acme/templates" {
		t.Fatalf("specs: %v", specs)
	}
	mirrors, err := c.mirrorTargets(specs)
	if err != nil || mirrors["github.com/acme/local"].URL != "oci://127.0.0.1:5000/acme/local" || !mirrors["github.com/acme/local"].PlainHTTP {
		t.Fatalf("mirrors: %v %v", mirrors, err)
	}
	for _, bad := range []string{
		"registries:\n- oci: oci://h.io/a/b\n",
		"registries:\n- oci: https://h.io/a/b\n  prefix: a/b\n",
		"registries:\n- oci: oci://h.io/a/b\n  dir: x\n  prefix: a/b\n",
		"registries:\n- dir: x\n  prefix: a/b\n  mirror_to: https://x\n",
	} {
		c, err := decodeConfig([]byte(bad))
		if err == nil {
			var specs []api.RegistrySpec
			if specs, err = c.specs(func(string) string { return "" }, map[string]string{}); err == nil {
				_, err = c.mirrorTargets(specs)
			}
		}
		if !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
