package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// saIssuer is the test apiserver's service-account issuer, and so its API
// audience (kubetest sets no other).
const saIssuer = "https://kubernetes.default.svc.cluster.local"

// clientFrom returns an HTTP client whose connections come from loopback
// address ip (127.0.0.0/8 is all the machine's): a client address of its
// own, as another host's would be.
func clientFrom(ip string, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
}

// getFrom sends GET path naming namespace ns with token (each may be "")
// through hc, and returns the status, the Retry-After header and the body.
func getFrom(hc *http.Client, base, path, token, ns string) (int, string, string) {
	if ns != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "namespace=" + ns
	}
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// madeUpJWT is a token an attacker can make: a JWT of the apiserver's
// issuer and audience (both public) with a made-up signature, which only
// a review can refuse; sub makes it unique.
func madeUpJWT(sub string) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(map[string]string{"alg": "RS256", "kid": "made-up"}) + "." +
		enc(map[string]any{"iss": saIssuer, "aud": []string{saIssuer}, "sub": "system:serviceaccount:team-a:" + sub,
			"exp": time.Now().Add(time.Hour).Unix()}) + ".bWFkZS11cA"
}

// tokenFlood is conns connections sending GET path naming namespace ns
// with made-up tokens (every other one a madeUpJWT, the others opaque),
// each token once, as fast as registryd answers, until end.
type tokenFlood struct {
	stop            chan struct{}
	wg              sync.WaitGroup
	sent, throttled atomic.Int64
}

// startFlood starts a tokenFlood at registryd base; connection i comes
// from loopback address addr(i); seed keeps the tokens apart from other
// floods'.
func startFlood(base, path, ns string, conns int, addr func(int) string, seed string) *tokenFlood {
	f := &tokenFlood{stop: make(chan struct{})}
	for conn := range conns {
		hc := clientFrom(addr(conn), 10*time.Second)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-f.stop:
					return
				default:
				}
				tok := madeUpJWT(fmt.Sprintf("%s-%d-%d", seed, conn, i))
				if i%2 == 1 {
					tok = fmt.Sprintf("made-up-%s-%d-%d", seed, conn, i)
				}
				code, retry, _ := getFrom(hc, base, path, tok, ns)
				f.sent.Add(1)
				if code == http.StatusTooManyRequests && retry != "" {
					f.throttled.Add(1)
				}
			}
		}()
	}
	return f
}

// end stops the flood and waits for its connections.
func (f *tokenFlood) end() {
	close(f.stop)
	f.wg.Wait()
}

// unknownReviews is how many TokenReviews of tokens not authenticated
// lately r sent, by its metrics.
func (r *replica) unknownReviews() float64 {
	n := 0.0
	for _, result := range []string{"refused", "authenticated", "error"} {
		n += max(0, r.metric(`registryd_token_reviews_total{lane="unknown",result="`+result+`"}`))
	}
	return n
}

// TestTenantCannotStarve runs the attacks of a hostile tenant on the
// shared daemon and on the others' updates against the built registryd,
// under its template's rights, on the real apiserver:
//
//  1. a flood of made-up tokens from 64 connections gets 429s and causes
//     at most its address's rate of reviews, while a legitimate first
//     read from another address is answered, and a made-up token costs
//     the same reviews whether or not the namespace it names has
//     Registries;
//  2. team-b's signed push to its registry of one prefix does not swallow
//     team-a's, and team-b's secret does not sign a delivery for team-a's
//     repository;
//  3. a GitHub API that redirects to a host registryd may not reach gets
//     no request there, and nothing of that host reaches the status;
//  4. a failing registry is retried backing off from
//     --min-refresh-interval, not every 15 seconds;
//  5. anonymous clients holding every long-poll slot they may leave
//     dm-controller's token a slot;
//  6. behind a trusted proxy, a flood from one client leaves the proxy's
//     other clients' first reads alone, and anyone else's
//     X-Forwarded-For counts for nothing.
func TestTenantCannotStarve(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	tokB := tenantAdmin(t, env, c, teamB)
	tenantAdmin(t, env, c, teamA)
	applyTemplateRBAC(t, c, "dm-controller:v1.3", system, map[string]any{"server": "http://registryd", "defaultServiceAccount": "deployer"})
	controllerToken := accountToken(t, env, system, "dm-controller")

	files := map[string]string{"cm/v1.0.0/cm.jinja": "resources: []\n"}
	repoA, repoB := githubtest.NewRepoFS(t, mapFS(t, files)), githubtest.NewRepoFS(t, mapFS(t, files))
	ghA := githubtest.New(map[string]string{"acme/tpl": repoA, "acme/private": githubtest.NewRepoFS(t, mapFS(t, files))})
	defer ghA.Close()
	ghB := githubtest.New(map[string]string{"acme/tpl": repoB})
	defer ghB.Close()
	ghDead := githubtest.New(map[string]string{})
	defer ghDead.Close()
	evil := githubtest.New(map[string]string{})
	defer evil.Close()
	ghRedirect := githubtest.New(map[string]string{"acme/tpl": repoB})
	defer ghRedirect.Close()
	ghRedirect.SetFaults(githubtest.Faults{RedirectTo: evil.URL})

	r := startReplica(t, replicaArgs(t, registrydAccount(t, env.Kubeconfig, c, system), ghA.URL,
		"--allowed-github-api", ghA.URL, "--allowed-github-api", ghB.URL, "--allowed-github-api", ghDead.URL, "--allowed-github-api", ghRedirect.URL,
		"--min-refresh-interval", "1s", "--token-audience", saIssuer, "--token-review-rate", "2", "--trusted-proxy", "127.0.0.5")...)
	r.token = env.AdminToken // for /metrics

	secret := func(ns, value string) {
		must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, StringData: map[string]string{"secret": value}}))
		secretReader(t, c, ns, system, "hook")
	}
	secret(teamA, "team-a-hook")
	secret(teamB, "team-b-hook")
	registry := func(ns, name, repo, apiURL string, mod func(*v1alpha1.RegistrySpec)) *v1alpha1.Registry {
		reg := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: repo, Branch: "main", APIURL: apiURL}}}
		if mod != nil {
			mod(&reg.Spec)
		}
		must(t, c.Create(ctx, reg))
		return reg
	}
	hooked := func(s *v1alpha1.RegistrySpec) {
		s.WebhookSecretRef = &v1alpha1.SecretKeyReference{Name: "hook", Key: "secret"}
	}
	regA := registry(teamA, "tpl", "tpl", ghA.URL, hooked)
	regB := registry(teamB, "tpl", "tpl", ghB.URL, hooked)
	registry(teamA, "private", "private", ghA.URL, hooked)
	ready := func(reg *v1alpha1.Registry) *metav1.Condition {
		got := &v1alpha1.Registry{}
		if c.Get(ctx, client.ObjectKeyFromObject(reg), got) != nil {
			return nil
		}
		return apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	}
	for _, reg := range []*v1alpha1.Registry{regA, regB} {
		waitForf(t, 90*time.Second, func() string { return fmt.Sprintf("%s/%s Ready: %+v", reg.Namespace, reg.Name, ready(reg)) }, func() bool {
			cond := ready(reg)
			return cond != nil && cond.Status == metav1.ConditionTrue
		})
	}
	// The first reads of team-a's admin: each with a token never seen
	// (a TokenRequest each), from its own address.
	user := clientFrom("127.0.0.1", 30*time.Second)
	file := "/v1/file?ref=" + url.QueryEscape("github.com/acme/tpl/cm:v1") + "&path=cm.jinja"
	firstRead := func(t *testing.T) (int, time.Duration) {
		t.Helper()
		tok := accountToken(t, env, teamA, "admin")
		start := time.Now()
		code, _, body := getFrom(user, r.url, file, tok, teamA)
		if code != 200 {
			t.Logf("first read: %d %.200s", code, body)
		}
		return code, time.Since(start)
	}
	if code, _ := firstRead(t); code != 200 {
		t.Fatalf("team-a's admin cannot read its own file before any attack: %d", code)
	}

	t.Run("1 a flood of made-up tokens", func(t *testing.T) {
		reviews := r.unknownReviews
		before := reviews()
		start := time.Now()
		flood := startFlood(r.url, file, teamA, 64, func(int) string { return "127.0.0.66" }, "test")
		sent, throttled := &flood.sent, &flood.throttled
		// The flood is on: legitimate first reads from another address.
		waitFor(t, 30*time.Second, "the flood to be throttled", func() bool { return throttled.Load() > 100 })
		var worst time.Duration
		for range 3 {
			code, d := firstRead(t)
			if code != 200 {
				t.Errorf("a legitimate first read during the flood: %d", code)
			}
			worst = max(worst, d)
		}
		// dm-controller's reads too.
		if code, _, body := getFrom(user, r.url, "/v1/index/changes", controllerToken, ""); code != 200 || !strings.Contains(body, teamA+"/github.com/acme/tpl") {
			t.Errorf("dm-controller's changes during the flood: %d %.300s", code, body)
		}
		flood.end()
		elapsed := time.Since(start)
		caused := reviews() - before - 3 // the legitimate first reads' reviews
		t.Logf("flood: %d requests in %s, %d answered 429; %.0f reviews of unknown tokens; legitimate first reads took at most %s",
			sent.Load(), elapsed.Round(time.Millisecond), throttled.Load(), caused, worst.Round(time.Millisecond))
		if bound := 10 + 2*elapsed.Seconds() + 2; caused > bound {
			t.Errorf("the flood caused %.0f reviews in %s, want at most %.0f (a burst of 10 and 2 a second from its address)", caused, elapsed, bound)
		}

		// The same made-up token costs the same whatever the namespace
		// it names holds.
		for i, ns := range []string{teamA, "no-such-namespace"} {
			before := reviews()
			code, _, _ := getFrom(clientFrom(fmt.Sprintf("127.0.0.%d", 100+i), 10*time.Second), r.url, file, fmt.Sprintf("made-up-naming-%d", i), ns)
			if n := reviews() - before; n != 1 || code != 404 {
				t.Errorf("a made-up token naming %s: %d, %.0f reviews; want 404 after 1", ns, code, n)
			}
		}
		// Tokens refused without a review: of another issuer, another
		// audience, malformed.
		before = reviews()
		for _, tok := range []string{"eyJub3QiOiJqc29u.x.y", tokenOf(t, map[string]any{"iss": "https://evil.example.com", "aud": saIssuer}), tokenOf(t, map[string]any{"iss": saIssuer, "aud": "vault"})} {
			if code, _, _ := getFrom(clientFrom("127.0.0.102", 10*time.Second), r.url, file, tok, teamA); code != 404 {
				t.Errorf("a foreign or malformed JWT: %d, want 404", code)
			}
		}
		if n := reviews() - before; n != 0 {
			t.Errorf("foreign or malformed JWTs caused %.0f reviews, want none", n)
		}
	})

	t.Run("2 a push swallowed, a push forged", func(t *testing.T) {
		headA := githubtest.Commit(t, repoA, map[string]string{"cm/v1.0.1/cm.jinja": "resources: []\n"})
		headB := githubtest.Commit(t, repoB, map[string]string{"cm/v1.0.1/cm.jinja": "resources: [] # team-b\n"})
		// team-b's push, then team-a's within the window.
		if code, body := r.push(t, "team-b-hook", headB); code != 202 || !strings.Contains(body, "refresh scheduled") {
			t.Fatalf("team-b's push: %d %s", code, body)
		}
		if code, body := r.push(t, "team-a-hook", headA); code != 202 || !strings.Contains(body, "refresh scheduled") {
			t.Fatalf("team-a's push: %d %s", code, body)
		}
		for _, who := range []struct{ ns, token string }{{teamA, ""}, {teamB, tokB}} {
			tok := who.token
			if tok == "" {
				tok = accountToken(t, env, teamA, "admin")
			}
			waitForf(t, 30*time.Second, func() string { return who.ns + " to serve its pushed commit" }, func() bool {
				_, _, body := getFrom(user, r.url, "/v1/resolve?ref="+url.QueryEscape("github.com/acme/tpl/cm:v1.0"), tok, who.ns)
				var res api.Resolution
				return json.Unmarshal([]byte(body), &res) == nil && res.Resolved == "github.com/acme/tpl/cm:v1.0.1"
			})
		}
		// team-b's secret signs nothing for team-a's repository.
		body := []byte(`{"ref":"refs/heads/main","after":"` + headA + `","repository":{"full_name":"acme/private","default_branch":"main"}}`)
		req, _ := http.NewRequest("POST", r.url+"/v1/webhooks/github", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", hookSignature("team-b-hook", body))
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("team-b's secret on a delivery for team-a's repository: %d, want 401", resp.StatusCode)
		}
	})

	t.Run("3 a redirect to a host registryd may not reach", func(t *testing.T) {
		evil.ResetCounts()
		reg := registry(teamB, "redirected", "tpl", ghRedirect.URL, func(s *v1alpha1.RegistrySpec) { s.Prefix = "github.com/acme/redirected" })
		var cond *metav1.Condition
		waitForf(t, 60*time.Second, func() string { return fmt.Sprintf("the redirected registry to fail: %+v", cond) }, func() bool {
			cond = ready(reg)
			return cond != nil && cond.Reason == "IndexFailed"
		})
		if !strings.Contains(cond.Message, "not followed") {
			t.Errorf("the status does not say the redirect was not followed: %s", cond.Message)
		}
		evilURL, _ := url.Parse(evil.URL)
		if strings.Contains(cond.Message, evilURL.Host) || strings.Contains(cond.Message, "404") {
			t.Errorf("the status names the host redirected to, or its answer: %s", cond.Message)
		}
		if n := evil.Requests(); n != 0 {
			t.Errorf("%d requests reached the host redirected to", n)
		}
	})

	t.Run("4 a failing registry backs off", func(t *testing.T) {
		ghDead.ResetCounts()
		reg := registry(teamB, "dead", "gone", ghDead.URL, func(s *v1alpha1.RegistrySpec) {
			s.Prefix = "github.com/acme/dead"
			s.RefreshInterval = &metav1.Duration{Duration: time.Hour}
		})
		waitForf(t, 60*time.Second, func() string { return "the dead registry to fail" }, func() bool {
			cond := ready(reg)
			return cond != nil && cond.Reason == "IndexFailed"
		})
		time.Sleep(12 * time.Second)
		// --min-refresh-interval 1s: tries at 0, 1, 3, 7 and 15 seconds
		// (each ±10%), where a fixed 15 s retry tried once and a fixed 1 s
		// twelve times. Bounds, not a timing: a loaded machine only
		// delays the retries.
		if n := ghDead.RequestsTo("commit"); n < 2 || n > 5 {
			t.Errorf("a failing registry asked %d times in about 12 seconds, want 2 to 5 (backing off from 1s)", n)
		}
	})

	t.Run("5 long-poll slots", func(t *testing.T) {
		_, _, body := getFrom(user, r.url, "/v1/index/changes", "", "")
		var st api.IndexChanges
		must(t, json.Unmarshal([]byte(body), &st))
		poll := "/v1/index/changes?wait=60&since=" + st.Token
		pctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait() // after cancel: deferred calls run last first
		defer cancel()
		// hold keeps n long polls from ip waiting, sending another when
		// one is turned away (while others' are still arriving); early
		// counts the ones answered 200, which none may be before its wait
		// ends: the anonymous view does not change.
		var early atomic.Int64
		hold := func(ip string, n int) {
			hc := clientFrom(ip, 0)
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for pctx.Err() == nil {
						req, _ := http.NewRequestWithContext(pctx, http.MethodGet, r.url+poll, nil)
						resp, err := hc.Do(req)
						if err != nil {
							continue
						}
						if resp.StatusCode == 200 {
							early.Add(1)
						}
						resp.Body.Close()
						time.Sleep(100 * time.Millisecond)
					}
				}()
			}
		}
		// One address holds its 8; a 9th is refused at once.
		hold("127.0.0.2", 8)
		time.Sleep(time.Second)
		if code, retry, body := getFrom(clientFrom("127.0.0.2", 10*time.Second), r.url, poll, "", ""); code != 503 || retry == "" || !strings.Contains(body, "this client address") {
			t.Errorf("a 9th long poll from one address: %d (Retry-After %q) %.200s, want 503", code, retry, body)
		}
		// Anonymous clients of many addresses take their whole share.
		for i := range (256 - 64 - 8) / 8 {
			hold(fmt.Sprintf("127.0.1.%d", i+1), 8)
		}
		var code int
		waitForf(t, 30*time.Second, func() string {
			return fmt.Sprintf("the anonymous share to be full (last answer %d %.200s)", code, body)
		}, func() bool {
			// A short wait: while the share is not full, this one takes a
			// slot for a second only.
			code, _, body = getFrom(clientFrom("127.0.2.1", 10*time.Second), r.url, "/v1/index/changes?wait=1&since="+st.Token, "", "")
			return code == 503 && strings.Contains(body, "kept for authenticated callers")
		})
		// dm-controller still waits (and answers when its wait ends).
		code, _, body = getFrom(user, r.url, "/v1/index/changes?wait=1&since="+st.Token, controllerToken, "")
		if code != 200 {
			t.Errorf("dm-controller's long poll with every anonymous slot taken: %d %.200s", code, body)
		}
		if n := early.Load(); n != 0 {
			t.Errorf("%d held long polls answered before their wait ended", n)
		}
	})

	t.Run("6 behind a trusted proxy", func(t *testing.T) {
		proxy := clientFrom("127.0.0.5", 10*time.Second)
		codes := map[int]int{}
		for i := range 30 {
			codes[getVia(proxy, r.url, file, fmt.Sprintf("made-up-proxied-%d", i), teamA, "198.51.100.66")]++
		}
		if codes[http.StatusTooManyRequests] == 0 {
			t.Errorf("30 made-up tokens from one client behind the proxy: %v, want 429s past the client's burst", codes)
		}
		if code := getVia(proxy, r.url, file, accountToken(t, env, teamA, "admin"), teamA, "198.51.100.7"); code != 200 {
			t.Errorf("another client's first read through the same proxy: %d, want 200", code)
		}
		// X-Forwarded-For from a client that is not a trusted proxy names
		// nobody: its bucket is its own address's, whatever it writes.
		direct := clientFrom("127.0.0.9", 10*time.Second)
		codes = map[int]int{}
		for i := range 30 {
			codes[getVia(direct, r.url, file, fmt.Sprintf("made-up-forged-%d", i), teamA, fmt.Sprintf("203.0.113.%d", i))]++
		}
		if codes[http.StatusTooManyRequests] == 0 {
			t.Errorf("30 made-up tokens, each with another forged X-Forwarded-For: %v, want 429s past the address's burst", codes)
		}
	})
}

// getVia is getFrom with an X-Forwarded-For header.
func getVia(hc *http.Client, base, path, token, ns, forwarded string) int {
	req, _ := http.NewRequest(http.MethodGet, base+path+"&namespace="+ns, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Forwarded-For", forwarded)
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// tokenOf is a JWT of claims with a made-up signature.
func tokenOf(t testing.TB, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	must(t, err)
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256"}`)) + "." + base64.RawURLEncoding.EncodeToString(b) + ".c2ln"
}
