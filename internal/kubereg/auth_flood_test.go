package kubereg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/server"
)

// floodApiserver is an HTTP server answering TokenReviews and
// SubjectAccessReviews as an apiserver that knows only tokens beginning
// "user-" (user alice, allowed everything): it records the requests, and
// holds the reviews of tokens beginning "slow-" until release is closed.
// (client-go's fake clientset runs one reactor at a time: it cannot show
// reviews in flight together.)
type floodApiserver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	reviewed []string // tokens
	requests []string // method and path
	inSlow   atomic.Int64
	release  chan struct{}
}

func newFloodApiserver(t *testing.T) *floodApiserver {
	f := &floodApiserver{release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			f.mu.Lock()
			f.reviewed = append(f.reviewed, tr.Spec.Token)
			f.mu.Unlock()
			if strings.HasPrefix(tr.Spec.Token, "slow-") {
				f.inSlow.Add(1)
				<-f.release
			}
			if strings.HasPrefix(tr.Spec.Token, "fail-") {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`, 500)
				return
			}
			if strings.HasPrefix(tr.Spec.Token, "user-") {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
			}
			tr.Kind, tr.APIVersion = "TokenReview", "authentication.k8s.io/v1"
			_ = json.NewEncoder(w).Encode(tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			sar.Status.Allowed = sar.Spec.User == "alice"
			sar.Kind, sar.APIVersion = "SubjectAccessReview", "authorization.k8s.io/v1"
			_ = json.NewEncoder(w).Encode(sar)
		case "/.well-known/openid-configuration":
			fmt.Fprintf(w, `{"issuer":%q}`, testIssuer)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		f.srv.Close()
	})
	return f
}

// authorizer returns an Authorizer asking f, as NewAuthorizer makes them.
func (f *floodApiserver) authorizer(t *testing.T, opts AuthorizerOptions) *Authorizer {
	t.Helper()
	a, err := NewAuthorizer(&rest.Config{Host: f.srv.URL}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// took returns the requests since the last took.
func (f *floodApiserver) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

// reviews returns how many reviewed tokens match.
func (f *floodApiserver) reviews(match func(string) bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, tok := range f.reviewed {
		if match(tok) {
			n++
		}
	}
	return n
}

func caller(token, addr string) server.Caller {
	c := server.NewCaller(token)
	c.Addr = addr
	return c
}

// TestAuthorizerFlood: 64 connections of one address flooding made-up
// tokens (malformed JWTs, JWTs of another issuer or audience, well-formed
// ones, opaque ones) cause at most the address's burst and rate of
// reviews: the malformed and foreign ones none at all, the rest are
// throttled (429) before any queue. A new token from another address is
// reviewed meanwhile, at once.
func TestAuthorizerFlood(t *testing.T) {
	f := newFloodApiserver(t)
	close(f.release)
	var mu sync.Mutex
	refusals := map[string]int{}
	a := f.authorizer(t, AuthorizerOptions{Issuers: []string{testIssuer}, Audiences: []string{testAudience},
		ClientRate: 1, ClientBurst: 3,
		OnRefuse: func(reason string) { mu.Lock(); refusals[reason]++; mu.Unlock() }})
	ctx := context.Background()
	start := time.Now()
	var throttled, refused, other atomic.Int64
	var wg sync.WaitGroup
	for conn := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				var tok string
				switch i % 4 {
				case 0:
					tok = fmt.Sprintf("eyJmade-up-%d-%d.x.y", conn, i)
				case 1:
					tok = saToken("https://attacker.example.com", []string{testAudience})
				case 2:
					tok = makeJWT(map[string]string{"alg": "RS256"}, map[string]any{"iss": testIssuer, "aud": testAudience, "jti": fmt.Sprint(conn, "-", i)})
				case 3:
					tok = fmt.Sprintf("opaque-%d-%d", conn, i)
				}
				err := a.Authenticate(ctx, caller(tok, "192.0.2.66"))
				var te *server.ThrottledError
				switch {
				case errors.As(err, &te):
					throttled.Add(1)
				case errors.Is(err, server.ErrUnauthenticated):
					refused.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	// The legitimate user's first request, in the middle of the flood.
	t0 := time.Now()
	if err := a.Authenticate(ctx, caller("user-new", "192.0.2.10")); err != nil {
		t.Errorf("a new token from another address during the flood: %v", err)
	}
	t.Logf("the legitimate first request took %s", time.Since(t0))
	wg.Wait()
	t.Logf("the flood took %s", time.Since(start))
	elapsed := time.Since(start)
	flood := f.reviews(func(tok string) bool { return tok != "user-new" })
	if bound := 3 + int(elapsed.Seconds()+1); flood > bound {
		t.Errorf("the flood caused %d reviews in %s, want at most %d (the address's burst of 3 and rate of 1 a second)", flood, elapsed, bound)
	}
	if n := f.reviews(func(tok string) bool {
		return strings.HasPrefix(tok, "eyJmade") || strings.Contains(tok, ".") && parseClaimsIssuer(tok) == "https://attacker.example.com"
	}); n != 0 {
		t.Errorf("%d malformed or foreign tokens were sent for review", n)
	}
	if other.Load() != 0 || throttled.Load() == 0 || refused.Load() == 0 {
		t.Errorf("flood answers: %d throttled, %d refused, %d other", throttled.Load(), refused.Load(), other.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if refusals["malformed"] != 64*10 || refusals["issuer"] != 64*10 || refusals["client_rate"] == 0 {
		t.Errorf("refusals without a review: %v", refusals)
	}
}

func parseClaimsIssuer(tok string) string {
	c, _ := parseJWT(tok)
	return c.Issuer
}

// TestAuthorizerLanes: with every slot of the unknown tokens' lane held by
// reviews the apiserver is slow to answer, another unknown token is
// throttled after a bounded wait, while a token authenticated lately,
// whose cached answer expired, is reviewed at once in its own lane: never
// queued behind the unknown ones.
func TestAuthorizerLanes(t *testing.T) {
	f := newFloodApiserver(t)
	a := f.authorizer(t, AuthorizerOptions{TTL: 20 * time.Millisecond, UnknownConcurrent: 2, UnknownWait: 50 * time.Millisecond, Entries: 8, ClientRate: 1e6, ClientBurst: 1e6})
	ctx := context.Background()
	if err := a.Authenticate(ctx, caller("user-known", "192.0.2.10")); err != nil {
		t.Fatal(err)
	}
	// Many more made-up tokens than the caches hold, reviewed and
	// refused, do not push it out of the tokens authenticated lately.
	for i := range 50 {
		if err := a.Authenticate(ctx, caller(fmt.Sprint("stranger-", i), "198.51.100.99")); err != server.ErrUnauthenticated {
			t.Fatalf("stranger %d: %v", i, err)
		}
	}
	time.Sleep(40 * time.Millisecond) // its cached answer expires
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = a.Authenticate(ctx, caller(fmt.Sprint("slow-", i), fmt.Sprint("198.51.100.", i)))
		}()
	}
	for f.inSlow.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	var te *server.ThrottledError
	if err := a.Authenticate(ctx, caller("another-unknown", "203.0.113.1")); !errors.As(err, &te) || !strings.Contains(te.Reason, "in flight") {
		t.Errorf("an unknown token with its lane full: %v, want throttled", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Authenticate(ctx, caller("user-known", "192.0.2.10")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the known token: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the known token's review waited behind the unknown ones")
	}
	if n := f.reviews(func(tok string) bool { return tok == "user-known" }); n != 2 {
		t.Errorf("the known token was reviewed %d times, want 2 (its answer expired)", n)
	}
	close(f.release)
	wg.Wait()
}

// TestAuthorizerUnknownFailures: a made-up token whose review fails does
// not make registryd leave the apiserver alone: the next known token's
// review is sent (a known token's failure does).
func TestAuthorizerUnknownFailures(t *testing.T) {
	f := newFloodApiserver(t)
	close(f.release)
	a := f.authorizer(t, AuthorizerOptions{TTL: 10 * time.Millisecond})
	ctx := context.Background()
	if err := a.Authenticate(ctx, caller("user-1", "192.0.2.10")); err != nil {
		t.Fatal(err)
	}
	if err := a.Authenticate(ctx, caller("fail-1", "198.51.100.1")); err != server.ErrUnauthenticated {
		t.Fatalf("a failing review of an unknown token: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	before := f.reviews(func(tok string) bool { return tok == "user-1" })
	if err := a.Authenticate(ctx, caller("user-1", "192.0.2.10")); err != nil {
		t.Fatal(err)
	}
	if f.reviews(func(tok string) bool { return tok == "user-1" }) != before+1 {
		t.Error("after an unknown token's failed review, a known token's review was not sent")
	}
}

// TestAuthorizerOneReviewPerToken: concurrent requests with one new token
// make one review, and take one token of their address's bucket.
func TestAuthorizerOneReviewPerToken(t *testing.T) {
	f := newFloodApiserver(t)
	a := f.authorizer(t, AuthorizerOptions{ClientRate: 0.001, ClientBurst: 1})
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a.Authenticate(ctx, caller("slow-user-1", "192.0.2.10")) != server.ErrUnauthenticated {
				failed.Add(1)
			}
		}()
	}
	for f.inSlow.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the others reach the flight
	close(f.release)
	wg.Wait()
	if n := f.reviews(func(string) bool { return true }); n != 1 || failed.Load() != 0 {
		t.Errorf("32 concurrent requests with one token: %d reviews, %d answers other than unauthenticated; want 1 and 0", n, failed.Load())
	}
}

// TestUnknownTokenSameWork: a made-up token naming a namespace that has a
// Registry costs the apiserver the same calls as one naming a namespace
// that has none, on every route: one TokenReview (or none for a token
// refused without one), never a SubjectAccessReview; the answers are the
// same.
func TestUnknownTokenSameWork(t *testing.T) {
	ctx := context.Background()
	private := &index.Registry{Name: "github.com/acme/private", Namespace: "team-a", Object: "private",
		Source: fetch.NewLocal(fstest.MapFS{"cm/v1.0.0/cm.jinja": {Data: []byte("resources: []\n")}})}
	if err := private.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	f := newFloodApiserver(t)
	close(f.release)
	// Every request comes from httptest's one address: no client bound.
	a := f.authorizer(t, AuthorizerOptions{ClientRate: 1e6, ClientBurst: 1e6})
	if err := a.Learn(ctx); err != nil {
		t.Fatal(err)
	}
	s := server.New(server.Options{Resolver: resolve.New(resolve.Registry{}, private), Authorizer: a})
	ref := url.QueryEscape("github.com/acme/private/cm:v1")
	n := 0
	calls := func(path, ns, token string) (int, []string) {
		f.took()
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		req := httptest.NewRequest(http.MethodGet, path+sep+"namespace="+ns, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w.Code, f.took()
	}
	for _, p := range []string{"/v1/resolve?ref=" + ref, "/v1/file?ref=" + ref + "&path=cm.jinja", "/v1/registries", "/v1/templates",
		"/v1/search?q=cm", "/v1/index/changes", "/r/github.com/acme/private", "/t/github.com/acme/private/cm:v1"} {
		for _, kind := range []struct {
			name  string
			token func() string
			want  []string
		}{
			{"opaque", func() string { n++; return fmt.Sprint("made-up-", n) }, []string{"POST /apis/authentication.k8s.io/v1/tokenreviews"}},
			{"well-formed JWT", func() string { n++; return saToken(testIssuer, []string{fmt.Sprint(n)}) }, []string{"POST /apis/authentication.k8s.io/v1/tokenreviews"}},
			{"malformed JWT", func() string { n++; return fmt.Sprintf("eyJ%d.x.y", n) }, nil},
		} {
			codeA, withRegistry := calls(p, "team-a", kind.token())
			codeZ, without := calls(p, "team-z", kind.token())
			if !slices.Equal(withRegistry, without) || !slices.Equal(withRegistry, kind.want) || codeA != codeZ {
				t.Errorf("GET %s with a made-up %s token: naming team-a %d %q, team-z %d %q; want %q for both",
					p, kind.name, codeA, withRegistry, codeZ, without, kind.want)
			}
		}
	}
}
