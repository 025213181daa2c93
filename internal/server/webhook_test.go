package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

const hookSecret = "hook-secret-789"

// sign computes X-Hub-Signature-256 as GitHub does.
func sign(secret string, body []byte) string { return signWith(sha256.New, "sha256=", secret, body) }

// signWith computes an HMAC signature header with any hash.
func signWith(h func() hash.Hash, prefix, secret string, body []byte) string {
	m := hmac.New(h, []byte(secret))
	m.Write(body)
	return prefix + hex.EncodeToString(m.Sum(nil))
}

type hookEnv struct {
	gh   *githubtest.Server
	repo string
	reg  *index.Registry
	http *httptest.Server
	log  *lockedBuffer
	srv  *Server
	// deliveries numbers the deliveries post sends.
	deliveries atomic.Int64
}

// lockedBuffer is a log sink that refreshes in the background may write
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newHookEnv serves a GitHub registry (acme/tpl, tracking main) from the
// GitHub test server, with webhooks configured by opts.
func newHookEnv(t *testing.T, opts WebhookOptions) *hookEnv {
	t.Helper()
	gh, repo, reg := githubFixture(t)
	def, _ := resolve.ParseRegistry(prefix)
	log := &lockedBuffer{}
	s := New(Options{Resolver: resolve.New(def, reg), Webhooks: opts, Logger: newTestLogger(log)})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &hookEnv{gh: gh, repo: repo, reg: reg, http: hs, log: log, srv: s}
}

// post sends a webhook delivery with a new delivery ID; sig "" sends
// none.
func (e *hookEnv) post(t *testing.T, event, sig string, body []byte) (int, string) {
	t.Helper()
	resp, b := e.send(t, event, sig, fmt.Sprintf("d-%d", e.deliveries.Add(1)), bytes.NewReader(body))
	return resp.StatusCode, b
}

// send sends a webhook delivery whose body is read from body: with a
// length for a *bytes.Reader, chunked for other readers.
func (e *hookEnv) send(t *testing.T, event, sig, delivery string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/webhooks/github", body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	if sig != "" {
		req.Header.Set("X-Hub-Signature-256", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func pushBody(repo, ref, after string) []byte {
	b, _ := json.Marshal(map[string]any{
		"ref":        ref,
		"after":      after,
		"repository": map[string]any{"full_name": repo, "default_branch": "main"},
	})
	return b
}

// waitVersion waits up to 5 seconds for the registry to serve commit sha.
func (e *hookEnv) waitVersion(t *testing.T, sha string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s := e.reg.Snapshot(); s != nil && s.Tree.Version == sha {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("commit %s not served within 5s (serving %s)", sha, e.reg.Snapshot().Tree.Version)
}

func TestWebhookSignatures(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: hookSecret, Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl", Branch: "main"}}})
	push := pushBody("acme/tpl", "refs/heads/main", "x")
	ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	tests := []struct {
		name, event, sig string
		body             []byte
		status           int
		want             string
	}{
		{"ping", "ping", sign(hookSecret, ping), ping, 200, "pong"},
		{"missing signature", "push", "", push, 401, "missing X-Hub-Signature-256"},
		{"bad signature", "push", sign("wrong", push), push, 401, "does not match"},
		{"malformed signature", "push", "sha256=zz", push, 401, "must be sha256= and 64 hex digits"},
		{"SHA-1 in the SHA-256 header", "push", signWith(sha1.New, "sha1=", hookSecret, push), push, 401, "must be sha256="},
		{"SHA-512 in the SHA-256 header", "push", signWith(sha512.New, "sha512=", hookSecret, push), push, 401, "must be sha256="},
		{"upper-case prefix", "push", "SHA256=" + sign(hookSecret, push)[len("sha256="):], push, 401, "must be sha256="},
		{"signature of another body", "push", sign(hookSecret, ping), push, 401, "does not match"},
		{"other event", "issues", sign(hookSecret, ping), ping, 202, "ignored"},
		{"other branch", "push", sign(hookSecret, pushBody("acme/tpl", "refs/heads/dev", "x")), pushBody("acme/tpl", "refs/heads/dev", "x"), 202, "no registry tracks refs/heads/dev"},
		{"other repository", "push", sign(hookSecret, pushBody("acme/other", "refs/heads/main", "x")), pushBody("acme/other", "refs/heads/main", "x"), 202, "ignored"},
		{"tracked branch", "push", sign(hookSecret, push), push, 202, "refresh scheduled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.post(t, tt.event, tt.sig, tt.body)
			if code != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%d %s, want %d with %q", code, body, tt.status, tt.want)
			}
			if strings.Contains(body, hookSecret) {
				t.Errorf("the answer holds the secret: %s", body)
			}
		})
	}
	if strings.Contains(e.log.String(), hookSecret) {
		t.Errorf("the log holds the secret:\n%s", e.log)
	}
}

func TestWebhookDisabled(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl"}}})
	push := pushBody("acme/tpl", "refs/heads/main", "x")
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != 404 {
		t.Errorf("without a secret: %d %s, want 404", code, body)
	}
}

// TestWebhookPerRegistrySecret: a registry's own secret, not the global
// one, authorises its pushes.
func TestWebhookPerRegistrySecret(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: "global", Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl", Secret: hookSecret}}})
	push := pushBody("acme/tpl", "refs/heads/main", "x")
	if code, body := e.post(t, "push", sign("global", push), push); code != 401 {
		t.Errorf("global secret for a registry with its own: %d %s, want 401", code, body)
	}
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != 202 || !strings.Contains(body, "refresh scheduled") {
		t.Errorf("own secret: %d %s", code, body)
	}
}

// TestWebhookPushRefreshes: a push to the tracked branch serves the new
// commit within 5 seconds, and a burst of 20 pushes makes one refresh:
// one commit request to GitHub.
func TestWebhookPushRefreshes(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: hookSecret, Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl"}}})
	head := githubtest.Commit(t, e.repo, map[string]string{"redis/v1.0.9/redis.jinja": "kind: d\n"})
	e.gh.ResetCounts()
	push := pushBody("acme/tpl", "refs/heads/main", head)
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code/100 != 2 {
		t.Fatalf("push: %d %s", code, body)
	}
	e.waitVersion(t, head)
	if n := e.gh.RequestsTo("commit"); n != 1 {
		t.Errorf("one push: %d commit requests, want 1", n)
	}

	head = githubtest.Commit(t, e.repo, map[string]string{"redis/v1.0.10/redis.jinja": "kind: d\n"})
	e.gh.ResetCounts()
	for i := range 20 {
		push := pushBody("acme/tpl", "refs/heads/main", fmt.Sprint(head, i))
		if code, body := e.post(t, "push", sign(hookSecret, push), push); code/100 != 2 {
			t.Fatalf("push %d: %d %s", i, code, body)
		}
	}
	e.waitVersion(t, head)
	// Let a second refresh, if one was wrongly scheduled, happen.
	time.Sleep(600 * time.Millisecond)
	if n := e.gh.RequestsTo("commit"); n != 1 {
		t.Errorf("a burst of 20 pushes: %d commit requests to GitHub, want 1 (one refresh)", n)
	}
}

// TestWebhookLimits: a body over MaxBody is refused (413), before it is
// read when it announces its length; with every read slot taken a
// delivery is turned away (503 with Retry-After) unread.
func TestWebhookLimits(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: hookSecret, MaxBody: 1 << 10, MaxReads: 1, Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl"}}})
	big := bytes.Repeat([]byte(" "), 2<<10)
	sig := sign(hookSecret, big)
	if resp, body := e.send(t, "push", sig, "big-1", bytes.NewReader(big)); resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "1024-byte limit") {
		t.Errorf("announced body over the limit: %d %s, want 413", resp.StatusCode, body)
	}
	if resp, body := e.send(t, "push", sig, "big-2", io.MultiReader(bytes.NewReader(big))); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d %s, want 413", resp.StatusCode, body)
	}
	// Without a signature, 24 MiB are not read: 401.
	if resp, body := e.send(t, "push", "", "big-3", io.LimitReader(zeros{}, 24<<20)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned 24 MiB: %d %s, want 401", resp.StatusCode, body)
	}
	e.srv.webhooks.reads <- struct{}{} // the only read slot is taken
	push := pushBody("acme/tpl", "refs/heads/main", "x")
	resp, body := e.send(t, "push", sign(hookSecret, push), "busy", bytes.NewReader(push))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("no read slot: %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	<-e.srv.webhooks.reads
	if resp, body := e.send(t, "push", sign(hookSecret, push), "free", bytes.NewReader(push)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("with a free slot: %d %s", resp.StatusCode, body)
	}
}

// zeros reads zero bytes without end.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestWebhookReplays: one signed delivery sent 100 times refreshes once:
// repeats answer 200 without a refresh, and GitHub sees at most 2
// requests (the refresh's commit and tree).
func TestWebhookReplays(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: hookSecret, Window: 50 * time.Millisecond, Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl"}}})
	head := githubtest.Commit(t, e.repo, map[string]string{"redis/v1.0.9/redis.jinja": "kind: d\n"})
	e.gh.ResetCounts()
	push := pushBody("acme/tpl", "refs/heads/main", head)
	sig := sign(hookSecret, push)
	for i := range 100 {
		resp, body := e.send(t, "push", sig, "replayed-delivery", bytes.NewReader(push))
		want := http.StatusOK
		if i == 0 {
			want = http.StatusAccepted
		}
		if resp.StatusCode != want {
			t.Fatalf("delivery %d: %d %s, want %d", i, resp.StatusCode, body, want)
		}
	}
	e.waitVersion(t, head)
	// Let a second refresh, if one was wrongly scheduled, happen.
	time.Sleep(300 * time.Millisecond)
	if n := e.gh.Requests(); n > 2 {
		t.Errorf("100 replays of one delivery: %d GitHub requests, want at most 2", n)
	}
}

// TestWebhookBackoff: while GitHub answers 5xx, pushes do not refresh
// before the back-off GitHub's failure set (Status.RetryAt), as timed
// refreshes do not.
func TestWebhookBackoff(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: hookSecret, Window: 20 * time.Millisecond, MaxWait: 50 * time.Millisecond, Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl"}}})
	e.gh.SetFaults(githubtest.Faults{Status5xx: 1000})
	e.gh.ResetCounts()
	push := pushBody("acme/tpl", "refs/heads/main", "x")
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != http.StatusAccepted {
		t.Fatalf("push: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.reg.Status().RetryAt.IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("the refresh after the push did not meet GitHub's 5xx within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 5 {
		if code, body := e.post(t, "push", sign(hookSecret, push), push); code != http.StatusAccepted {
			t.Fatalf("push: %d %s", code, body)
		}
		// Longer than the window and MaxWait: without the back-off, each
		// push would refresh.
		time.Sleep(100 * time.Millisecond)
	}
	if n := e.gh.Requests(); n != 1 {
		t.Errorf("pushes while GitHub answers 5xx: %d GitHub requests, want 1 (then the back-off)", n)
	}
}

// TestWebhookCoalesces: pushes that arrive while a push-triggered refresh
// runs queue one more refresh between them, not one each.
func TestWebhookCoalesces(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: hookSecret, Window: 20 * time.Millisecond, MaxWait: 50 * time.Millisecond, Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl"}}})
	e.gh.SetFaults(githubtest.Faults{Latency: 400 * time.Millisecond})
	e.gh.ResetCounts()
	push := pushBody("acme/tpl", "refs/heads/main", "x")
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != http.StatusAccepted {
		t.Fatalf("push: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.gh.Requests() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no refresh reached GitHub within 5s of the push")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// While the refresh waits for GitHub: pushes further apart than the
	// window, each of which would otherwise start a refresh of its own.
	for range 8 {
		if code, body := e.post(t, "push", sign(hookSecret, push), push); code != http.StatusAccepted {
			t.Fatalf("push: %d %s", code, body)
		}
		time.Sleep(40 * time.Millisecond)
	}
	// Time for the queued refresh, and for any wrongly queued ones.
	time.Sleep(1500 * time.Millisecond)
	if n := e.gh.RequestsTo("commit"); n != 2 {
		t.Errorf("9 pushes, 8 of them during a refresh: %d refreshes asked GitHub, want 2 (one running, one queued)", n)
	}
}

// newTestLogger logs into w, at debug level, so tests can look for secrets.
func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestWebhookSetRegistries: registries set while serving (from cluster
// objects) are refreshed by signed pushes with their own secrets, and
// OnPush hears of each with the pushed commit; registries set away are
// not.
func TestWebhookSetRegistries(t *testing.T) {
	var mu sync.Mutex
	var pushed []string
	e := newHookEnv(t, WebhookOptions{OnPush: func(registry, commit string) {
		mu.Lock()
		defer mu.Unlock()
		pushed = append(pushed, registry+"@"+commit)
	}})
	push := pushBody("acme/tpl", "refs/heads/main", "abc123")
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != 404 {
		t.Fatalf("before any registry: %d %s, want 404", code, body)
	}
	e.srv.SetWebhookRegistries([]WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl", Secret: hookSecret}})
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != 202 || !strings.Contains(body, "refresh scheduled") {
		t.Fatalf("after SetWebhookRegistries: %d %s", code, body)
	}
	mu.Lock()
	got := strings.Join(pushed, ",")
	mu.Unlock()
	if want := prefix + "@abc123"; got != want {
		t.Errorf("OnPush heard %q, want %q", got, want)
	}
	e.srv.SetWebhookRegistries(nil)
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != 404 {
		t.Errorf("after the registry went away: %d %s, want 404", code, body)
	}
}

// TestRequestRefreshAtCommit: a refresh requested with the commit another
// replica's push named lists that commit, one tree request and no head
// read; a signed push in the same burst makes it read the head, once.
func TestRequestRefreshAtCommit(t *testing.T) {
	e := newHookEnv(t, WebhookOptions{Secret: hookSecret, Registries: []WebhookRegistry{{Registry: prefix, Owner: "acme", Repo: "tpl"}}})
	head := githubtest.Commit(t, e.repo, map[string]string{"redis/v1.0.9/redis.jinja": "kind: d\n"})
	e.gh.ResetCounts()
	if !e.srv.RequestRefresh(prefix, head) {
		t.Fatalf("RequestRefresh(%s): not served", prefix)
	}
	e.waitVersion(t, head)
	if c, tr := e.gh.RequestsTo("commit"), e.gh.RequestsTo("tree"); c != 0 || tr != 1 {
		t.Errorf("refresh at a pushed commit: %d commit and %d tree requests, want 0 and 1", c, tr)
	}

	head = githubtest.Commit(t, e.repo, map[string]string{"redis/v1.0.10/redis.jinja": "kind: d\n"})
	e.gh.ResetCounts()
	e.srv.RequestRefresh(prefix, "0123456789012345678901234567890123456789")
	push := pushBody("acme/tpl", "refs/heads/main", head)
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code/100 != 2 {
		t.Fatalf("push: %d %s", code, body)
	}
	e.waitVersion(t, head)
	if c, tr := e.gh.RequestsTo("commit"), e.gh.RequestsTo("tree"); c != 1 || tr != 1 {
		t.Errorf("a commit and a push in one burst: %d commit and %d tree requests, want 1 and 1 (one head read)", c, tr)
	}
	if e.srv.RequestRefresh("github.com/acme/unknown", head) {
		t.Error("RequestRefresh of an unknown registry reported it served")
	}
}

// TestWebhookPendingPerRegistry: two namespaces' registries of one prefix,
// each with its own secret, both pushed within one window: both refresh.
// Pending refreshes are kept per registry, so that team-b's push does not
// take the place of team-a's.
func TestWebhookPendingPerRegistry(t *testing.T) {
	gh, repo, _ := githubFixture(t)
	open := func(ns string) *index.Registry {
		g, err := api.OpenRegistry(api.RegistrySpec{Prefix: prefix, Namespace: ns, Object: "tpl",
			GitHub: &api.GitHubSpec{Owner: "acme", Repo: "tpl", Branch: "main", APIURL: gh.URL}}, api.Setup{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		return g
	}
	a, b := open("team-a"), open("team-b")
	s := New(Options{Resolver: resolve.New(resolve.Registry{}, a, b), Webhooks: WebhookOptions{Window: 100 * time.Millisecond,
		Registries: []WebhookRegistry{
			{Registry: a.Key(), Owner: "acme", Repo: "tpl", Branch: "main", Secret: "secret-a"},
			{Registry: b.Key(), Owner: "acme", Repo: "tpl", Branch: "main", Secret: "secret-b"},
		}}})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e := &hookEnv{gh: gh, repo: repo, http: hs, srv: s}
	head := githubtest.Commit(t, repo, map[string]string{"redis/v1.0.9/redis.jinja": "kind: d\n"})
	push := pushBody("acme/tpl", "refs/heads/main", head)
	for _, secret := range []string{"secret-b", "secret-a"} {
		if code, body := e.post(t, "push", sign(secret, push), push); code != http.StatusAccepted || !strings.Contains(body, "refresh scheduled") {
			t.Fatalf("push signed with %s: %d %s", secret, code, body)
		}
	}
	for _, g := range []*index.Registry{a, b} {
		e.reg = g
		e.waitVersion(t, head)
	}
}

// TestWebhookCandidates: a delivery is checked only against the secrets
// of the registries of the repository it names (one HMAC per candidate
// registry at most, whatever the number of tenants' secrets), a delivery
// naming a repository no registry tracks against the global secret
// alone, and one registry's secret never signs a delivery for another
// tenant's repository.
func TestWebhookCandidates(t *testing.T) {
	var regs []WebhookRegistry
	for i := range 60 {
		regs = append(regs, WebhookRegistry{Registry: fmt.Sprintf("team-%02d/%s", i, prefix), Owner: "acme", Repo: fmt.Sprintf("repo-%02d", i), Secret: fmt.Sprintf("secret-%02d", i)})
	}
	regs = append(regs,
		WebhookRegistry{Registry: "team-a/" + prefix, Owner: "Acme", Repo: "Shared", Secret: "secret-a"},
		WebhookRegistry{Registry: "team-b/" + prefix, Owner: "acme", Repo: "shared", Secret: "secret-b"},
		WebhookRegistry{Registry: "team-c/" + prefix, Owner: "acme", Repo: "shared", Secret: "secret-b"},
		WebhookRegistry{Registry: prefix, Owner: "acme", Repo: "platform"})
	h := newWebhooks(WebhookOptions{Secret: "global"}, resolve.New(resolve.Registry{}), slog.New(slog.DiscardHandler), NewMetrics().shed)
	h.setRegistries(regs)
	cfg := h.cfg.Load()
	for _, tt := range []struct {
		repo string
		want []string
	}{
		{"acme/repo-07", []string{"secret-07"}},
		{"ACME/REPO-07", []string{"secret-07"}},
		{"acme/shared", []string{"secret-a", "secret-b"}},
		{"acme/platform", []string{"global"}},
		{"acme/untracked", []string{"global"}},
		{"", []string{"global"}},
	} {
		if got := cfg.secretsFor(tt.repo, "global"); !slices.Equal(got, tt.want) {
			t.Errorf("secretsFor(%q) = %q, want %q", tt.repo, got, tt.want)
		}
	}
	// Without a global secret, a delivery no registry could take is
	// checked against nothing.
	h2 := newWebhooks(WebhookOptions{}, resolve.New(resolve.Registry{}), slog.New(slog.DiscardHandler), NewMetrics().shed)
	h2.setRegistries(regs[:60])
	if got := h2.cfg.Load().secretsFor("acme/untracked", ""); len(got) != 0 {
		t.Errorf("untracked repository without a global secret: checked against %q", got)
	}

	for _, tt := range []struct {
		name    string
		payload string
		want    string
	}{
		{"full name", `{"repository":{"full_name":"acme/tpl","html_url":"https://github.com/x/y"}}`, "acme/tpl"},
		{"html url", `{"repository":{"html_url":"https://ghe.example.com/acme/tpl"}}`, "acme/tpl"},
		{"no repository", `{"zen":"Design for failure.","hook_id":1}`, ""},
		{"repository of another kind", `{"repository":"acme/tpl"}`, ""},
		{"not JSON", `payload=%7B`, ""},
		{"html url of three parts", `{"repository":{"html_url":"https://github.com/a/b/c"}}`, ""},
	} {
		if got := repositoryOf([]byte(tt.payload)); got != tt.want {
			t.Errorf("%s: repositoryOf = %q, want %q", tt.name, got, tt.want)
		}
	}

	// End to end: each registry's own secret refreshes it; another
	// tenant's secret (valid for its own registry) is refused for a
	// repository it does not track.
	e := newHookEnv(t, WebhookOptions{Secret: "global"})
	e.srv.SetWebhookRegistries(append(regs, WebhookRegistry{Registry: prefix, Owner: "acme", Repo: "tpl", Branch: "main", Secret: hookSecret}))
	push := pushBody("acme/tpl", "refs/heads/main", "x")
	if code, body := e.post(t, "push", sign(hookSecret, push), push); code != 202 || !strings.Contains(body, "refresh scheduled") {
		t.Errorf("own secret: %d %s", code, body)
	}
	for _, secret := range []string{"secret-07", "secret-b", "global"} {
		if code, body := e.post(t, "push", sign(secret, push), push); code != 401 {
			t.Errorf("acme/tpl signed with %s, another registry's secret: %d %s, want 401", secret, code, body)
		}
	}
	form := []byte("payload=" + url.QueryEscape(string(push)))
	req, _ := http.NewRequest("POST", e.http.URL+"/v1/webhooks/github", bytes.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", sign(hookSecret, form))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || !strings.Contains(string(b), "refresh scheduled") {
		t.Errorf("form-encoded push with its own secret: %d %s", resp.StatusCode, b)
	}
}

// BenchmarkWebhookUnsigned: a 5 MiB delivery with a wrong signature naming
// one tenant's repository, with 60 tenants' secrets configured: what an
// unauthenticated sender costs registryd (one HMAC, one JSON scan).
func BenchmarkWebhookUnsigned(b *testing.B) {
	var regs []WebhookRegistry
	for i := range 60 {
		regs = append(regs, WebhookRegistry{Registry: fmt.Sprintf("team-%02d/%s", i, prefix), Owner: "acme", Repo: fmt.Sprintf("repo-%02d", i), Secret: fmt.Sprintf("secret-%02d", i)})
	}
	s := New(Options{Resolver: resolve.New(resolve.Registry{}), Webhooks: WebhookOptions{Registries: regs}})
	commits := make([]map[string]string, 0, 17000)
	for i := range cap(commits) {
		commits = append(commits, map[string]string{"id": fmt.Sprintf("%040d", i), "message": strings.Repeat("change ", 30)})
	}
	// The repository last, as an attacker would put it: the whole body is
	// scanned.
	body, _ := json.Marshal(map[string]any{"commits": commits, "ref": "refs/heads/main", "repository": map[string]any{"full_name": "acme/repo-07"}})
	if len(body) > DefaultWebhookMaxBody {
		b.Fatalf("a body of %d bytes", len(body))
	}
	b.SetBytes(int64(len(body)))
	sig := sign("wrong", body)
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("POST", "/v1/webhooks/github", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", sig)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 401 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}
