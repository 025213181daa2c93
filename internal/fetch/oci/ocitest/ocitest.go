// Package ocitest runs an OCI registry on loopback for tests and
// benchmarks: go-containerregistry's implementation of the distribution
// API (pkg/registry), in-process, with the referrers API on or off, the
// catalog API on or off, basic authentication, and a count of requests
// by endpoint.
package ocitest

import (
	"context"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
	"github.com/dmhq/dm/internal/index"
)

// Options configure a Registry.
type Options struct {
	// NoReferrers turns the referrers API off: clients fall back to the
	// sha256-<hex> tag scheme.
	NoReferrers bool
	// NoCatalog answers the catalog API 404, as ghcr.io and ECR do.
	NoCatalog bool
	// Username and Password, if set, are required (HTTP basic
	// authentication, as distribution's htpasswd does).
	Username, Password string
}

// Registry is a running registry.
type Registry struct {
	// Host is its 127.0.0.1:PORT.
	Host string
	// URL is oci://Host.
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	requests map[string]int
	total    int
	// fail, if set, answers a request instead of the registry.
	fail func(w http.ResponseWriter, r *http.Request) bool
}

// New starts a registry on loopback, stopped when t ends.
func New(t testing.TB, opts Options) *Registry {
	t.Helper()
	reg := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(!opts.NoReferrers))
	r := &Registry{requests: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests[oci.Endpoint(req)]++
		r.total++
		fail := r.fail
		r.mu.Unlock()
		if fail != nil && fail(w, req) {
			return
		}
		if opts.Username != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != opts.Username || p != opts.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if opts.NoCatalog && strings.HasSuffix(req.URL.Path, "/_catalog") {
			http.Error(w, `{"errors":[{"code":"UNSUPPORTED","message":"catalog is not served"}]}`, http.StatusNotFound)
			return
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	u, _ := url.Parse(r.srv.URL)
	r.Host = u.Host
	r.URL = "oci://" + u.Host
	return r
}

// Fail makes f answer requests first: it returns true when it answered.
// nil restores the registry.
func (r *Registry) Fail(f func(w http.ResponseWriter, req *http.Request) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = f
}

// Requests returns the requests so far by endpoint ("ping", "catalog",
// "tags", "manifest", "blob", "referrers", "upload", "other") and in all.
func (r *Registry) Requests() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.requests))
	for k, v := range r.requests {
		out[k] = v
	}
	return out, r.total
}

// Reset zeroes the counts.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = map[string]int{}
	r.total = 0
}

// PushFS pushes every version of the registry directory fsys with p, as
// dm mirror would (version directories naming one version twice, v1
// beside v1.0.0, are pushed once), lists its templates in the index
// artifact, and returns the registry's index. Versions without a
// template file are left out.
func PushFS(t testing.TB, p *oci.Pusher, fsys fs.FS) *index.Snapshot {
	t.Helper()
	ctx := context.Background()
	tree, err := fetch.NewLocal(fsys).Tree(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := fs.ReadFile(fsys, index.MetadataFile)
	snap := index.Build("x.io/a/b", tree, meta)
	var names []string
	for _, tm := range snap.AllTemplates() {
		pushed := map[string]bool{}
		for _, v := range tm.Versions {
			if v.Problem != "" || pushed[v.Semver] {
				continue
			}
			pushed[v.Semver] = true
			var cs []artifact.Content
			for _, f := range v.Files {
				b, err := fs.ReadFile(fsys, v.Path+"/"+f.Path)
				if err != nil {
					t.Fatal(err)
				}
				cs = append(cs, artifact.Content{Path: f.Path, Data: b})
			}
			packed, err := artifact.Pack(artifact.Metadata{Name: tm.Name, Collection: tm.Collection, Version: v.Semver}, cs)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Push(ctx, packed, tm.Collection, tm.Name, v.Semver); err != nil {
				t.Fatal(err)
			}
		}
		names = append(names, strings.TrimPrefix(tm.Collection+"/"+tm.Name, "/"))
	}
	if _, err := p.AddToIndex(ctx, names...); err != nil {
		t.Fatal(err)
	}
	return snap
}

// Oras returns the oras command that hack/kube/build.sh builds (make
// testenv): $DM_ORAS, else oras in $DM_KUBE_BIN, else the repository's
// .testenv/bin. It fails the test when there is none; with -short it
// skips it instead.
func Oras(t testing.TB) string {
	t.Helper()
	var cands []string
	if p := os.Getenv("DM_ORAS"); p != "" {
		cands = append(cands, p)
	}
	if d := os.Getenv("DM_KUBE_BIN"); d != "" {
		cands = append(cands, filepath.Join(d, "oras"))
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && filepath.Base(dir) != "oras" {
				if _, err := os.Stat(filepath.Join(dir, ".testenv")); err == nil {
					cands = append(cands, filepath.Join(dir, ".testenv", "bin", "oras"))
					break
				}
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			p, _ := filepath.Abs(c)
			return p
		}
	}
	if testing.Short() {
		t.Skip("oras is not built (make testenv builds it); -short skips the interoperability test")
	}
	t.Fatalf("the OCI interoperability test needs oras: none at %v (build it with make testenv, or hack/kube/build.sh .testenv/bin oras)", cands)
	return ""
}
