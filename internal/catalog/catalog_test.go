package catalog

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm/helmlint"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// countingExpander counts the expansions it passes on.
type countingExpander struct {
	next api.Expander
	n    atomic.Int64
}

func (c *countingExpander) Expand(ctx context.Context, req *api.ExpandRequest) (*api.ExpandResult, error) {
	c.n.Add(1)
	return c.next.Expand(ctx, req)
}

type testEnv struct {
	svc      *api.Service
	reg      *index.Registry
	examples *Examples
	counter  *countingExpander
	url      string
	dir      string
}

// newTestEnv serves a copy of registry-example from a directory, with the
// catalog mounted and the examples tested in the background.
func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, dm.ExampleRegistry()); err != nil {
		t.Fatal(err)
	}
	e := serveRegistry(t, api.RegistrySpec{Prefix: dm.ExampleRegistryPrefix, Dir: dir}, 0)
	e.dir = dir
	return e
}

// serveRegistry serves the registry spec describes, with the catalog
// mounted and the examples tested in the background, a GitHub registry's
// once its index has stayed the same for settle (negative: at once).
func serveRegistry(t testing.TB, spec api.RegistrySpec, settle time.Duration) *testEnv {
	t.Helper()
	reg, err := api.OpenRegistry(spec, api.Setup{Checker: &sigstore.Checker{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry(spec.Prefix)
	// registryd attaches Helm's engine: registry-example has a chart.
	svc := api.NewService(resolve.New(def, reg), expand.Options{Engines: []engine.Engine{&helmlint.Engine{}}})
	counter := &countingExpander{next: svc}
	ex := NewExamples(ExamplesOptions{Resolver: svc.Resolver(), Expander: counter, Poll: 20 * time.Millisecond, RemoteSettle: settle})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ex.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c := New(Options{Service: svc, Expander: counter, Examples: ex})
	r := chi.NewRouter()
	c.Mount(r)
	r.NotFound(c.NotFound)
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	return &testEnv{svc: svc, reg: reg, examples: ex, counter: counter, url: hs.URL}
}

// settle waits until no example is pending.
func (e *testEnv) settle(t testing.TB) ExampleCounts {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := e.examples.Counts()
		if c.Pending == 0 && c.OK+c.Error > 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("examples still pending after 30s: %+v", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func get(t testing.TB, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); resp.Request.URL.Path != "/static/catalog.css" && !strings.HasPrefix(ct, "text/html") && !strings.HasPrefix(ct, "text/") {
		t.Errorf("GET %s: Content-Type %q", u, ct)
	}
	return resp.StatusCode, string(b)
}

func post(t testing.TB, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPages(t *testing.T) {
	e := newTestEnv(t)
	e.settle(t)
	tests := []struct {
		path   string
		status int
		want   []string
		not    []string
	}{
		{"/", 200, []string{`<a href="/r/github.com/acme/templates">github.com/acme/templates</a>`, `role="search"`, "Recently changed", "/t/github.com/acme/templates/"}, nil},
		{"/search?q=redis", 200, []string{`href="/t/github.com/acme/templates/redis"`, `value="redis"`, "2 templates match", "6 versions"}, []string{`class="search" role="search"`, "1 templates"}},
		// The front page lists each template's highest stable version on
		// a first index, pre-releases marked, with no time registryd
		// merely indexed them at.
		{"/", 200, []string{"/t/github.com/acme/templates/redis:v2.0.0", "changed "}, []string{"redis:v2.1.0-rc.1", "indexed "}},
		{"/search?q=guestbook", 200, []string{`href="/t/github.com/acme/templates/apps/guestbook"`, "1 template matches", "2 versions"}, []string{"/redis\""}},
		{"/search?q=", 200, []string{"<h1>Search</h1>"}, nil},
		{"/r/github.com/acme/templates", 200, []string{"Collection common", "Collection apps", `href="/t/github.com/acme/templates/redis"`, "Redis", "jinja", `test-ok`}, nil},
		{"/r/github.com/nope/x", 404, []string{"not configured"}, nil},
		// A short reference resolves against the default registry.
		{"/t/redis:v1", 200, []string{
			"<code>github.com/acme/templates/redis:v1.0.2</code>",
			`<span class="short">v1 →</span> <span class="short">v1.0 →</span> <a href="/t/github.com/acme/templates/redis:v1.0.2@sha256:`,
			`<span class="short">v1.1 →</span> <a href="/t/github.com/acme/templates/redis:v1.1.0@sha256:`,
			`latest →</span> <a href="/t/github.com/acme/templates/redis:v2.0.0@`,
			`v2.1.0-rc.1</a> <span class="tag tag-pre">pre-release</span>`,
			"<code>replicas</code>", "integer", "dm deploy github.com/acme/templates/redis:v1.0.2",
			`id="example-status">ok<`, `name="replicas"`, `action="/t/github.com/acme/templates/redis:v1.0.2@sha256:b422dc267ae2eb821cd7a5fec1ccf2186e750a6bbf14d866e6f2535ba272bb87/preview"`,
			"sha256:", `/diff?from=v1.0.0"`,
			`/t/github.com/acme/templates/redis:v1.0.2@sha256:b422dc267ae2eb821cd7a5fec1ccf2186e750a6bbf14d866e6f2535ba272bb87/-/file/redis.jinja`,
		}, nil},
		// Used by: the guestbook's example expands through redis.
		{"/t/github.com/acme/templates/redis:v1.0.2", 200, []string{"Used by", "/t/github.com/acme/templates/apps/guestbook:"}, nil},
		{"/t/github.com/acme/templates/apps/guestbook:v1", 200, []string{"Uses", `href="/t/github.com/acme/templates/redis:`, "<code>frontend.replicas</code>", `class="depth-1"`}, nil},
		{"/t/redis", 200, []string{"github.com/acme/templates/redis:v2.0.0", "no version given"}, nil},
		{"/t/redis:v1/diff?from=v1.0.0", 200, []string{"v1.0.0 → v1.0.2", "redis.jinja", `class="d del"`, `class="d add"`, "@@ -"}, []string{"</span>\n<span", `class="d add">+ `}},
		// Defaults as YAML; a required property with a default is not
		// required of the caller; the deploy command names what the
		// template needs.
		{"/t/gcp/vm:v1", 200, []string{`<code class="yaml">[22, 80]</code>`, "--project PROJECT_ID", "Lint findings"}, []string{"- 22"}},
		{"/t/common/web:v1.2", 200, []string{"dm deploy github.com/acme/templates/common/web:v1.2.3 --properties image=IMAGE</code>", "<code>image</code></td><td>string</td><td></td><td><strong>yes</strong></td>", "<code>replicas</code></td><td>integer</td><td><code class=\"yaml\">2</code></td><td>no</td>", `<code class="yaml">ClusterIP</code>`, `<code class="yaml">[]</code>`}, nil},
		{"/t/charts/hello:v0.1", 200, []string{"<code>image</code></td><td>object</td>", `class="depth-1"><code>image.tag</code>`, `<code class="yaml">&#34;&#34;</code>`, "Lint findings", "No findings (Helm's lint rules included)."}, nil},
		{"/t/redis:v1/diff", 400, []string{"?from=VERSION"}, nil},
		{"/t/redis:v1/-/file/redis.jinja", 200, []string{"<h1>redis.jinja</h1>", "{%", `href="/v1/file?ref=redis%3Av1&amp;path=redis.jinja"`}, nil},
		{"/t/redis:v1/-/file/nope", 404, []string{"no file"}, nil},
		{"/t/redis:v1.2", 404, []string{"v1.2 not found", "available: v1.0.0", "try github.com/acme/templates/redis:v1.1"}, nil},
		{"/t/github.com/acme/templates/rediss:v1", 404, []string{"did you mean github.com/acme/templates/redis:v1?", `/search?q=rediss`}, nil},
		{"/t/common/nope", 404, []string{"<h1>404 Not Found</h1>"}, nil},
		{"/nope", 404, []string{"no page /nope"}, nil},
		{"/static/catalog.css", 200, []string{"prefers-color-scheme:dark"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, body := get(t, e.url+tt.path)
			if code != tt.status {
				t.Fatalf("status %d, want %d\n%s", code, tt.status, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q\n%s", w, body)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(body, w) {
					t.Errorf("page has %q", w)
				}
			}
		})
	}
}

// TestPreview posts the form as a browser without JavaScript does.
func TestPreview(t *testing.T) {
	e := newTestEnv(t)
	tests := []struct {
		name   string
		ref    string
		form   url.Values
		status int
		want   []string
	}{
		{"typed", "redis:v1", url.Values{"replicas": {"3"}, "port": {"6390"}}, 200, []string{"objects:", "replicas: 3", "6390", "kind: Deployment", `value="3"`}},
		{"defaults", "redis:v1", url.Values{}, 200, []string{"6379"}},
		{"not an integer", "redis:v1", url.Values{"replicas": {"three"}}, 422, []string{`class="field-error" id="e-replicas"`, `replicas: &#34;three&#34; is not an integer`, `aria-invalid="true"`}},
		{"nested", "apps/guestbook:v1.1", url.Values{"frontend.replicas": {"4"}, "redis.maxmemory": {"32mb"}}, 200, []string{"replicas: 4", "32mb"}},
		{"schema violation", "redis:v1", url.Values{"port": {"70000"}}, 422, []string{"properties.port", `id="e-port"`, "--skip-schema-validation"}},
		// The checkbox expands without validating: defaults still apply,
		// the violation is a warning, and the box stays checked.
		{"schema not validated", "redis:v1", url.Values{"port": {"70000"}, ".skip_schema_validation": {"on"}}, 200, []string{"70000", `class="warning"`, "properties.port", `name=".skip_schema_validation" checked`, "replicas: 2"}},
		// postgres is an OpenShift template whose parameters are the form.
		{"openshift", "postgres:v1.1", url.Values{"DATABASE_SERVICE_NAME": {"db"}}, 200, []string{"name: db"}},
		// A template written the Deployment Manager way previews as the
		// Config Connector objects dm deploy would apply.
		{"google cloud", "gcp/vm:v1", url.Values{"zone": {"europe-west1-b"}}, 200, []string{
			"5 objects:", "kind: ComputeInstance", "kind: ComputeNetwork", "kind: ComputeAddress", "location: europe-west1",
			"cnrm.cloud.google.com/project-id: PROJECT_ID", "networkRef:\n      name: vm-net"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, e.url+"/t/"+tt.ref+"/preview", tt.form)
			if code != tt.status {
				t.Fatalf("status %d, want %d\n%s", code, tt.status, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("answer lacks %q\n%s", w, body)
				}
			}
		})
	}
}

// TestPreviewRequired: a required property left empty is an error next to
// its field, and nothing is expanded.
func TestPreviewRequired(t *testing.T) {
	e := newTestEnv(t)
	addRequired(t, e)
	e.settle(t)
	before := e.counter.n.Load()
	code, body := post(t, e.url+"/t/req:v1/preview", url.Values{"owner": {""}})
	if code != 422 || !strings.Contains(body, `<p class="field-error" id="e-owner" role="alert">owner is required</p>`) {
		t.Errorf("empty required field: %d\n%s", code, body)
	}
	if !strings.Contains(body, `name="owner" type="text" value="" placeholder="" aria-invalid="true" aria-describedby="e-owner"`) {
		t.Errorf("the field is not marked invalid:\n%s", body)
	}
	code, body = post(t, e.url+"/t/req:v1/preview", url.Values{"owner": {"ops"}})
	if code != 200 || !strings.Contains(body, "owner: ops") {
		t.Errorf("filled: %d\n%s", code, body)
	}
	if n := e.counter.n.Load(); n != before+1 {
		t.Errorf("%d expansions for two previews, want 1: an empty required field expands nothing", n-before)
	}
}

// TestExamplesCached: examples are tested once per content digest; a
// refresh that changes one version tests that version alone, and a
// failing example shows its error with the layout path.
func TestExamplesCached(t *testing.T) {
	e := newTestEnv(t)
	c := e.settle(t)
	n := e.counter.n.Load()
	if c.OK == 0 || int(n) != c.OK+c.Error {
		t.Fatalf("counts %+v after %d expansions", c, n)
	}
	if c.Error != 0 {
		t.Errorf("registry-example has %d failing examples", c.Error)
	}
	// An unchanged refresh tests nothing.
	if err := e.reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.examples.Kick()
	time.Sleep(100 * time.Millisecond)
	if got := e.counter.n.Load(); got != n {
		t.Errorf("unchanged refresh: %d expansions, want 0", got-n)
	}
	// Break one version's example.
	os.WriteFile(filepath.Join(e.dir, "redis", "v1.1.0", "example.yaml"), []byte("resources:\n- name: cache\n  type: redis:v1.1.0\n  properties: {replicas: many}\n"), 0o644)
	if err := e.reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.examples.Kick()
	e.settle(t)
	deadline := time.Now().Add(10 * time.Second)
	for e.examples.Counts().Error == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.counter.n.Load(); got != n+1 {
		t.Errorf("a refresh that changed one version: %d expansions, want 1", got-n)
	}
	res, err := e.svc.Resolve(context.Background(), "redis:v1.1", "")
	if err != nil {
		t.Fatal(err)
	}
	st := e.examples.Status(res.Registry, res.Digest)
	if st == nil || st.Status != StatusError || !strings.Contains(st.Error, "cache") || !strings.Contains(st.Error, "replicas") {
		t.Errorf("broken example: %+v", st)
	}
	_, body := get(t, e.url+"/t/redis:v1.1")
	if !strings.Contains(body, `id="example-status">error<`) {
		t.Errorf("page does not show the failing example")
	}
}

func TestUnified(t *testing.T) {
	tests := []struct {
		a, b string
		want string
	}{
		{"a\nb\nc\n", "a\nb\nc\n", ""},
		{"a\nb\nc\n", "a\nx\nc\n", "@@ -1,3 +1,3 @@| a|-b|+x| c|"},
		{"", "new\n", "@@ -0,0 +1 @@|+new|"},
		{"old\n", "", "@@ -1 +0,0 @@|-old|"},
		{"a\nb\n", "a\n", "@@ -1,2 +1 @@| a|-b|"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\n3\n4\n5\n6\n7\n8\n9\nten\n", "@@ -7,4 +7,4 @@| 7| 8| 9|-10|+ten|"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n", "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\ny\n", "@@ -1,4 +1,4 @@|-1|+x| 2| 3| 4|@@ -8,4 +8,4 @@| 8| 9| 10|-11|+y|"},
		{"a", "b", `@@ -1 +1 @@|-a|\ No newline at end of file|+b|\ No newline at end of file|`},
	}
	for _, tt := range tests {
		lines, _ := unified(tt.a, tt.b, 3)
		var b strings.Builder
		for _, l := range lines {
			if l.Kind == "@" {
				b.WriteString(l.Text + "|")
			} else {
				b.WriteString(l.Kind + l.Text + "|")
			}
		}
		if b.String() != tt.want {
			t.Errorf("unified(%q, %q) = %q, want %q", tt.a, tt.b, b.String(), tt.want)
		}
	}
}

// TestUnifiedTooLarge: two files that differ throughout are not diffed
// when the table would pass maxDiffCells; a few changes in large files are.
func TestUnifiedTooLarge(t *testing.T) {
	var x, y strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&x, "a%d\n", i)
		fmt.Fprintf(&y, "b%d\n", i)
	}
	if lines, note := unified(x.String(), y.String(), 3); lines != nil || !strings.Contains(note, "not diffed") {
		t.Errorf("4,000 lines changed throughout: %d lines, note %q; want a note only", len(lines), note)
	}
	if lines, note := unified(x.String(), strings.Replace(x.String(), "a17\n", "b17\n", 1), 3); note != "" || len(lines) == 0 {
		t.Errorf("one line changed in 4,000: note %q", note)
	}
}

func TestSplitAction(t *testing.T) {
	tests := []struct{ in, ref, action, file string }{
		{"github.com/a/b/redis:v1", "github.com/a/b/redis:v1", "", ""},
		{"redis:v1/diff", "redis:v1", "diff", ""},
		{"redis/preview", "redis", "preview", ""},
		{"redis:v1/-/file/helpers/x.jinja", "redis:v1", "file", "helpers/x.jinja"},
	}
	for _, tt := range tests {
		ref, action, file := splitAction(tt.in)
		if ref != tt.ref || action != tt.action || file != tt.file {
			t.Errorf("splitAction(%q) = %q %q %q", tt.in, ref, action, file)
		}
	}
}

// TestNewVersionListed: a version added by a refresh appears on the pages
// of the template's other versions, which were shown before.
func TestNewVersionListed(t *testing.T) {
	e := newTestEnv(t)
	page := e.url + "/t/redis:v1.0.1@" + digestOf(t, e, "redis:v1.0.1")
	if _, body := get(t, page); strings.Contains(body, "v1.0.3") {
		t.Fatal("v1.0.3 listed before it exists")
	}
	dir := filepath.Join(e.dir, "redis", "v1.0.3")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(e.dir, "redis", "v1.0.2"))); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, page)
	if !strings.Contains(body, `v1 →</span> <span class="short">v1.0 →</span> <a href="/t/github.com/acme/templates/redis:v1.0.3@`) {
		t.Errorf("v1.0.3 is not listed as what v1 resolves to:\n%s", body)
	}
}

func digestOf(t *testing.T, e *testEnv, ref string) string {
	t.Helper()
	for _, v := range mustVersions(t, e, ref) {
		if strings.HasSuffix(v.Ref, ":"+strings.SplitN(ref, ":", 2)[1]) {
			return v.Digest
		}
	}
	t.Fatalf("no version %s", ref)
	return ""
}

func mustVersions(t *testing.T, e *testEnv, ref string) []api.VersionInfo {
	t.Helper()
	tm, err := e.svc.Versions(context.Background(), strings.SplitN(ref, ":", 2)[0], "")
	if err != nil {
		t.Fatal(err)
	}
	return tm.Versions
}

// panicky is an expander that panics, as a broken engine might.
type panicky struct{}

func (panicky) Expand(context.Context, *api.ExpandRequest) (*api.ExpandResult, error) {
	panic("engine bug")
}

// TestExamplesPanic: a panic while testing an example is that example's
// error, not the end of registryd.
func TestExamplesPanic(t *testing.T) {
	e := newTestEnv(t)
	ex := NewExamples(ExamplesOptions{Resolver: e.svc.Resolver(), Expander: panicky{}, Poll: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ex.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for c := ex.Counts(); c.Pending > 0 || c.Error == 0; c = ex.Counts() {
		if time.Now().After(deadline) {
			t.Fatalf("counts %+v", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, _ := e.svc.Resolve(context.Background(), "redis:v1", "")
	if st := ex.Status(res.Registry, res.Digest); st == nil || st.Status != StatusError || !strings.Contains(st.Error, "engine bug") {
		t.Errorf("status %+v", st)
	}
}

// TestPreviewCrossSite: a preview POST from another site's page (as
// Sec-Fetch-Site or Origin tell) is refused with 403 and expands nothing;
// one from the catalog's own page, or from a client that is no browser,
// goes on.
func TestPreviewCrossSite(t *testing.T) {
	e := newTestEnv(t)
	e.settle(t)
	tests := []struct {
		name   string
		header http.Header
		status int
	}{
		{"cross-site fetch metadata", http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"same-site, other origin", http.Header{"Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
		{"foreign Origin", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"same origin", http.Header{"Sec-Fetch-Site": {"same-origin"}}, http.StatusOK},
		{"no browser", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.counter.n.Load()
			req, _ := http.NewRequest("POST", e.url+"/t/redis:v1/preview", strings.NewReader("replicas=3"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d\n%.300s", resp.StatusCode, tt.status, b)
			}
			if ran := e.counter.n.Load() - before; tt.status == http.StatusForbidden && ran != 0 {
				t.Errorf("%d expansions for a refused preview", ran)
			}
		})
	}
}

// TestUnifiedPatch applies unified's diffs of generated files with GNU
// patch, an applier nobody here wrote: the hunk headers' starts and
// lengths must be what diff -u would write, or patch refuses or
// misplaces them.
func TestUnifiedPatch(t *testing.T) {
	patchBin, err := exec.LookPath("patch")
	if err != nil {
		t.Fatal("GNU patch is missing (Debian's patch package; make test installs it when root)")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		var b strings.Builder
		for range rng.IntN(40) {
			fmt.Fprintf(&b, "l%d\n", rng.IntN(8))
		}
		if rng.IntN(6) == 0 {
			b.WriteString("tail")
		}
		return b.String()
	}
	dir := t.TempDir()
	for i := range 200 {
		a, b := gen(), gen()
		if rng.IntN(3) == 0 {
			b = mutate(rng, a)
		}
		lines, note := unified(a, b, rng.IntN(4))
		if note != "" {
			t.Fatalf("case %d: %s", i, note)
		}
		var p strings.Builder
		p.WriteString("--- a/f\n+++ b/f\n")
		for _, l := range lines {
			if l.Kind == "@" {
				p.WriteString(l.Text + "\n")
			} else {
				p.WriteString(l.Kind + l.Text + "\n")
			}
		}
		f := filepath.Join(dir, "f")
		if err := os.WriteFile(f, []byte(a), 0o644); err != nil {
			t.Fatal(err)
		}
		if a == b {
			if len(lines) != 0 {
				t.Fatalf("case %d: equal files got a diff %q", i, p.String())
			}
			continue
		}
		cmd := exec.Command(patchBin, "--quiet", "--force", "--fuzz=0", "--no-backup-if-mismatch", "-r", "-", f)
		cmd.Stdin = strings.NewReader(p.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: patch refused the diff of %q -> %q: %v\n%s\ndiff:\n%s", i, a, b, err, out, p.String())
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != b {
			t.Fatalf("case %d: patched %q -> %q gave %q\ndiff:\n%s", i, a, b, got, p.String())
		}
	}
}

// mutate changes, inserts and deletes a few lines of s.
func mutate(rng *rand.Rand, s string) string {
	l := splitLines(s)
	for range 1 + rng.IntN(3) {
		switch i := rng.IntN(len(l) + 1); {
		case i == len(l) || rng.IntN(3) == 0:
			l = slices.Insert(l, i, fmt.Sprintf("new%d", rng.IntN(100)))
		case rng.IntN(2) == 0:
			l = slices.Delete(l, i, i+1)
		default:
			l[i] = "changed"
		}
	}
	if len(l) == 0 {
		return ""
	}
	return strings.Join(l, "\n") + "\n"
}

// TestRecentByCommit: the front page lists versions by when their
// directories last changed in the registry's git history, not by when
// registryd indexed them.
func TestRecentByCommit(t *testing.T) {
	dir := githubtest.NewRepoFS(t, dm.ExampleRegistry())
	when := time.Now().Add(-3 * 24 * time.Hour).UTC().Truncate(time.Second)
	githubtest.CommitAt(t, dir, map[string]string{"postgres/v1.1.0/NOTES.md": "notes\n"}, when)
	e := serveRegistry(t, api.RegistrySpec{Prefix: dm.ExampleRegistryPrefix, Dir: dir}, 0)
	e.settle(t)
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body = get(t, e.url+"/")
		if strings.Contains(body, "changed ") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	i := strings.Index(body, "/t/github.com/acme/templates/postgres:v1.1.0")
	j := strings.Index(body, "/t/github.com/acme/templates/redis:v2.0.0")
	if i < 0 || j < 0 || i > j {
		t.Fatalf("postgres:v1.1.0 (changed 3 days ago) is not listed before redis:v2.0.0 (changed in 2024): %d, %d\n%s", i, j, body)
	}
	if !strings.Contains(body, `datetime="`+when.Format("2006-01-02T15:04:05Z")+`"`) || !strings.Contains(body, "changed <time") || !strings.Contains(body, "3 days ago") {
		t.Errorf("postgres:v1.1.0 is not shown changed 3 days ago at %s\n%s", when, body)
	}
	if !strings.Contains(body, "on 2024-01-01") {
		t.Errorf("the versions of the first commit are not dated 2024-01-01\n%s", body)
	}
}
