package fetch_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dmhq/dm/internal/fetch"
)

// TestTokenStaysWithTheAPIHost: the GitHub API host gets the token; a
// host it redirects to (another listener, named differently) gets no
// request at all, whatever the redirect status (TestGitHubRedirects: a
// redirect out of the API's origin is not followed), so certainly not the
// token.
func TestTokenStaysWithTheAPIHost(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // host -> Authorization headers
	record := func(who string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen[who] = append(seen[who], r.Header.Get("Authorization"))
	}
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("foreign", r)
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer foreign.Close()
	// The same server under another host name: localhost instead of
	// 127.0.0.1, so the client sees a cross-host redirect.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(foreign.URL, "http://"))
	elsewhere := "http://localhost:" + port
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			record("api", r)
			http.Redirect(w, r, elsewhere+r.URL.Path, code)
		}))
		g, err := fetch.NewGitHub(fetch.GitHubOptions{Owner: "acme", Repo: "templates", BaseURL: api.URL, Token: secretToken})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Tree(t.Context(), nil); err == nil {
			t.Errorf("%d: listing through a redirect to nowhere succeeded", code)
		}
		api.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen["api"]) == 0 || len(seen["foreign"]) != 0 {
		t.Fatalf("requests: %v, want some to the API host and none elsewhere", seen)
	}
	for _, h := range seen["api"] {
		if h != "Bearer "+secretToken {
			t.Errorf("the API host got Authorization %q, want the token", h)
		}
	}
	for _, h := range seen["foreign"] {
		if h != "" {
			t.Errorf("the foreign host got Authorization %q, want none", h)
		}
	}
}
