package githubtest

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func blobSHA(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func newServer(t *testing.T) (*Server, string) {
	t.Helper()
	dir := NewRepoFS(t, fstest.MapFS{
		"README.md":           {Data: []byte("hello\n")},
		"redis/v1/redis.py":   {Data: []byte("def generate(ctx): pass\n")},
		"redis/v1/.hidden":    {Data: []byte("x")},
		"web/v1.0.0/web.yaml": {Data: []byte("kind: Template\n")},
	})
	s := New(map[string]string{"acme/reg": dir})
	t.Cleanup(s.Close)
	return s, dir
}

func TestServer(t *testing.T) {
	s, dir := newServer(t)
	head := Head(t, dir)

	resp, body := get(t, s.URL+"repos/acme/reg", nil)
	var repo struct {
		DefaultBranch string `json:"default_branch"`
		FullName      string `json:"full_name"`
	}
	if err := json.Unmarshal(body, &repo); err != nil || repo.DefaultBranch != "main" || repo.FullName != "acme/reg" {
		t.Fatalf("repo: %d %s (%v)", resp.StatusCode, body, err)
	}
	if resp.Header.Get("X-RateLimit-Limit") != "5000" || resp.Header.Get("X-RateLimit-Remaining") == "" || resp.Header.Get("X-RateLimit-Reset") == "" {
		t.Errorf("rate-limit headers missing: %v", resp.Header)
	}

	// The SHA form, its ETag and the 304.
	for _, ref := range []string{"main", "HEAD", head} {
		resp, body = get(t, s.URL+"repos/acme/reg/commits/"+ref, map[string]string{"Accept": "application/vnd.github.v3.sha"})
		if resp.StatusCode != 200 || string(body) != head || resp.Header.Get("ETag") != `"`+head+`"` {
			t.Fatalf("commit %s: %d %q etag %q", ref, resp.StatusCode, body, resp.Header.Get("ETag"))
		}
	}
	before := resp.Header.Get("X-RateLimit-Remaining")
	resp, body = get(t, s.URL+"repos/acme/reg/commits/main", map[string]string{
		"Accept": "application/vnd.github.v3.sha", "If-None-Match": `"` + head + `"`})
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("conditional commit: %d %q", resp.StatusCode, body)
	}
	if got := resp.Header.Get("X-RateLimit-Remaining"); got != before {
		t.Errorf("304 used the rate limit: remaining %s, was %s", got, before)
	}

	// The JSON form names the tree.
	_, body = get(t, s.URL+"repos/acme/reg/commits/main", nil)
	var commit struct {
		SHA    string `json:"sha"`
		Commit struct {
			Tree struct {
				SHA string `json:"sha"`
			} `json:"tree"`
		} `json:"commit"`
	}
	if err := json.Unmarshal(body, &commit); err != nil || commit.SHA != head || len(commit.Commit.Tree.SHA) != 40 {
		t.Fatalf("commit JSON: %s (%v)", body, err)
	}

	// Recursive listing of the commit, by commit SHA and by tree SHA.
	type listing struct {
		SHA  string `json:"sha"`
		Tree []struct {
			Path, Type, SHA, Mode string
			Size                  *int64
		} `json:"tree"`
		Truncated bool `json:"truncated"`
	}
	var byCommit, byTree listing
	_, body = get(t, s.URL+"repos/acme/reg/git/trees/"+head+"?recursive=1", nil)
	json.Unmarshal(body, &byCommit)
	_, body = get(t, s.URL+"repos/acme/reg/git/trees/"+commit.Commit.Tree.SHA+"?recursive=1", nil)
	json.Unmarshal(body, &byTree)
	if byCommit.SHA != commit.Commit.Tree.SHA || len(byCommit.Tree) != len(byTree.Tree) {
		t.Fatalf("tree by commit %+v, by tree %+v", byCommit, byTree)
	}
	blobs := map[string]string{}
	for _, e := range byCommit.Tree {
		if e.Type == "blob" {
			if e.Size == nil {
				t.Errorf("%s: no size", e.Path)
			}
			blobs[e.Path] = e.SHA
		}
	}
	if len(blobs) != 4 || len(byCommit.Tree) != 4+4 { // redis, redis/v1, web, web/v1.0.0
		t.Fatalf("recursive listing: %+v", byCommit.Tree)
	}

	// Non-recursive and truncated listings.
	var top listing
	_, body = get(t, s.URL+"repos/acme/reg/git/trees/main", nil)
	json.Unmarshal(body, &top)
	if len(top.Tree) != 3 || top.Truncated {
		t.Errorf("top-level listing: %+v", top)
	}
	s.SetFaults(Faults{TruncateTrees: true})
	var cut listing
	_, body = get(t, s.URL+"repos/acme/reg/git/trees/main?recursive=1", nil)
	json.Unmarshal(body, &cut)
	if !cut.Truncated || len(cut.Tree) >= len(byCommit.Tree) {
		t.Errorf("truncated listing: %+v", cut)
	}
	s.SetFaults(Faults{})

	// Blobs, JSON and raw.
	sha := blobs["README.md"]
	if sha != blobSHA([]byte("hello\n")) {
		t.Fatalf("README.md sha %s", sha)
	}
	_, body = get(t, s.URL+"repos/acme/reg/git/blobs/"+sha, nil)
	var blob struct {
		Content, Encoding string
		Size              int
	}
	json.Unmarshal(body, &blob)
	content, err := base64.StdEncoding.DecodeString(blob.Content)
	if err != nil || string(content) != "hello\n" || blob.Encoding != "base64" || blob.Size != 6 {
		t.Fatalf("blob JSON: %s (%v)", body, err)
	}
	_, body = get(t, s.URL+"repos/acme/reg/git/blobs/"+sha, map[string]string{"Accept": "application/vnd.github.raw"})
	if string(body) != "hello\n" {
		t.Fatalf("raw blob: %q", body)
	}

	// Unknown things.
	for _, path := range []string{
		"repos/acme/nope", "repos/acme/reg/commits/nope", "repos/acme/reg/commits/--output=x",
		"repos/acme/reg/git/blobs/" + strings.Repeat("0", 40), "repos/acme/reg/git/blobs/" + commit.Commit.Tree.SHA,
		"repos/acme/reg/git/trees/" + strings.Repeat("0", 40), "users/x",
	} {
		resp, body = get(t, s.URL+path, nil)
		if resp.StatusCode != 404 || !strings.Contains(string(body), `"Not Found"`) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}

	if s.RequestsTo("commit") != 7 || s.RequestsTo("tree") != 5 || s.RequestsTo("blob") != 4 || s.RequestsTo("repo") != 2 {
		t.Errorf("counts: commit %d tree %d blob %d repo %d", s.RequestsTo("commit"), s.RequestsTo("tree"), s.RequestsTo("blob"), s.RequestsTo("repo"))
	}
	if s.Responses(http.StatusNotModified) != 1 {
		t.Errorf("304s: %d", s.Responses(http.StatusNotModified))
	}
	s.ResetCounts()
	if s.Requests() != 0 {
		t.Errorf("after ResetCounts: %d", s.Requests())
	}
}

func TestServerCommit(t *testing.T) {
	s, dir := newServer(t)
	old := Head(t, dir)
	sha := Commit(t, dir, map[string]string{"README.md": "", "new/v1/new.py": "x = 1\n"})
	if sha == old {
		t.Fatal("Commit made no new commit")
	}
	_, body := get(t, s.URL+"repos/acme/reg/commits/HEAD", map[string]string{"Accept": "application/vnd.github.v3.sha"})
	if string(body) != sha {
		t.Fatalf("HEAD = %s, want %s", body, sha)
	}
	_, body = get(t, s.URL+"repos/acme/reg/git/trees/HEAD?recursive=1", nil)
	if strings.Contains(string(body), "README.md") || !strings.Contains(string(body), "new/v1/new.py") {
		t.Fatalf("listing after commit: %s", body)
	}
}

func TestServerFaults(t *testing.T) {
	s, _ := newServer(t)
	url := s.URL + "repos/acme/reg"
	tests := []struct {
		name   string
		faults Faults
		status int
		header map[string]string
	}{
		{"5xx", Faults{Status5xx: 1}, 502, nil},
		{"rate limit", Faults{RateLimited: 1, RateLimitReset: 30 * time.Second}, 403, map[string]string{"X-RateLimit-Remaining": "0"}},
		{"secondary", Faults{Abuse: 1, RetryAfter: 7 * time.Second}, 403, map[string]string{"Retry-After": "7"}},
		{"429", Faults{TooMany: 1, RetryAfter: 3 * time.Second}, 429, map[string]string{"Retry-After": "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.SetFaults(tt.faults)
			resp, body := get(t, url, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			for k, v := range tt.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if resp, _ := get(t, url, nil); resp.StatusCode != 200 {
				t.Errorf("fault outlived its count: %d", resp.StatusCode)
			}
		})
	}

	t.Run("latency", func(t *testing.T) {
		s.SetFaults(Faults{Latency: time.Minute})
		defer s.SetFaults(Faults{})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		start := time.Now()
		if _, err := http.DefaultClient.Do(req); err == nil {
			t.Fatal("no timeout")
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("latency ignored cancellation")
		}
	})

	t.Run("token", func(t *testing.T) {
		s.RequireToken("sekrit")
		defer s.RequireToken("")
		for _, tc := range []struct {
			auth   string
			status int
		}{{"", 401}, {"Bearer wrong", 401}, {"Bearer sekrit", 200}, {"token sekrit", 200}} {
			resp, _ := get(t, url, map[string]string{"Authorization": tc.auth})
			if resp.StatusCode != tc.status {
				t.Errorf("Authorization %q: %d, want %d", tc.auth, resp.StatusCode, tc.status)
			}
		}
	})
}
