package charts

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/dmhq/dm/internal/derrors"
)

const testChart = "../../expand/helm/testdata/charts/basic"

// packVersions packs the test chart at each version into dir, as helm
// package does, and returns the archives' paths by version.
func packVersions(t *testing.T, dir string, versions ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range versions {
		c, err := loader.LoadDir(testChart)
		if err != nil {
			t.Fatal(err)
		}
		c.Metadata.Version = v
		p, err := chartutil.Save(c, dir)
		if err != nil {
			t.Fatal(err)
		}
		out[v] = p
	}
	return out
}

// repoServer serves a Helm chart repository (index.yaml and the .tgz
// files) on loopback, counting requests; user/password, when set, are
// required as basic auth.
type repoServer struct {
	*httptest.Server
	dir      string
	requests atomic.Int64
}

func newRepo(t *testing.T, user, password string) *repoServer {
	t.Helper()
	rs := &repoServer{dir: t.TempDir()}
	packVersions(t, rs.dir, "1.0.0", "1.2.3", "2.0.0-beta.1")
	files := http.FileServer(http.Dir(rs.dir))
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.requests.Add(1)
		if u, p, _ := r.BasicAuth(); user != "" && (u != user || p != password) {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/elsewhere/index.yaml" {
			http.Redirect(w, r, "http://127.0.0.2:1/index.yaml", http.StatusFound)
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	idx, err := repo.IndexDirectory(rs.dir, rs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(rs.dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return rs
}

func (rs *repoServer) host() string { u, _ := url.Parse(rs.URL); return u.Host }

func TestRepo(t *testing.T) {
	rs := newRepo(t, "", "")
	f := &Fetcher{AllowHosts: []string{rs.host()}, CacheDir: t.TempDir()}
	tests := []struct {
		constraint string
		version    string
		kind       error
	}{
		{"", "1.2.3", nil},
		{"^1.0", "1.2.3", nil},
		{"~1.0.0", "1.0.0", nil},
		{"1.0.0", "1.0.0", nil},
		{">=2.0.0-0", "2.0.0-beta.1", nil},
		{"3.x", "", derrors.NotFound},
		{"not a constraint", "", derrors.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.constraint, func(t *testing.T) {
			c, err := f.Repo(context.Background(), rs.URL, "basic", tt.constraint)
			if tt.kind != nil {
				if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), rs.URL+"/index.yaml") {
					t.Fatalf("error %v, want %v naming the index", err, tt.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Version != tt.version || c.Name != "basic" || !strings.HasSuffix(c.URL, "basic-"+tt.version+".tgz") {
				t.Errorf("got %s %s from %s", c.Name, c.Version, c.URL)
			}
			ch, err := loader.LoadArchive(strings.NewReader(string(c.Data)))
			if err != nil || ch.Metadata.Version != tt.version {
				t.Errorf("archive: %v %v", ch, err)
			}
		})
	}
}

func TestRepoCacheAndDigest(t *testing.T) {
	rs := newRepo(t, "", "")
	cache := t.TempDir()
	f := &Fetcher{AllowHosts: []string{rs.host()}, CacheDir: cache}
	ctx := context.Background()
	if _, err := f.Repo(ctx, rs.URL, "basic", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	first := rs.requests.Load()
	c, err := f.Repo(ctx, rs.URL, "basic", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	// The second time only the index is read: the chart comes from the
	// cache by the index's digest.
	if n := rs.requests.Load() - first; n != 1 {
		t.Errorf("%d requests for a cached chart, want 1 (the index)", n)
	}
	if _, err := os.Stat(filepath.Join(cache, "sha256-"+c.Digest+".tgz")); err != nil {
		t.Errorf("cache: %v", err)
	}

	// A chart that does not match the index's digest is refused, and a
	// cached file that does not match its name is not used.
	idx, err := repo.LoadIndexFile(filepath.Join(rs.dir, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range idx.Entries["basic"] {
		cv.Digest = strings.Repeat("0", 64)
	}
	if err := idx.WriteFile(filepath.Join(rs.dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "sha256-"+strings.Repeat("0", 64)+".tgz"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.Repo(ctx, rs.URL, "basic", "1.2.3")
	if !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), "lists sha256:0000") || !strings.Contains(err.Error(), "basic-1.2.3.tgz") {
		t.Errorf("digest mismatch: %v", err)
	}
}

func TestFetchErrors(t *testing.T) {
	rs := newRepo(t, "ann", "s3cret")
	ctx := context.Background()
	allowed := []string{rs.host()}
	tests := []struct {
		name  string
		f     *Fetcher
		fetch func(f *Fetcher) error
		kind  error
		want  []string
		none  bool // no request reached the server
	}{
		{name: "host not allowed", f: &Fetcher{},
			fetch: func(f *Fetcher) error { _, err := f.Repo(ctx, rs.URL, "basic", ""); return err },
			kind:  derrors.Forbidden, want: []string{rs.host(), "not among the allowed chart hosts"}, none: true},
		{name: "redirect elsewhere", f: &Fetcher{AllowHosts: allowed, Credentials: map[string]Credentials{rs.host(): {"ann", "s3cret"}}},
			fetch: func(f *Fetcher) error { _, err := f.Repo(ctx, rs.URL+"/elsewhere", "basic", ""); return err },
			kind:  derrors.Forbidden, want: []string{"127.0.0.2:1"}},
		{name: "no credentials", f: &Fetcher{AllowHosts: allowed},
			fetch: func(f *Fetcher) error { _, err := f.Repo(ctx, rs.URL, "basic", ""); return err },
			kind:  derrors.Unauthorized, want: []string{rs.URL + "/index.yaml", "401"}},
		{name: "too large", f: &Fetcher{AllowHosts: allowed, MaxBytes: 100, Credentials: map[string]Credentials{rs.host(): {"ann", "s3cret"}}},
			fetch: func(f *Fetcher) error { _, err := f.URL(ctx, rs.URL+"/basic-1.0.0.tgz"); return err },
			kind:  derrors.LimitExceeded, want: []string{rs.URL + "/basic-1.0.0.tgz", "100 bytes", "MaxBytes"}},
		{name: "missing", f: &Fetcher{AllowHosts: allowed, Credentials: map[string]Credentials{rs.host(): {"ann", "s3cret"}}},
			fetch: func(f *Fetcher) error { _, err := f.URL(ctx, rs.URL+"/nope-1.0.0.tgz"); return err },
			kind:  derrors.NotFound, want: []string{rs.URL + "/nope-1.0.0.tgz", "404"}},
		{name: "scheme", f: &Fetcher{AllowHosts: allowed},
			fetch: func(f *Fetcher) error { _, err := f.URL(ctx, "file:///etc/passwd"); return err },
			kind:  derrors.InvalidArgument, want: []string{"file:///etc/passwd", "only http and https"}, none: true},
		{name: "not an index", f: &Fetcher{AllowHosts: allowed, Credentials: map[string]Credentials{rs.host(): {"ann", "s3cret"}}},
			fetch: func(f *Fetcher) error { _, err := f.Repo(ctx, rs.URL+"/basic-1.0.0.tgz", "basic", ""); return err },
			kind:  derrors.NotFound, want: []string{"basic-1.0.0.tgz/index.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rs.requests.Load()
			err := tt.fetch(tt.f)
			if !errors.Is(err, tt.kind) {
				t.Fatalf("error %v, want %v", err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows the password", err)
			}
			if tt.none && rs.requests.Load() != before {
				t.Errorf("a request reached the server")
			}
		})
	}

	// Credentials from Helm's repositories file.
	rf := filepath.Join(t.TempDir(), "repositories.yaml")
	if err := os.WriteFile(rf, []byte("apiVersion: v1\nrepositories:\n- name: mine\n  url: "+rs.URL+"\n  username: ann\n  password: s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := RepositoryCredentials(rf)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fetcher{AllowHosts: allowed, Credentials: creds}
	if c, err := f.Repo(ctx, rs.URL, "basic", "^1"); err != nil || c.Version != "1.2.3" {
		t.Errorf("with the repositories file's credentials: %v %v", c, err)
	}
}
