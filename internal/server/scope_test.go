package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

func TestParseScope(t *testing.T) {
	tests := []struct {
		authorization, namespace string
		ns, token                string
	}{
		{"Bearer abc.def-ghi_jkl", "team-a", "team-a", "abc.def-ghi_jkl"},
		{"bearer  tok ", "team-a", "team-a", "tok"},
		{"Bearer tok", "", "", ""},
		{"Bearer tok", "Team-A", "", ""},
		{"Bearer tok", "-a", "", ""},
		{"Bearer tok", "a-", "", ""},
		{"Bearer tok", "a.b", "", ""},
		{"Bearer tok", strings.Repeat("a", 64), "", ""},
		{"Basic dXNlcjpwYXNz", "team-a", "team-a", ""},
		{"Bearer", "team-a", "team-a", ""},
		{"Bearer a b", "team-a", "team-a", ""},
		{"Bearer tok\x00", "team-a", "team-a", ""},
		{"Bearer " + strings.Repeat("x", maxToken+1), "team-a", "team-a", ""},
	}
	for _, tt := range tests {
		ns, tok := ParseScope(tt.authorization, tt.namespace)
		if ns != tt.ns || tok != tt.token {
			t.Errorf("ParseScope(%.40q, %q) = %q, %.20q; want %q, %.20q", tt.authorization, tt.namespace, ns, tok, tt.ns, tt.token)
		}
	}
}

// FuzzParseScope: whatever a client sends, the scope is a valid namespace
// (or none) and a token of header-safe characters (or none), never a
// panic.
func FuzzParseScope(f *testing.F) {
	f.Add("Bearer abc.def", "team-a")
	f.Add("bearer  x ", "a")
	f.Add("Basic abc", "kube-system")
	f.Add("Bearer \xff\x00", "ns-1")
	f.Fuzz(func(t *testing.T, authorization, namespace string) {
		ns, tok := ParseScope(authorization, namespace)
		if ns != "" && (!validNamespace(ns) || ns != namespace) {
			t.Fatalf("namespace %q from %q", ns, namespace)
		}
		if tok != "" && (ns == "" || len(tok) > maxToken || strings.ContainsAny(tok, " \t\x00") || strings.TrimSpace(tok) != tok) {
			t.Fatalf("token %q from %q", tok, authorization)
		}
		if tok != "" && !strings.Contains(authorization, tok) {
			t.Fatalf("token %q not in %q", tok, authorization)
		}
	})
}

// fakeAuthorizer knows tokens "team-a-token", "team-b-token" and
// "metrics", allows the first to get Registry team-a/private and the last
// to get /metrics, throttles token "flood", and counts and records what
// it is asked.
type fakeAuthorizer struct {
	asked atomic.Int64
	mu    sync.Mutex
	calls []string
}

func (a *fakeAuthorizer) record(call string) {
	a.asked.Add(1)
	a.mu.Lock()
	a.calls = append(a.calls, call)
	a.mu.Unlock()
}

// took returns the calls recorded since the last took.
func (a *fakeAuthorizer) took() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.calls
	a.calls = nil
	return c
}

func (a *fakeAuthorizer) Authenticate(_ context.Context, c Caller) error {
	a.record("authenticate")
	switch c.Token {
	case "team-a-token", "team-b-token", "metrics":
		return nil
	case "flood":
		return &ThrottledError{After: 3 * time.Second, Reason: "a test"}
	}
	return ErrUnauthenticated
}

func (a *fakeAuthorizer) AllowedRegistry(_ context.Context, c Caller, ns, name string) bool {
	a.record("registry " + ns + "/" + name)
	return c.Token == "team-a-token" && c.Sum == NewCaller("team-a-token").Sum && ns == "team-a" && name == "private"
}

func (a *fakeAuthorizer) AllowedPath(_ context.Context, c Caller, path string) bool {
	a.record("path " + path)
	return c.Token == "metrics" && path == "/metrics"
}

// TestNamespacedRegistry: a namespace's registry answers, on every route,
// only a request that names its namespace with a token allowed to get
// its object; others get 404, as if it did not exist.
func TestNamespacedRegistry(t *testing.T) {
	reg := func(g *index.Registry, text string) *index.Registry {
		g.Source = fetch.NewLocal(fstest.MapFS{"cm/v1.0.0/cm.jinja": {Data: []byte(text)}})
		if err := g.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		return g
	}
	shared := reg(&index.Registry{Name: "github.com/acme/shared"}, "shared: x")
	private := reg(&index.Registry{Name: "github.com/acme/private", Namespace: "team-a", Object: "private"}, "secret: x")
	authz := &fakeAuthorizer{}
	s := New(Options{Resolver: resolve.New(resolve.Registry{}, shared, private), Authorizer: authz})

	do := func(method, target, token string, cookie *http.Cookie) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	ref := url.QueryEscape("github.com/acme/private/cm:v1")
	paths := []string{"/v1/resolve?ref=" + ref, "/v1/template?ref=" + ref, "/v1/file?ref=" + ref + "&path=cm.jinja",
		"/v1/registries/github.com/acme/private", "/r/github.com/acme/private", "/t/github.com/acme/private/cm:v1"}
	for _, p := range paths {
		for _, c := range []struct {
			name, query, token string
			want               int
		}{
			{"anonymous", "", "", 404},
			{"no token", "&namespace=team-a", "", 404},
			{"another token", "&namespace=team-a", "team-b-token", 404},
			{"another namespace", "&namespace=team-b", "team-a-token", 404},
			{"allowed", "&namespace=team-a", "team-a-token", 200},
		} {
			target := p + c.query
			if !strings.Contains(p, "?") && c.query != "" {
				target = p + "?" + c.query[1:]
			}
			if w := do("GET", target, c.token, nil); w.Code != c.want || c.want == 404 && strings.Contains(w.Body.String(), "team-a") {
				t.Errorf("%s: GET %s: %d %.200s, want %d", c.name, target, w.Code, w.Body, c.want)
			}
		}
	}
	// Listings show it only to the allowed.
	var regs api.RegistryList
	for _, c := range []struct {
		target, token string
		want          int
	}{
		{"/v1/registries", "", 1},
		{"/v1/registries?namespace=team-a", "team-b-token", 1},
		{"/v1/registries?namespace=team-a", "team-a-token", 2},
	} {
		w := do("GET", c.target, c.token, nil)
		if err := json.Unmarshal(w.Body.Bytes(), &regs); err != nil || len(regs.Registries) != c.want {
			t.Errorf("GET %s as %q: %d registries (%v), want %d", c.target, c.token, len(regs.Registries), err, c.want)
		}
	}
	// Changes: every namespace's registries the token may get, by key.
	for _, c := range []struct {
		target, token string
		want          bool
	}{
		{"/v1/index/changes", "", false},
		{"/v1/index/changes", "team-b-token", false},
		{"/v1/index/changes", "team-a-token", true},
		{"/v1/index/changes?namespace=team-b", "team-a-token", false},
	} {
		w := do("GET", c.target, c.token, nil)
		var ch api.IndexChanges
		if err := json.Unmarshal(w.Body.Bytes(), &ch); err != nil {
			t.Fatal(err)
		}
		if _, got := ch.Registries["team-a/github.com/acme/private"]; got != c.want || len(ch.Registries) != map[bool]int{true: 2, false: 1}[c.want] {
			t.Errorf("GET %s as %q: %v", c.target, c.token, ch.Registries)
		}
	}
	// /metrics takes a token allowed to read it.
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"team-a-token", 403}, {"metrics", 200}} {
		if w := do("GET", "/metrics", c.token, nil); w.Code != c.want {
			t.Errorf("/metrics as %q: %d, want %d", c.token, w.Code, c.want)
		}
	}
	// The catalog remembers the namespace in a cookie; the API does not
	// read it.
	w := do("GET", "/?namespace=team-a", "team-a-token", nil)
	var cookie *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == NamespaceCookie {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != "team-a" || !cookie.HttpOnly {
		t.Fatalf("catalog cookie: %+v", cookie)
	}
	if w := do("GET", "/r/github.com/acme/private", "team-a-token", cookie); w.Code != 200 {
		t.Errorf("catalog page with the cookie: %d", w.Code)
	}
	if w := do("GET", "/r/github.com/acme/private", "", cookie); w.Code != 404 {
		t.Errorf("catalog page with the cookie, no token: %d", w.Code)
	}
	if w := do("GET", "/v1/resolve?ref="+ref, "team-a-token", cookie); w.Code != 404 {
		t.Errorf("API with the cookie alone: %d, want 404", w.Code)
	}
	// Anonymous requests never ask the authorizer.
	authz.asked.Store(0)
	do("GET", "/v1/resolve?ref="+ref, "", nil)
	do("GET", "/v1/resolve?ref="+url.QueryEscape("github.com/acme/shared/cm:v1"), "", nil)
	if n := authz.asked.Load(); n != 0 {
		t.Errorf("anonymous requests asked the authorizer %d times", n)
	}

	// A made-up token naming a namespace with a registry costs what it
	// costs naming one without: one Authenticate, nothing after it.
	for _, p := range append(paths, "/v1/registries", "/v1/search?q=cm", "/v1/index/changes?") {
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		authz.took()
		with := do("GET", p+sep+"namespace=team-a", "made-up", nil)
		withCalls := authz.took()
		without := do("GET", p+sep+"namespace=team-z", "made-up", nil)
		withoutCalls := authz.took()
		if !slices.Equal(withCalls, withoutCalls) || !slices.Equal(withCalls, []string{"authenticate"}) || with.Code != without.Code {
			t.Errorf("GET %s with a made-up token: naming team-a (registries) %d %q, naming team-z (none) %d %q; want one authenticate each, the same answer",
				p, with.Code, withCalls, without.Code, withoutCalls)
		}
	}

	// A throttled token is answered 429 with Retry-After, on every route
	// that reads a scope, the hot path, the long poll and /metrics too.
	for _, p := range append(paths, "/v1/registries?", "/v1/index/changes?", "/metrics?") {
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		w := do("GET", p+sep+"namespace=team-a", "flood", nil)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "3" || !strings.Contains(w.Body.String(), "too many bearer tokens to review") {
			t.Errorf("GET %s with a throttled token: %d (Retry-After %q) %.200s, want 429 with Retry-After 3", p, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
}

// TestClientAddr: a client is named by its IP address, an IPv6 one by its
// /64 (one host may use any address in it), an IPv4-mapped one as IPv4.
func TestClientAddr(t *testing.T) {
	for _, tt := range []struct{ remote, want string }{
		{"192.0.2.7:4711", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		if got := ClientAddr(r); got != tt.want {
			t.Errorf("ClientAddr(%q) = %q, want %q", tt.remote, got, tt.want)
		}
	}
}

// TestClientAddrTrustedProxy: behind a trusted proxy the client is the
// last X-Forwarded-For entry that is not a trusted proxy; a client's own
// entries further left, and X-Forwarded-For from anyone else, count for
// nothing.
func TestClientAddrTrustedProxy(t *testing.T) {
	s := New(Options{Resolver: resolve.New(resolve.Registry{}), TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}})
	for _, tt := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"no proxy", "192.0.2.7:1", nil, "192.0.2.7"},
		{"an untrusted peer's header", "192.0.2.7:1", []string{"198.51.100.1"}, "192.0.2.7"},
		{"one proxy", "10.1.2.3:1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a client's forged entries", "10.1.2.3:1", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1"},
		{"two proxies", "10.1.2.3:1", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"headers repeated", "10.1.2.3:1", []string{"203.0.113.9", "198.51.100.1"}, "198.51.100.1"},
		{"with a port", "10.1.2.3:1", []string{"198.51.100.1:4711"}, "198.51.100.1"},
		{"IPv6 client", "[fd00::1]:1", []string{"[2001:db8:1:2::9]:443"}, "2001:db8:1:2::/64"},
		{"only proxies", "10.1.2.3:1", []string{"10.4.4.4"}, "10.4.4.4"},
		{"no header", "10.1.2.3:1", nil, "10.1.2.3"},
		{"garbage", "10.1.2.3:1", []string{"198.51.100.1, unknown"}, "10.1.2.3"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := s.clientAddr(r); got != tt.want {
			t.Errorf("%s: clientAddr = %q, want %q", tt.name, got, tt.want)
		}
	}
}
