// Package ocitest runs an OCI registry on loopback for tests and
// benchmarks: go-containerregistry's implementation of the distribution
// API (pkg/registry), in-process, with the referrers API on or off, the
// catalog API on or off, basic authentication, and a count of requests
// by endpoint.
package ocitest

import (
	"context"
	"fmt"
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
	// Bearer turns on token authentication, as ghcr.io, Docker Hub and
	// distribution's token auth have it: the registry challenges with a
	// realm (its own /token), the token service checks Username and
	// Password (if set) and grants the scopes asked for, and every
	// request needs a token of a scope that covers it.
	Bearer bool
	// ETags answers a manifest GET whose If-None-Match names the
	// manifest's digest 304, as distribution does.
	ETags bool
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
	// tokens are the scopes granted by token, with Bearer.
	tokens map[string][]string
}

// New starts a registry on loopback, stopped when t ends.
func New(t testing.TB, opts Options) *Registry {
	t.Helper()
	reg := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(!opts.NoReferrers))
	r := &Registry{requests: map[string]int{}, tokens: map[string][]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests[oci.Endpoint(req)]++
		r.total++
		fail := r.fail
		r.mu.Unlock()
		if fail != nil && fail(w, req) {
			return
		}
		if opts.Bearer && !r.bearer(w, req, opts) {
			return
		}
		if opts.ETags && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/manifests/") && req.Header.Get("If-None-Match") != "" {
			head := httptest.NewRecorder()
			hreq := req.Clone(req.Context())
			hreq.Method = http.MethodHead
			reg.ServeHTTP(head, hreq)
			if d := head.Header().Get("Docker-Content-Digest"); head.Code == http.StatusOK && strings.Trim(req.Header.Get("If-None-Match"), `"`) == d {
				w.Header().Set("ETag", `"`+d+`"`)
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		if opts.Username != "" && !opts.Bearer {
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

// bearer answers the token service and checks a request's token; it
// reports whether the request may go on to the registry.
func (r *Registry) bearer(w http.ResponseWriter, req *http.Request, opts Options) bool {
	if req.URL.Path == "/token" {
		if opts.Username != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != opts.Username || p != opts.Password {
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`, http.StatusUnauthorized)
				return false
			}
		}
		r.mu.Lock()
		tok := fmt.Sprintf("tok-%d", len(r.tokens)+1)
		r.tokens[tok] = req.URL.Query()["scope"]
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"token":%q,"expires_in":300}`, tok)
		return false
	}
	need := ""
	switch p := req.URL.Path; {
	case p == "/v2/" || p == "/v2":
	case strings.HasSuffix(p, "/_catalog"):
		need = "registry:catalog:*"
	default:
		repo := strings.TrimPrefix(p, "/v2/")
		for _, m := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
			if i := strings.LastIndex(repo, m); i >= 0 {
				repo = repo[:i]
				break
			}
		}
		action := "pull"
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			action = "push"
		}
		need = "repository:" + repo + ":" + action
	}
	tok, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	r.mu.Lock()
	granted, known := r.tokens[tok]
	r.mu.Unlock()
	if known && (need == "" || covers(granted, need)) {
		return true
	}
	challenge := fmt.Sprintf(`Bearer realm="http://%s/token",service="ocitest"`, req.Host)
	if need != "" {
		scope := need
		if strings.HasSuffix(need, ":push") {
			scope = strings.TrimSuffix(need, ":push") + ":pull,push"
		}
		challenge += fmt.Sprintf(`,scope=%q`, scope)
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
	return false
}

// covers reports whether granted scopes allow need (TYPE:NAME:ACTION).
func covers(granted []string, need string) bool {
	i := strings.LastIndexByte(need, ':')
	res, action := need[:i], need[i+1:]
	for _, g := range granted {
		j := strings.LastIndexByte(g, ':')
		if j < 0 || g[:j] != res {
			continue
		}
		for _, a := range strings.Split(g[j+1:], ",") {
			if a == action || a == "*" {
				return true
			}
		}
	}
	return false
}

// Tokens returns the scopes each token was granted, in the order asked.
func (r *Registry) Tokens() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, 0, len(r.tokens))
	for i := 1; i <= len(r.tokens); i++ {
		out = append(out, r.tokens[fmt.Sprintf("tok-%d", i)])
	}
	return out
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

// NewPusher returns a pusher to url (the registry's URL and a path)
// over plain HTTP, with an empty Docker configuration of its own: the
// test's, never the user's credentials.
func NewPusher(t testing.TB, url string) *oci.Pusher {
	t.Helper()
	p, err := oci.NewPusher(oci.Options{URL: url, PlainHTTP: true, Keychain: oci.DockerKeychain(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	return p
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
