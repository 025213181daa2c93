package oci_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/index"
)

const example = "../../../registry-example"

// exampleIndex indexes the example registry from its directory.
func exampleIndex(t *testing.T) *index.Snapshot {
	t.Helper()
	tree, err := fetch.NewLocal(os.DirFS(example)).Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := os.ReadFile(filepath.Join(example, index.MetadataFile))
	return index.Build("github.com/acme/templates", tree, meta)
}

func pack(t *testing.T, tm *index.Template, v *index.Version, change func([]artifact.Content)) *artifact.Packed {
	t.Helper()
	var files []artifact.Content
	for _, f := range v.Files {
		b, err := os.ReadFile(filepath.Join(example, v.Path, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, artifact.Content{Path: f.Path, Data: b})
	}
	if change != nil {
		change(files)
	}
	p, err := artifact.Pack(artifact.Metadata{Name: tm.Name, Collection: tm.Collection, Version: v.Semver}, files)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pushAll pushes every version of the example registry to loc.
func pushAll(t *testing.T, p *oci.Pusher, snap *index.Snapshot) int {
	t.Helper()
	n := 0
	var names []string
	for _, tm := range snap.AllTemplates() {
		for _, v := range tm.Versions {
			if v.Name != v.Semver {
				continue // v1 beside v1.0.0 would be the same tag
			}
			res, err := p.Push(t.Context(), pack(t, tm, v, nil), tm.Collection, tm.Name, v.Semver)
			if err != nil {
				t.Fatalf("push %s: %v", v.Ref, err)
			}
			if !res.Pushed {
				t.Fatalf("push %s: not pushed", v.Ref)
			}
			n++
		}
		names = append(names, strings.TrimPrefix(tm.Collection+"/"+tm.Name, "/"))
	}
	if _, err := p.AddToIndex(t.Context(), names...); err != nil {
		t.Fatal(err)
	}
	return n
}

func newSource(t *testing.T, url string, o func(*oci.SourceOptions)) *oci.Source {
	t.Helper()
	opts := oci.SourceOptions{Options: oci.Options{URL: url, PlainHTTP: true, Keychain: authn.NewMultiKeychain()}}
	if o != nil {
		o(&opts)
	}
	s, err := oci.NewSource(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPushList pushes the example registry and lists it back: every
// version has the content digest its directory has, every file reads back
// as it was, and an unchanged registry lists as unchanged.
func TestPushList(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{})
	url := reg.URL + "/acme/templates"
	p, err := oci.NewPusher(oci.Options{URL: url, PlainHTTP: true, Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	local := exampleIndex(t)
	n := pushAll(t, p, local)

	cache := t.TempDir()
	src := newSource(t, url, func(o *oci.SourceOptions) { o.CacheDir = cache })
	reg.Reset()
	tree, err := src.Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req, total := reg.Requests()
	templates := len(local.AllTemplates())
	// One ping, one catalog, one tags list per template, one manifest
	// and one config per version.
	if req["catalog"] != 1 || req["tags"] != templates || req["manifest"] != n || req["blob"] != n {
		t.Errorf("cold listing: %v (%d templates, %d versions)", req, templates, n)
	}
	t.Logf("cold listing of %d versions: %d requests %v", n, total, req)
	snap := index.Build("github.com/acme/templates", tree, nil)
	if snap.Versions != n {
		t.Errorf("listed %d versions, pushed %d", snap.Versions, n)
	}
	for _, tm := range local.AllTemplates() {
		got, ok := snap.Template(tm.Collection, tm.Name)
		if !ok {
			t.Errorf("%s/%s not listed", tm.Collection, tm.Name)
			continue
		}
		for _, v := range tm.Versions {
			if v.Name != v.Semver {
				continue
			}
			var gv *index.Version
			for _, w := range got.Versions {
				if w.Semver == v.Semver {
					gv = w
				}
			}
			if gv == nil || gv.Digest != v.Digest || gv.Template != v.Template || gv.Schema != v.Schema {
				t.Errorf("%s: listed %+v", v.Ref, gv)
			}
		}
	}

	// Every file reads back; a version's layer is fetched once.
	reg.Reset()
	for _, e := range tree.Entries {
		b, err := src.Blob(t.Context(), e.SHA)
		if err != nil {
			t.Fatalf("%s: %v", e.Path, err)
		}
		if fetch.BlobSHA(b) != e.SHA {
			t.Fatalf("%s: wrong content", e.Path)
		}
	}
	if req, _ := reg.Requests(); req["blob"] > n {
		t.Errorf("reading every file: %v, want at most one layer per version (%d)", req, n)
	}

	// A refresh of an unchanged registry.
	reg.Reset()
	again, err := src.Tree(t.Context(), tree)
	if !errors.Is(err, derrors.NotModified) || again != tree {
		t.Fatalf("refresh: %v", err)
	}
	if req, _ := reg.Requests(); req["blob"] != 0 {
		t.Errorf("warm refresh fetched blobs: %v", req)
	}

	// A new source over the same cache directory (a restarted process)
	// reads configs and layers from its disk.
	reg.Reset()
	src2 := newSource(t, url, func(o *oci.SourceOptions) { o.CacheDir = cache })
	tree2, err := src2.Tree(t.Context(), nil)
	if err != nil || tree2.Version != tree.Version {
		t.Fatalf("restarted: %v", err)
	}
	for _, e := range tree2.Entries {
		if _, err := src2.Blob(t.Context(), e.SHA); err != nil {
			t.Fatal(err)
		}
	}
	if req, _ := reg.Requests(); req["blob"] != 0 {
		t.Errorf("restarted over the cache: %v, want no blob requests", req)
	}
}

// TestPushIdempotent: pushing the same version again pushes nothing and
// gives the same manifest digest; other content under the tag is a
// conflict, never an overwrite.
func TestPushIdempotent(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{})
	p, _ := oci.NewPusher(oci.Options{URL: reg.URL + "/t", PlainHTTP: true, Keychain: authn.NewMultiKeychain()})
	local := exampleIndex(t)
	tm, _ := local.Template("", "redis")
	v := tm.Versions[len(tm.Versions)-1]
	first, err := p.Push(t.Context(), pack(t, tm, v, nil), "", tm.Name, v.Semver)
	if err != nil || !first.Pushed {
		t.Fatalf("first push: %+v %v", first, err)
	}
	second, err := p.Push(t.Context(), pack(t, tm, v, nil), "", tm.Name, v.Semver)
	if err != nil || second.Pushed || second.ManifestDigest != first.ManifestDigest {
		t.Fatalf("second push: %+v %v", second, err)
	}
	other := pack(t, tm, v, func(fs []artifact.Content) { fs[0].Data = append(fs[0].Data, '\n') })
	_, err = p.Push(t.Context(), other, "", tm.Name, v.Semver)
	var ce *oci.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, derrors.Conflict) || ce.Have != v.Digest || ce.Want != other.Digest {
		t.Fatalf("conflicting push: %v", err)
	}
	if !strings.Contains(err.Error(), reg.Host+"/t/redis:"+v.Semver) {
		t.Errorf("conflict does not name the tag: %v", err)
	}
	// Still the first content.
	have, digest, err := p.Existing(t.Context(), "", tm.Name, v.Semver)
	if err != nil || have != v.Digest || digest != first.ManifestDigest {
		t.Errorf("after the refused push: %s %s %v", have, digest, err)
	}
	// Upper case names cannot be OCI repositories.
	if _, err := p.Push(t.Context(), other, "", "Redis", v.Semver); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("upper case: %v", err)
	}
}

// TestNoCatalog: a registry without the catalog API is listed from the
// index artifact dm push writes, and says what is missing without it.
func TestNoCatalog(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{NoCatalog: true})
	url := reg.URL + "/acme/templates"
	src := newSource(t, url, nil)
	if _, err := src.Tree(t.Context(), nil); !errors.Is(err, derrors.NotFound) || !strings.Contains(err.Error(), oci.IndexTag) {
		t.Fatalf("no index: %v", err)
	}
	p, _ := oci.NewPusher(oci.Options{URL: url, PlainHTTP: true, Keychain: authn.NewMultiKeychain()})
	n := pushAll(t, p, exampleIndex(t))
	tree, err := src.Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := index.Build("x.io/a/b", tree, nil).Versions; got != n {
		t.Errorf("listed %d of %d versions", got, n)
	}
	if changed, err := p.AddToIndex(t.Context(), "redis"); changed || err != nil {
		t.Errorf("adding a listed template again: %v %v", changed, err)
	}
}

// TestAuth: a registry that wants credentials refuses anonymous reads
// with a clear error and serves the credential of a Docker configuration
// (a Secret's .dockerconfigjson) or the Docker configuration file.
func TestAuth(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{Username: "alice", Password: "s3cret"})
	url := reg.URL + "/acme/templates"
	anon := newSource(t, url, nil)
	_, err := anon.Tree(t.Context(), nil)
	if !errors.Is(err, derrors.Unauthorized) {
		t.Fatalf("anonymous: %v", err)
	}
	cfg := []byte(`{"auths":{"` + reg.Host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")) + `"}}}`)
	auth, err := oci.DockerConfigAuth(cfg, reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := oci.NewPusher(oci.Options{URL: url, PlainHTTP: true, Auth: auth})
	tm, _ := exampleIndex(t).Template("", "redis")
	if _, err := p.Push(t.Context(), pack(t, tm, tm.Versions[0], nil), "", "redis", tm.Versions[0].Semver); err != nil {
		t.Fatal(err)
	}
	withSecret := newSource(t, url, func(o *oci.SourceOptions) { o.Auth = auth })
	if _, err := withSecret.Tree(t.Context(), nil); err != nil {
		t.Fatalf("with the Secret's credential: %v", err)
	}
	// Docker's configuration file, as docker login writes it.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", dir)
	withFile := newSource(t, url, func(o *oci.SourceOptions) { o.Keychain = oci.DockerKeychain(dir) })
	if _, err := withFile.Tree(t.Context(), nil); err != nil {
		t.Fatalf("with Docker's configuration file: %v", err)
	}
	// A credential helper, as docker-credential-gcr or -ecr-login are:
	// Docker's configuration names it, and it answers on standard output.
	bin := t.TempDir()
	helper := "#!/bin/sh\nread server\n[ \"$1\" = get ] && echo '{\"ServerURL\":\"'$server'\",\"Username\":\"alice\",\"Secret\":\"s3cret\"}'\n"
	os.WriteFile(filepath.Join(bin, "docker-credential-dmtest"), []byte(helper), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	helperDir := t.TempDir()
	os.WriteFile(filepath.Join(helperDir, "config.json"), []byte(`{"credHelpers":{"`+reg.Host+`":"dmtest"}}`), 0o600)
	withHelper := newSource(t, url, func(o *oci.SourceOptions) { o.Keychain = oci.DockerKeychain(helperDir) })
	if _, err := withHelper.Tree(t.Context(), nil); err != nil {
		t.Fatalf("with a credential helper: %v", err)
	}
	if strings.Contains((oci.Options{URL: url, Auth: auth}).String(), "s3cret") {
		t.Error("options print the credential")
	}
}

// TestPlainHTTP: plain HTTP only to a registry configured with it.
func TestPlainHTTP(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{})
	src := newSource(t, reg.URL+"/a", func(o *oci.SourceOptions) { o.PlainHTTP = false })
	_, err := src.Tree(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "plain HTTP") {
		t.Fatalf("without --plain-http: %v", err)
	}
	if _, total := reg.Requests(); total != 0 {
		t.Errorf("%d plain HTTP requests sent", total)
	}
}

// TestHostileRegistry: what a registry (or whoever can push to it)
// answers cannot make a listing lie: a tag holding another template's
// config, a layer holding other content than its config lists, and more
// tags than the bound are each refused, naming what.
func TestHostileRegistry(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{})
	url := reg.URL + "/r"
	p, _ := oci.NewPusher(oci.Options{URL: url, PlainHTTP: true, Keychain: authn.NewMultiKeychain()})
	local := exampleIndex(t)
	redis, _ := local.Template("", "redis")
	v := redis.Versions[len(redis.Versions)-1]
	good := pack(t, redis, v, nil)
	if _, err := p.Push(t.Context(), good, "", "redis", v.Semver); err != nil {
		t.Fatal(err)
	}
	// postgres's tag v9.9.9 holds redis's artifact.
	if err := p.PutManifest(t.Context(), "r/postgres", "v9.9.9", good.Manifest, artifact.ManifestMediaType,
		oci.Blob{Data: good.Config, MediaType: artifact.ConfigMediaType}, oci.Blob{Data: good.Layer, MediaType: artifact.LayerMediaType}); err != nil {
		t.Fatal(err)
	}
	// A version whose layer is not what its config lists.
	other := pack(t, redis, v, func(fs []artifact.Content) { fs[0].Data = []byte("evil") })
	var m bytes.Buffer
	m.Write(bytes.Replace(good.Manifest, []byte(good.LayerDigest), []byte(other.LayerDigest), 1))
	mb := bytes.Replace(m.Bytes(), []byte(`"size":`+itoa(len(good.Layer))), []byte(`"size":`+itoa(len(other.Layer))), 1)
	mb = bytes.Replace(mb, []byte(`"`+v.Semver+`"`), []byte(`"v8.0.0"`), 1)
	cfg := bytes.Replace(good.Config, []byte(`"`+v.Semver+`"`), []byte(`"v8.0.0"`), 1)
	mb = bytes.Replace(mb, []byte(good.ConfigDigest), []byte(artifact.Digest(cfg)), 1)
	if err := p.PutManifest(t.Context(), "s/redis", "v8.0.0", mb, artifact.ManifestMediaType,
		oci.Blob{Data: cfg, MediaType: artifact.ConfigMediaType}, oci.Blob{Data: other.Layer, MediaType: artifact.LayerMediaType}); err != nil {
		t.Fatal(err)
	}

	src := newSource(t, url, nil)
	tree, err := src.Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := index.Build("x.io/a/b", tree, nil)
	if _, ok := snap.Template("", "postgres"); ok {
		t.Error("a tag holding another template's artifact was listed")
	}
	bad := ""
	src2 := newSource(t, reg.URL+"/s", nil)
	tree2, err := src2.Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tree2.Entries {
		if strings.HasPrefix(e.Path, "redis/v8.0.0/") {
			bad = e.SHA
			if _, err := src2.Blob(t.Context(), e.SHA); err == nil || !strings.Contains(err.Error(), "s/redis:v8.0.0") {
				t.Errorf("%s from a layer that is not its config's: %v", e.Path, err)
			}
		}
	}
	if bad == "" {
		t.Fatal("v8.0.0 not listed")
	}

	bounded := newSource(t, url, func(o *oci.SourceOptions) { o.MaxEntries = 1 })
	var be *fetch.BoundError
	if _, err := bounded.Tree(t.Context(), nil); !errors.As(err, &be) || be.Bound != "entries" {
		t.Errorf("over the bound of tags: %v", err)
	}

	// A registry that fails is retried later, not taken for empty.
	reg.Fail(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	var re *fetch.RetryError
	if _, err := src.Tree(t.Context(), tree); !errors.As(err, &re) || !errors.Is(err, derrors.Unavailable) {
		t.Errorf("server error: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestBearer: a registry with token authentication (as ghcr.io and Docker
// Hub have it) is read and written with a token per repository, each of
// one scope, however many repositories there are; bad credentials and
// none are refused, naming the registry.
func TestBearer(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{Bearer: true, Username: "alice", Password: "s3cret"})
	url := reg.URL + "/acme/templates"
	auth := authn.FromConfig(authn.AuthConfig{Username: "alice", Password: "s3cret"})
	p, err := oci.NewPusher(oci.Options{URL: url, PlainHTTP: true, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	n := pushAll(t, p, exampleIndex(t))
	src := newSource(t, url, func(o *oci.SourceOptions) { o.Auth = auth })
	before := len(reg.Tokens())
	tree, err := src.Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := index.Build("x.io/a/b", tree, nil).Versions; got != n {
		t.Errorf("listed %d of %d versions", got, n)
	}
	if _, err := src.Blob(t.Context(), tree.Entries[0].SHA); err != nil {
		t.Fatal(err)
	}
	toks := reg.Tokens()
	for i, scopes := range toks {
		if len(scopes) != 1 {
			t.Errorf("token %d asked for %v: a token's scopes grow with the repositories", i+1, scopes)
		}
	}
	// One for the catalog, one per template repository.
	if got, want := len(toks)-before, 1+len(exampleIndex(t).AllTemplates()); got != want {
		t.Errorf("listing asked for %d tokens, want %d", got, want)
	}
	for _, a := range []authn.Authenticator{authn.Anonymous, authn.FromConfig(authn.AuthConfig{Username: "alice", Password: "wrong"})} {
		_, err := newSource(t, url, func(o *oci.SourceOptions) { o.Auth = a }).Tree(t.Context(), nil)
		if !errors.Is(err, derrors.Unauthorized) || !strings.Contains(err.Error(), reg.Host) {
			t.Errorf("refused credentials: %v", err)
		}
	}
}

// TestETags: against a registry that honours If-None-Match, an unchanged
// refresh reads no manifest body: each tag is answered 304.
func TestETags(t *testing.T) {
	reg := ocitest.New(t, ocitest.Options{ETags: true})
	url := reg.URL + "/acme/templates"
	p, _ := oci.NewPusher(oci.Options{URL: url, PlainHTTP: true, Keychain: authn.NewMultiKeychain()})
	n := pushAll(t, p, exampleIndex(t))
	var mu sync.Mutex
	status := map[int]int{}
	src := newSource(t, url, func(o *oci.SourceOptions) {
		o.OnRequest = func(endpoint string, code int) {
			if endpoint == "manifest" {
				mu.Lock()
				status[code]++
				mu.Unlock()
			}
		}
	})
	tree, err := src.Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clear(status)
	mu.Unlock()
	if _, err := src.Tree(t.Context(), tree); !errors.Is(err, derrors.NotModified) {
		t.Fatalf("refresh: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if status[304] != n || status[200] != 0 {
		t.Errorf("refresh's manifest answers %v, want %d 304s", status, n)
	}
}
