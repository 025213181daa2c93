package fetch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

const secretToken = "ghp_SECRET0123456789abcdefghijklmnopqrstuv"

// fixture is a small registry: nested collections, a hidden directory and a
// hidden file that neither source lists, and an empty file.
var fixture = map[string]string{
	"README.md":                           "# registry\n",
	"registry.yaml":                       "collections:\n  apps: deep/apps\n",
	"redis/v1/redis.jinja":                "kind: redis\n",
	"redis/v1/redis.jinja.schema":         "properties: {}\n",
	"redis/v1/example.yaml":               "",
	"redis/v1.1.0/redis.py":               "def generate(ctx):\n    return {}\n",
	"infra/web/v2.0.0/web.gotmpl":         "{{ .name }}\n",
	"infra/web/v2.0.0/helpers/common.txt": strings.Repeat("common line\n", 500),
	"deep/apps/blog/v0.1.0/blog.yaml":     "kind: Template\n",
	".github/workflows/ci.yml":            "on: push\n",
	"redis/.notes":                        "hidden\n",
}

func writeFixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		name := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type env struct {
	srv     *githubtest.Server
	repoDir string
	logs    *syncBuffer
	calls   *callLog
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a walk.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// callLog records OnRequest calls.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (c *callLog) record(endpoint string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("%s %d", endpoint, status))
}

func (c *callLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	return calls
}

func newEnv(t *testing.T) *env {
	t.Helper()
	repoDir := githubtest.NewRepo(t, writeFixture(t, fixture))
	srv := githubtest.New(map[string]string{"acme/templates": repoDir})
	t.Cleanup(srv.Close)
	return &env{srv: srv, repoDir: repoDir, logs: &syncBuffer{}, calls: &callLog{}}
}

// source returns a new GitHub source; a new one per case because go-github
// remembers rate limits and refuses requests until they reset.
func (e *env) source(t *testing.T, modify ...func(*fetch.GitHubOptions)) *fetch.GitHub {
	t.Helper()
	opts := fetch.GitHubOptions{
		Owner:     "acme",
		Repo:      "templates",
		BaseURL:   e.srv.URL,
		Token:     secretToken,
		OnRequest: e.calls.record,
		Logger:    slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, m := range modify {
		m(&opts)
	}
	g, err := fetch.NewGitHub(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// localTree lists dir with the Local source, the reference listing.
func localTree(t *testing.T, dir string) *fetch.Tree {
	t.Helper()
	tr, err := fetch.NewLocal(os.DirFS(dir)).Tree(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestGitHubTree(t *testing.T) {
	e := newEnv(t)
	e.srv.RequireToken(secretToken)
	g := e.source(t)
	ctx := context.Background()

	cold, err := g.Tree(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.srv.Requests(); n != 2 {
		t.Errorf("cold listing: %d requests, want 2", n)
	}
	if got := e.calls.take(); !reflect.DeepEqual(got, []string{"commit 200", "tree 200"}) {
		t.Errorf("OnRequest calls %v", got)
	}
	if head := githubtest.Head(t, e.repoDir); cold.Version != head || cold.ETag == "" {
		t.Errorf("Version %q ETag %q, want head %s", cold.Version, cold.ETag, head)
	}
	// The same listing as a local mirror of the same files.
	if want := localTree(t, e.repoDir).Entries; !reflect.DeepEqual(cold.Entries, want) {
		t.Errorf("GitHub listing differs from local:\n got %v\nwant %v", cold.Entries, want)
	}
	var visible int
	for p, content := range fixture {
		if strings.HasPrefix(p, ".") || strings.Contains(p, "/.") {
			continue
		}
		visible++
		i := indexOf(cold.Entries, p)
		if i < 0 {
			t.Errorf("%s not listed", p)
			continue
		}
		if en := cold.Entries[i]; en.SHA != fetch.BlobSHA([]byte(content)) || en.Size != int64(len(content)) {
			t.Errorf("%s: %+v, want sha %s size %d", p, en, fetch.BlobSHA([]byte(content)), len(content))
		}
	}
	if len(cold.Entries) != visible {
		t.Errorf("%d entries, want %d: %v", len(cold.Entries), visible, cold.Entries)
	}

	// Unchanged: one request, answered 304.
	e.srv.ResetCounts()
	same, err := g.Tree(ctx, cold)
	if !errors.Is(err, derrors.NotModified) || same != cold {
		t.Fatalf("unchanged refresh: %v, same tree %t", err, same == cold)
	}
	if n, n304 := e.srv.Requests(), e.srv.Responses(http.StatusNotModified); n != 1 || n304 != 1 {
		t.Errorf("unchanged refresh: %d requests, %d answered 304; want 1 and 1", n, n304)
	}
	if got := e.calls.take(); !reflect.DeepEqual(got, []string{"commit 304"}) {
		t.Errorf("OnRequest calls %v", got)
	}

	// A new commit: the refresh lists the new tree.
	head := githubtest.Commit(t, e.repoDir, map[string]string{
		"redis/v1.1.1/redis.py": "def generate(ctx):\n    return {'fixed': True}\n",
		"README.md":             "",
	})
	e.srv.ResetCounts()
	next, err := g.Tree(ctx, cold)
	if err != nil {
		t.Fatal(err)
	}
	if next.Version != head || next.ETag == cold.ETag {
		t.Errorf("after commit: version %s etag %s, want %s and a new etag", next.Version, next.ETag, head)
	}
	if n := e.srv.Requests(); n != 2 {
		t.Errorf("changed refresh: %d requests, want 2", n)
	}
	if want := localTree(t, e.repoDir).Entries; !reflect.DeepEqual(next.Entries, want) {
		t.Errorf("after commit, GitHub listing differs from local:\n got %v\nwant %v", next.Entries, want)
	}
	if indexOf(next.Entries, "README.md") >= 0 || indexOf(next.Entries, "redis/v1.1.1/redis.py") < 0 {
		t.Errorf("after commit: %v", next.Entries)
	}

	// And that state is stable again.
	if _, err := g.Tree(ctx, next); !errors.Is(err, derrors.NotModified) {
		t.Errorf("refresh after new commit: %v", err)
	}
}

// TreeAt lists a pushed commit in one request (its tree, no head read),
// none when the previous listing is that commit, and leaves the next Tree
// to ask for the head against it: a newer head is read, an equal one is
// answered 304.
func TestGitHubTreeAt(t *testing.T) {
	e := newEnv(t)
	g := e.source(t)
	ctx := context.Background()
	cold, err := g.Tree(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pushed := githubtest.Commit(t, e.repoDir, map[string]string{"redis/v1.1.1/redis.py": "def generate(ctx):\n    return {}\n"})
	e.calls.take()
	at, err := g.TreeAt(ctx, pushed, cold)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.calls.take(); !reflect.DeepEqual(got, []string{"tree 200"}) {
		t.Errorf("TreeAt: requests %v, want one tree read", got)
	}
	if want := localTree(t, e.repoDir).Entries; at.Version != pushed || !reflect.DeepEqual(at.Entries, want) {
		t.Errorf("TreeAt: version %s, want %s; entries %v, want %v", at.Version, pushed, at.Entries, want)
	}
	if same, err := g.TreeAt(ctx, pushed, at); !errors.Is(err, derrors.NotModified) || same != at {
		t.Errorf("TreeAt of the listed commit: %v, same tree %t; want NotModified", err, same == at)
	}
	if got := e.calls.take(); len(got) != 0 {
		t.Errorf("TreeAt of the listed commit made requests %v", got)
	}
	if _, err := g.Tree(ctx, at); !errors.Is(err, derrors.NotModified) {
		t.Errorf("Tree after TreeAt of the head: %v, want NotModified", err)
	}
	if got := e.calls.take(); !reflect.DeepEqual(got, []string{"commit 304"}) {
		t.Errorf("Tree after TreeAt of the head: requests %v, want one answered 304", got)
	}
	// A commit recorded out of order (older than the head) is left at the
	// next refresh, which reads the head.
	head := githubtest.Commit(t, e.repoDir, map[string]string{"README.md": "new\n"})
	old, err := g.TreeAt(ctx, cold.Version, at)
	if err != nil || old.Version != cold.Version {
		t.Fatalf("TreeAt of an older commit: %v", err)
	}
	if next, err := g.Tree(ctx, old); err != nil || next.Version != head {
		t.Errorf("Tree after an older commit: %v, want head %s", err, head)
	}
	for _, bad := range []string{"", "main", "0123", strings.Repeat("g", 40), "../../etc/passwd"} {
		if _, err := g.TreeAt(ctx, bad, nil); !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("TreeAt(%q): %v, want InvalidArgument", bad, err)
		}
	}
}

func indexOf(entries []fetch.Entry, p string) int {
	for i, en := range entries {
		if en.Path == p {
			return i
		}
	}
	return -1
}

func TestGitHubBranch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	g := e.source(t, func(o *fetch.GitHubOptions) { o.Branch = "main" })
	if tr, err := g.Tree(ctx, nil); err != nil || len(tr.Entries) == 0 {
		t.Fatalf("branch main: %v", err)
	}
	_, err := e.source(t, func(o *fetch.GitHubOptions) { o.Branch = "nope" }).Tree(ctx, nil)
	if !errors.Is(err, derrors.NotFound) {
		t.Errorf("missing branch: %v, want NotFound", err)
	}
	_, err = e.source(t, func(o *fetch.GitHubOptions) { o.Repo = "missing" }).Tree(ctx, nil)
	if !errors.Is(err, derrors.NotFound) {
		t.Errorf("missing repository: %v, want NotFound", err)
	}
}

func TestNewGitHubInvalid(t *testing.T) {
	tests := []fetch.GitHubOptions{
		{Owner: "", Repo: "r"},
		{Owner: "o", Repo: "r/x"},
		{Owner: "..", Repo: "r"},
		{Owner: "o", Repo: "r", Branch: "a..b"},
		{Owner: "o", Repo: "r", Branch: "-x"},
		{Owner: "o", Repo: "r", Branch: "a b"},
		{Owner: "o", Repo: "r", BaseURL: "ftp://example.com/"},
		{Owner: "o", Repo: "r", BaseURL: "https://user:" + secretToken + "@example.com/"},
	}
	for _, opts := range tests {
		_, err := fetch.NewGitHub(opts)
		if !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("%v: %v, want InvalidArgument", opts, err)
		}
		if err != nil && strings.Contains(err.Error(), secretToken) {
			t.Errorf("error leaks the token: %v", err)
		}
	}
}

func TestGitHubTruncatedTree(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	full, err := e.source(t).Tree(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}

	e.srv.SetFaults(githubtest.Faults{TruncateTrees: true})
	e.srv.ResetCounts()
	walked, err := e.source(t).Tree(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(walked, full) {
		t.Errorf("walked listing differs:\n got %+v\nwant %+v", walked, full)
	}
	// One commit, one truncated recursive listing, then one request per
	// visible tree: root, redis, redis/v1, redis/v1.1.0, infra, infra/web,
	// infra/web/v2.0.0, helpers, deep, deep/apps, blog, blog/v0.1.0.
	if got, want := e.srv.RequestsTo("tree"), 1+12; got != want {
		t.Errorf("walk: %d tree requests, want %d", got, want)
	}
	if got := e.srv.RequestsTo("commit"); got != 1 {
		t.Errorf("walk: %d commit requests, want 1", got)
	}
}

func TestGitHubBlob(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	g := e.source(t)
	tr, err := g.Tree(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.ResetCounts()
	// Concurrently, to let the race detector look at the shared client.
	var wg sync.WaitGroup
	for _, en := range tr.Entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := g.Blob(ctx, en.SHA)
			if err != nil {
				t.Errorf("%s: %v", en.Path, err)
				return
			}
			if string(b) != fixture[en.Path] {
				t.Errorf("%s: %q, want %q", en.Path, b, fixture[en.Path])
			}
		}()
	}
	wg.Wait()
	if got, want := e.srv.RequestsTo("blob"), len(tr.Entries); got != want {
		t.Errorf("%d blob requests, want %d", got, want)
	}

	e.srv.ResetCounts()
	for _, tc := range []struct {
		sha  string
		want error
	}{
		{"README.md", derrors.InvalidArgument},
		{"../../etc/passwd", derrors.InvalidArgument},
		{strings.Repeat("A", 40), derrors.InvalidArgument},
		{strings.Repeat("0", 40), derrors.NotFound},
		{tr.Version, derrors.NotFound}, // a commit, not a blob
	} {
		if _, err := g.Blob(ctx, tc.sha); !errors.Is(err, tc.want) {
			t.Errorf("Blob(%q): %v, want %v", tc.sha, err, tc.want)
		}
	}
	if n := e.srv.Requests(); n != 2 {
		t.Errorf("invalid SHAs made requests: %d, want 2", n)
	}
}

// TestGitHubBlobJSON covers servers that ignore the raw media type and
// answer GitHub's base64 JSON.
func TestGitHubBlobJSON(t *testing.T) {
	e := newEnv(t)
	u, _ := url.Parse(e.srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(u)
	direct := proxy.Director
	proxy.Director = func(r *http.Request) {
		direct(r)
		r.Header.Del("Accept")
	}
	ps := httptest.NewServer(proxy)
	defer ps.Close()

	g := e.source(t, func(o *fetch.GitHubOptions) { o.BaseURL = ps.URL })
	content := fixture["infra/web/v2.0.0/helpers/common.txt"] // long enough for line breaks
	b, err := g.Blob(context.Background(), fetch.BlobSHA([]byte(content)))
	if err != nil || string(b) != content {
		t.Fatalf("Blob through JSON: %v, %d bytes", err, len(b))
	}
}

func TestGitHubCache(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := fetch.NewCache(e.source(t), t.TempDir(), 1<<20)
	sha := fetch.BlobSHA([]byte(fixture["README.md"]))
	for i, want := range []int{1, 0} {
		e.srv.ResetCounts()
		b, err := c.Blob(ctx, sha)
		if err != nil || string(b) != fixture["README.md"] {
			t.Fatalf("Blob %d: %q, %v", i, b, err)
		}
		if n := e.srv.Requests(); n != want {
			t.Errorf("Blob %d: %d requests, want %d", i, n, want)
		}
	}
}

func TestGitHubFaults(t *testing.T) {
	e := newEnv(t)
	e.srv.RequireToken(secretToken)
	tests := []struct {
		name           string
		faults         githubtest.Faults
		timeout        time.Duration
		minAft, maxAft time.Duration
		reason         string
	}{
		{"502", githubtest.Faults{Status5xx: 1}, 0, 30 * time.Second, 30 * time.Second, "server error 502"},
		{"403 rate limit", githubtest.Faults{RateLimited: 1, RateLimitReset: 20 * time.Second}, 0, 15 * time.Second, 22 * time.Second, "rate limit"},
		{"403 secondary rate limit", githubtest.Faults{Abuse: 1, RetryAfter: 7 * time.Second}, 0, 7 * time.Second, 7 * time.Second, "secondary rate limit"},
		{"429", githubtest.Faults{TooMany: 1, RetryAfter: 3 * time.Second}, 0, 3 * time.Second, 3 * time.Second, "too many requests (429)"},
		{"timeout", githubtest.Faults{Latency: 10 * time.Second}, 100 * time.Millisecond, time.Second, time.Minute, "timeout"},
	}
	for _, tt := range tests {
		for _, op := range []string{"tree", "blob"} {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				g := e.source(t)
				e.srv.SetFaults(tt.faults)
				defer e.srv.SetFaults(githubtest.Faults{})
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				start := time.Now()
				var err error
				if op == "tree" {
					_, err = g.Tree(ctx, nil)
				} else {
					_, err = g.Blob(ctx, fetch.BlobSHA([]byte(fixture["README.md"])))
				}
				if time.Since(start) > 5*time.Second {
					t.Errorf("took %s", time.Since(start))
				}
				var re *fetch.RetryError
				if !errors.As(err, &re) {
					t.Fatalf("got %v, want a RetryError", err)
				}
				if !errors.Is(err, derrors.Unavailable) {
					t.Errorf("%v does not match derrors.Unavailable", err)
				}
				if re.After < tt.minAft || re.After > tt.maxAft {
					t.Errorf("After = %s, want %s..%s", re.After, tt.minAft, tt.maxAft)
				}
				if !strings.Contains(err.Error(), tt.reason) {
					t.Errorf("error %q does not say %q", err, tt.reason)
				}
				if derrors.HTTPStatus(err) != http.StatusServiceUnavailable {
					t.Errorf("HTTPStatus = %d", derrors.HTTPStatus(err))
				}
			})
		}
	}

	t.Run("rate limit remembered", func(t *testing.T) {
		// After a rate-limit answer go-github refuses requests until the
		// reset; that costs no request and still says when to come back.
		g := e.source(t)
		e.srv.SetFaults(githubtest.Faults{RateLimited: 1, RateLimitReset: time.Minute})
		if _, err := g.Tree(context.Background(), nil); err == nil {
			t.Fatal("no error")
		}
		e.srv.ResetCounts()
		_, err := g.Blob(context.Background(), fetch.BlobSHA([]byte(fixture["README.md"])))
		var re *fetch.RetryError
		if !errors.As(err, &re) || re.After < 50*time.Second {
			t.Fatalf("got %v, want a RetryError with After about a minute", err)
		}
		if n := e.srv.Requests(); n != 0 {
			t.Errorf("%d requests during the rate limit, want 0", n)
		}
	})

	t.Run("unchanged refresh after 5xx", func(t *testing.T) {
		g := e.source(t)
		tr, err := g.Tree(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		e.srv.SetFaults(githubtest.Faults{Status5xx: 1})
		if _, err := g.Tree(context.Background(), tr); !errors.Is(err, derrors.Unavailable) {
			t.Fatalf("got %v, want Unavailable", err)
		}
		if _, err := g.Tree(context.Background(), tr); !errors.Is(err, derrors.NotModified) {
			t.Fatalf("got %v, want NotModified", err)
		}
	})

	if logs := e.logs.String(); !strings.Contains(logs, "back off") {
		t.Errorf("no back-off warning in the logs:\n%s", logs)
	}
}

// TestGitHubTokenNotLeaked sends the token, checks that the server needed
// it, and that it appears in no error, log line or description.
func TestGitHubTokenNotLeaked(t *testing.T) {
	e := newEnv(t)
	e.srv.RequireToken(secretToken)
	ctx := context.Background()
	var texts []string

	g := e.source(t)
	tr, err := g.Tree(ctx, nil)
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	texts = append(texts, g.String())

	// Without the token the server refuses: not a reason to retry soon.
	_, err = e.source(t, func(o *fetch.GitHubOptions) { o.Token = "" }).Tree(ctx, nil)
	var re *fetch.RetryError
	if !errors.Is(err, derrors.Unavailable) || errors.As(err, &re) {
		t.Errorf("without the token: %v, want Unavailable but no RetryError", err)
	}
	_, err = e.source(t, func(o *fetch.GitHubOptions) { o.Token = "ghp_wrong" }).Tree(ctx, nil)
	if !errors.Is(err, derrors.Unavailable) {
		t.Errorf("with a wrong token: %v", err)
	}
	texts = append(texts, fmt.Sprint(err))

	for _, f := range []githubtest.Faults{
		{Status5xx: 1}, {RateLimited: 1}, {TooMany: 1}, {Abuse: 1},
	} {
		e.srv.SetFaults(f)
		_, err := e.source(t).Tree(ctx, tr)
		texts = append(texts, fmt.Sprint(err))
		e.srv.SetFaults(f)
		_, err = e.source(t).Blob(ctx, tr.Entries[0].SHA)
		texts = append(texts, fmt.Sprint(err))
	}
	_, err = g.Blob(ctx, strings.Repeat("0", 40))
	texts = append(texts, fmt.Sprint(err))
	_, err = g.Tree(ctx, tr)
	texts = append(texts, fmt.Sprint(err))

	// A server that echoes the Authorization header in its error message.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"message":"bad header %s"}`, r.Header.Get("Authorization"))
	}))
	defer echo.Close()
	_, err = e.source(t, func(o *fetch.GitHubOptions) { o.BaseURL = echo.URL }).Tree(ctx, nil)
	if err == nil {
		t.Fatal("echo server: no error")
	}
	texts = append(texts, err.Error())

	opts := fetch.GitHubOptions{Owner: "acme", Repo: "templates", Token: secretToken}
	texts = append(texts, fmt.Sprint(opts), fmt.Sprintf("%+v", opts), fmt.Sprintf("%#v", opts), e.logs.String())
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("options", "opts", opts)
	texts = append(texts, logged.String())

	for _, s := range texts {
		if strings.Contains(s, secretToken) || strings.Contains(s, "SECRET") {
			t.Errorf("token leaked: %s", s)
		}
	}
	if !strings.Contains(e.logs.String(), "GitHub request") {
		t.Error("no request logs: the leak check saw nothing")
	}
}

func TestGitHubOnRequestTransportError(t *testing.T) {
	// A closed server: the request fails without a status.
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	var calls callLog
	g, err := fetch.NewGitHub(fetch.GitHubOptions{Owner: "o", Repo: "r", BaseURL: base, OnRequest: calls.record})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Tree(context.Background(), nil)
	var re *fetch.RetryError
	if !errors.As(err, &re) || !errors.Is(err, derrors.Unavailable) {
		t.Errorf("got %v, want a RetryError", err)
	}
	if got := calls.take(); !reflect.DeepEqual(got, []string{"commit 0"}) {
		t.Errorf("OnRequest calls %v, want [commit 0]", got)
	}
}

// BenchmarkGitHubTree measures a cold listing and an unchanged refresh
// through the test server and reports the requests each costs.
func BenchmarkGitHubTree(b *testing.B) {
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("c%d/t%d/v1.0.%d/t.py", i%5, i%40, i)] = fmt.Sprintf("x = %d\n", i)
	}
	repoDir := githubtest.NewRepoFS(b, mapFS(files))
	srv := githubtest.New(map[string]string{"acme/templates": repoDir})
	defer srv.Close()
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		srv.ResetCounts()
		for b.Loop() {
			g, err := fetch.NewGitHub(fetch.GitHubOptions{Owner: "acme", Repo: "templates", BaseURL: srv.URL})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := g.Tree(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(srv.Requests())/float64(b.N), "requests/op")
	})
	b.Run("unchanged", func(b *testing.B) {
		g, err := fetch.NewGitHub(fetch.GitHubOptions{Owner: "acme", Repo: "templates", BaseURL: srv.URL})
		if err != nil {
			b.Fatal(err)
		}
		prev, err := g.Tree(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		srv.ResetCounts()
		for b.Loop() {
			if _, err := g.Tree(ctx, prev); !errors.Is(err, derrors.NotModified) {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(srv.Requests())/float64(b.N), "requests/op")
	})
}

func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for p, c := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	return fsys
}

// TestGitHubBounds: a listing over MaxEntries fails with a *BoundError, in
// one recursive answer or along a walk, and stops there; an answer is
// read through a bound derived from it, never whole into memory.
func TestGitHubBounds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	full, err := e.source(t).Tree(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(full.Entries)
	for _, truncated := range []bool{false, true} {
		e.srv.SetFaults(githubtest.Faults{TruncateTrees: truncated})
		_, err := e.source(t, func(o *fetch.GitHubOptions) { o.MaxEntries = n - 1 }).Tree(ctx, nil)
		var b *fetch.BoundError
		if !errors.As(err, &b) || b.Bound != "entries" || b.Limit != int64(n-1) || !errors.Is(err, derrors.LimitExceeded) {
			t.Errorf("truncated %v: %d entries over a bound of %d: %v", truncated, n, n-1, err)
		}
		if _, err := e.source(t, func(o *fetch.GitHubOptions) { o.MaxEntries = 1000 }).Tree(ctx, nil); err != nil {
			t.Errorf("truncated %v: within the bound: %v", truncated, err)
		}
	}
}

// TestGitHubRedirects: a redirect within the API's origin is followed (a
// renamed repository); one to another host or port is not, and nothing of
// the other host (its status, its message) reaches the error, which the
// registry's status shows: the other host is never asked.
func TestGitHubRedirects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		evilHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, `{"message":"evil-message-42"}`)
	}))
	defer evil.Close()

	// Within the origin: /moved/... redirects to the same path without
	// the prefix, which is proxied to the test server.
	target, _ := url.Parse(e.srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/moved"); ok {
			http.Redirect(w, r, rest, http.StatusMovedPermanently)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	if _, err := e.source(t, func(o *fetch.GitHubOptions) { o.BaseURL = front.URL + "/moved/" }).Tree(ctx, nil); err != nil {
		t.Errorf("a redirect within the API's origin: %v", err)
	}

	e.srv.SetFaults(githubtest.Faults{RedirectTo: evil.URL})
	for _, op := range []struct {
		name string
		do   func(*fetch.GitHub) error
	}{
		{"tree", func(g *fetch.GitHub) error { _, err := g.Tree(ctx, nil); return err }},
		{"blob", func(g *fetch.GitHub) error { _, err := g.Blob(ctx, strings.Repeat("a", 40)); return err }},
		{"tree at", func(g *fetch.GitHub) error { _, err := g.TreeAt(ctx, strings.Repeat("b", 40), nil); return err }},
	} {
		err := op.do(e.source(t))
		if err == nil || !strings.Contains(err.Error(), "redirected to another scheme, host or port; not followed") {
			t.Errorf("%s redirected to another host: %v", op.name, err)
			continue
		}
		evilURL, _ := url.Parse(evil.URL)
		for _, leak := range []string{"evil-message-42", "418", "teapot", evilURL.Host} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: the error names %q of the host it was redirected to: %v", op.name, leak, err)
			}
		}
		var re *fetch.RetryError
		if errors.As(err, &re) {
			t.Errorf("%s: a redirect elsewhere is retried soon as a network error: %v", op.name, err)
		}
	}
	if n := evilHits.Load(); n != 0 {
		t.Errorf("%d requests reached the host redirected to", n)
	}
}
