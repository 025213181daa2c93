package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
)

// TestPushResolve pushes versions of a local registry to an OCI registry
// on loopback with dm push and resolves them from it as any registry:
// --registry-oci under the same prefix, and --registry oci://, with the
// same content digest as the directory's.
func TestPushResolve(t *testing.T) {
	dir := writeTree(t, fixture)
	reg := ocitest.New(t, ocitest.Options{})
	target := reg.URL + "/acme/tpl"
	local := []string{"--registry-dir", "github.com/acme/tpl=" + dir}

	var first pushResult
	for _, ref := range []string{"redis:v1.0", "redis:v1.1.0", "redis:v2.0.0-rc.1", "apps/shop:v2.1"} {
		r := dmRun(t, nil, append(local, "--plain-http", "-o", "json", "push", ref, target)...)
		if r.code != 0 {
			t.Fatalf("push %s: %d %s", ref, r.code, r.stderr)
		}
		var pr pushResult
		if err := json.Unmarshal([]byte(r.stdout), &pr); err != nil || !pr.Pushed || !strings.HasPrefix(pr.ManifestDigest, "sha256:") {
			t.Fatalf("push %s: %s %v", ref, r.stdout, err)
		}
		if first.Ref == "" {
			first = pr
		}
	}
	if first.Repository != reg.Host+"/acme/tpl/redis" || first.Tag != "v1.0.3" {
		t.Errorf("pushed %+v", first)
	}
	// Again: nothing pushed, the same manifest digest.
	r := dmRun(t, nil, append(local, "--plain-http", "push", "redis:v1.0", target)...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != first.Repository+":v1.0.3@"+first.ManifestDigest || !strings.Contains(r.stderr, "nothing pushed") {
		t.Fatalf("second push: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Without --plain-http, a plain-HTTP registry is refused.
	if r := dmRun(t, nil, append(local, "push", "redis:v1.0", target)...); r.code != 1 || !strings.Contains(r.stderr, "plain HTTP") {
		t.Errorf("without --plain-http: %d %s", r.code, r.stderr)
	}

	want := dmRun(t, nil, append(local, "-o", "json", "resolve", "redis:v1.0")...)
	var wantRes, gotRes struct {
		Resolved, Digest string
	}
	json.Unmarshal([]byte(want.stdout), &wantRes)
	viaOCI := []string{"--registry-oci", "github.com/acme/tpl=" + target, "--plain-http"}
	got := dmRun(t, nil, append(viaOCI, "-o", "json", "resolve", "redis:v1.0")...)
	if got.code != 0 {
		t.Fatalf("resolve from OCI: %s", got.stderr)
	}
	json.Unmarshal([]byte(got.stdout), &gotRes)
	if gotRes != wantRes || wantRes.Digest == "" {
		t.Errorf("from OCI %+v, from the directory %+v", gotRes, wantRes)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"resolve", "redis"}, "github.com/acme/tpl/redis:v1.1.0\n"},
		{[]string{"resolve", "redis:v2.0.0-rc.1"}, "github.com/acme/tpl/redis:v2.0.0-rc.1\n"},
		{[]string{"resolve", "apps/shop:v2.1"}, "github.com/acme/tpl/apps/shop:v2.1.0\n"},
		{[]string{"resolve", "redis@" + wantRes.Digest}, "github.com/acme/tpl/redis:v1.0.3\n"},
		{[]string{"show", "redis:v1.0"}, "kind: b\n"},
	} {
		r := dmRun(t, nil, append(viaOCI, tt.args...)...)
		if r.code != 0 || r.stdout != tt.want {
			t.Errorf("%v: %d %q %s", tt.args, r.code, r.stdout, r.stderr)
		}
	}
	// The registry alone, named by its URL.
	byURL := dmRun(t, nil, "--registry", reg.URL+"/acme/tpl", "--plain-http", "resolve", "redis:v1")
	if byURL.code != 0 || byURL.stdout != "127.0.0.1/acme/tpl/redis:v1.0.3\n" {
		t.Errorf("--registry oci://: %d %q %s", byURL.code, byURL.stdout, byURL.stderr)
	}
	if r := dmRun(t, nil, append(viaOCI, "resolve", "redis:v1.2")...); r.code != 1 || !strings.Contains(r.stderr, "available: v1.0.3, v1.1.0, v2.0.0-rc.1") {
		t.Errorf("missing version: %d %s", r.code, r.stderr)
	}
}

// TestMirror mirrors a registry directory: every version once, a second
// run pushes nothing and says so, and a tag holding other content than
// the source's version is an error naming it, never overwritten.
func TestMirror(t *testing.T) {
	dir := writeTree(t, fixture)
	reg := ocitest.New(t, ocitest.Options{NoCatalog: true})
	target := reg.URL + "/mirror"
	local := []string{"--registry-dir", "github.com/acme/tpl=" + dir, "--plain-http"}

	r := dmRun(t, nil, append(local, "mirror", "github.com/acme/tpl", target)...)
	if r.code != 0 || !strings.Contains(r.stdout, "pushed 6 versions") {
		t.Fatalf("mirror: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if strings.Count(r.stderr, "pushed ") != 6 {
		t.Errorf("progress: %s", r.stderr)
	}
	r = dmRun(t, nil, append(local, "mirror", "github.com/acme/tpl", target)...)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to push") || !strings.Contains(r.stdout, "all 6 versions") {
		t.Fatalf("second mirror: %d %q %s", r.code, r.stdout, r.stderr)
	}
	// The mirror resolves as its source does, through the index
	// artifact (the registry has no catalog).
	for _, ref := range []string{"redis:v1.0", "apps/shop:v2"} {
		a := dmRun(t, nil, append(local, "-o", "json", "resolve", ref)...)
		b := dmRun(t, nil, "--registry-oci", "github.com/acme/tpl="+target, "--plain-http", "-o", "json", "resolve", ref)
		var ar, br struct{ Resolved, Digest string }
		json.Unmarshal([]byte(a.stdout), &ar)
		json.Unmarshal([]byte(b.stdout), &br)
		if a.code != 0 || b.code != 0 || ar != br || ar.Digest == "" {
			t.Errorf("%s: directory %+v, mirror %+v %s", ref, ar, br, b.stderr)
		}
	}

	// An OCI registry mirrors to another; a path of one segment needs a
	// prefix of its own, and says so.
	if r := dmRun(t, nil, "--plain-http", "mirror", target, reg.URL+"/second"); r.code != 2 || !strings.Contains(r.stderr, "--registry-oci PREFIX=") {
		t.Errorf("mirror of oci://HOST/PATH: %d %s", r.code, r.stderr)
	}
	r = dmRun(t, nil, "--plain-http", "--registry-oci", "github.com/acme/tpl="+target, "mirror", "github.com/acme/tpl", reg.URL+"/second")
	if r.code != 0 || !strings.Contains(r.stdout, "pushed 6 versions") {
		t.Fatalf("OCI to OCI: %d %q %s", r.code, r.stdout, r.stderr)
	}

	// A version that changed under the same number.
	if err := os.WriteFile(filepath.Join(dir, "redis/v1.0.3/redis.jinja"), []byte("kind: changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = dmRun(t, nil, append(local, "mirror", "github.com/acme/tpl", target)...)
	if r.code != 1 || !strings.Contains(r.stderr, reg.Host+"/mirror/redis:v1.0.3") || !strings.Contains(r.stderr, "never overwritten") {
		t.Fatalf("changed version: %d %q %s", r.code, r.stdout, r.stderr)
	}
	b := dmRun(t, nil, "--registry-oci", "github.com/acme/tpl="+target, "--plain-http", "show", "redis:v1.0.3")
	if b.stdout != "kind: b\n" {
		t.Errorf("the tag was overwritten: %q", b.stdout)
	}
	if r := dmRun(t, nil, append(local, "mirror", "github.com/acme/tpl", "https://x")...); r.code != 2 {
		t.Errorf("bad target: %d %s", r.code, r.stderr)
	}
}
