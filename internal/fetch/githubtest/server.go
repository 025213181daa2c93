package githubtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit is the request budget the server advertises per hour, like
// GitHub's for an authenticated user.
const RateLimit = 5000

// Faults are failures the server injects. Counted faults apply to the next N
// requests that pass authentication, in the order RateLimited, Abuse,
// TooMany, Status5xx; each answered request uses up one.
type Faults struct {
	// Status5xx answers the next N requests with 502 Bad Gateway.
	Status5xx int
	// RateLimited answers the next N requests with 403,
	// X-RateLimit-Remaining: 0 and X-RateLimit-Reset RateLimitReset from
	// now (default one minute), as GitHub does when the budget is spent.
	RateLimited    int
	RateLimitReset time.Duration
	// Abuse answers the next N requests with a 403 secondary rate limit
	// (documentation_url ending in "secondary-rate-limits") and Retry-After.
	Abuse int
	// TooMany answers the next N requests with 429 and Retry-After.
	TooMany int
	// RetryAfter is the Retry-After of Abuse and TooMany answers, rounded up
	// to seconds (default one minute).
	RetryAfter time.Duration
	// Latency delays every answer, unless the request is cancelled first.
	Latency time.Duration
	// TruncateTrees makes recursive tree listings answer truncated:true with
	// only the first half of their entries.
	TruncateTrees bool
	// HideBlobs answers every blob request 404: a server that lists blobs
	// it does not hold, such as a tenant's that names the blob SHAs of
	// another tenant's repository to have registryd serve them from its
	// cache.
	HideBlobs bool
	// RedirectTo, if set, answers every request 307 to RedirectTo (a base
	// URL) followed by the request's path and query, as a server would
	// that sent registryd elsewhere.
	RedirectTo string
}

// Server is a GitHub REST API over git repositories on disk. It is safe for
// concurrent use.
type Server struct {
	// URL is the API base URL, ending in "/", for go-github's BaseURL.
	URL string

	srv   *httptest.Server
	repos map[string]string // "owner/repo" -> git directory
	done  chan struct{}     // closed by Close to cut latency short
	once  sync.Once

	mu        sync.Mutex
	token     string
	faults    Faults
	total     int
	byKind    map[string]int
	byStatus  map[int]int
	inFlight  map[string]int // requests of a kind being answered now
	maxFlight map[string]int // the most of a kind answered at once
	remaining int
	reset     time.Time

	objMu sync.Mutex
	trees map[string][]treeEntry // repo + tree SHA + recursive -> listing; immutable
}

// New starts a server on 127.0.0.1 that serves repos ("owner/repo" -> git
// repository directory, such as NewRepo returns). Close it when done.
func New(repos map[string]string) *Server {
	s := &Server{
		repos:     make(map[string]string, len(repos)),
		done:      make(chan struct{}),
		byKind:    map[string]int{},
		byStatus:  map[int]int{},
		inFlight:  map[string]int{},
		maxFlight: map[string]int{},
		remaining: RateLimit,
		reset:     time.Now().Add(time.Hour),
		trees:     map[string][]treeEntry{},
	}
	for k, v := range repos {
		s.repos[k] = v
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}", s.handleRepo)
	mux.HandleFunc("GET /repos/{owner}/{repo}/commits", s.handleCommits)
	mux.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref...}", s.handleCommit)
	mux.HandleFunc("GET /repos/{owner}/{repo}/git/trees/{sha...}", s.handleTree)
	mux.HandleFunc("GET /repos/{owner}/{repo}/git/blobs/{sha}", s.handleBlob)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { notFound(w) })

	// httptest.NewServer listens on 127.0.0.1 (or [::1]) only.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("githubtest: listening on 127.0.0.1: %v", err))
	}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: s.wrap(mux)}}
	s.srv.Start()
	s.URL = s.srv.URL + "/"
	return s
}

// Close stops the server, cutting injected latency short. Calling it again
// does nothing.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// RequireToken makes the server answer 401 to requests that do not carry
// "Authorization: Bearer tok" (or "token tok"); "" turns the check off.
func (s *Server) RequireToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = tok
}

// SetFaults replaces the faults to inject.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// Requests returns the number of requests received since the start or the
// last ResetCounts.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// RequestsTo returns the number of requests of one kind received: "repo",
// "commit", "tree", "blob" or "other".
func (s *Server) RequestsTo(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKind[kind]
}

// MaxInFlight returns the most requests of one kind (as RequestsTo)
// answered at once since the start or the last ResetCounts: how many
// listings a client ran concurrently.
func (s *Server) MaxInFlight(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxFlight[kind]
}

// Responses returns the number of answers with the given status code, such
// as http.StatusNotModified.
func (s *Server) Responses(status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byStatus[status]
}

// ResetCounts sets the request and response counters to zero. It does not
// restore the rate-limit budget.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total = 0
	s.byKind = map[string]int{}
	s.byStatus = map[int]int{}
	s.maxFlight = map[string]int{}
	for k, n := range s.inFlight {
		s.maxFlight[k] = n
	}
}

// kindOf classifies a request path for the counters.
func kindOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "repos":
		return "repo"
	case len(parts) >= 5 && parts[0] == "repos" && parts[3] == "commits":
		return "commit"
	case len(parts) >= 6 && parts[0] == "repos" && parts[3] == "git" && parts[4] == "trees":
		return "tree"
	case len(parts) >= 6 && parts[0] == "repos" && parts[3] == "git" && parts[4] == "blobs":
		return "blob"
	}
	return "other"
}

// statusWriter records the status for the counters and adds the rate-limit
// headers, which depend on the status, just before the header is written.
type statusWriter struct {
	http.ResponseWriter
	s      *Server
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	w.s.rateHeaders(w.Header(), code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// rateHeaders sets GitHub's rate-limit headers. Like GitHub, a 304 does not
// count against the budget; an injected rate-limit answer reports it spent.
func (s *Server) rateHeaders(h http.Header, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.After(s.reset) {
		s.remaining, s.reset = RateLimit, now.Add(time.Hour)
	}
	remaining, reset := s.remaining, s.reset
	if h.Get("X-RateLimit-Remaining") == "0" { // set by an injected rate limit
		remaining, reset = 0, parseUnix(h.Get("X-RateLimit-Reset"))
	} else if code != http.StatusNotModified && s.remaining > 0 {
		s.remaining--
		remaining = s.remaining
	}
	h.Set("X-RateLimit-Limit", strconv.Itoa(RateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(RateLimit-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	s.byStatus[code]++
}

func parseUnix(s string) time.Time {
	v, _ := strconv.ParseInt(s, 10, 64)
	return time.Unix(v, 0)
}

// wrap counts requests, then applies latency, authentication and faults
// before the API handlers.
func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, s: s}
		s.mu.Lock()
		kind := kindOf(r.URL.Path)
		s.total++
		s.byKind[kind]++
		s.inFlight[kind]++
		s.maxFlight[kind] = max(s.maxFlight[kind], s.inFlight[kind])
		f := s.faults
		token := s.token
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.inFlight[kind]--
			s.mu.Unlock()
		}()

		if f.Latency > 0 {
			t := time.NewTimer(f.Latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-s.done:
				t.Stop()
				return
			}
		}
		if token != "" && !authorized(r.Header.Get("Authorization"), token) {
			writeJSON(sw, http.StatusUnauthorized, map[string]string{
				"message":           "Bad credentials",
				"documentation_url": "https://docs.github.com/rest",
			})
			return
		}
		if s.fault(sw) {
			return
		}
		if f.RedirectTo != "" {
			http.Redirect(sw, r, strings.TrimSuffix(f.RedirectTo, "/")+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		next.ServeHTTP(sw, r)
	})
}

func authorized(header, token string) bool {
	scheme, got, ok := strings.Cut(header, " ")
	return ok && (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "token")) && got == token
}

// fault answers the request with the next counted fault, if any is left.
func (s *Server) fault(w http.ResponseWriter) bool {
	s.mu.Lock()
	f := &s.faults
	kind := ""
	switch {
	case f.RateLimited > 0:
		f.RateLimited--
		kind = "ratelimit"
	case f.Abuse > 0:
		f.Abuse--
		kind = "abuse"
	case f.TooMany > 0:
		f.TooMany--
		kind = "toomany"
	case f.Status5xx > 0:
		f.Status5xx--
		kind = "5xx"
	}
	reset, retry := f.RateLimitReset, f.RetryAfter
	s.mu.Unlock()
	if reset <= 0 {
		reset = time.Minute
	}
	if retry <= 0 {
		retry = time.Minute
	}
	retrySeconds := strconv.Itoa(int((retry + time.Second - 1) / time.Second))
	switch kind {
	case "ratelimit":
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(reset+time.Second-1).Unix(), 10))
		writeJSON(w, http.StatusForbidden, map[string]string{
			"message":           "API rate limit exceeded for user.",
			"documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
		})
	case "abuse":
		w.Header().Set("Retry-After", retrySeconds)
		writeJSON(w, http.StatusForbidden, map[string]string{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
	case "toomany":
		w.Header().Set("Retry-After", retrySeconds)
		writeJSON(w, http.StatusTooManyRequests, map[string]string{
			"message":           "Too many requests.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
		})
	case "5xx":
		writeJSON(w, http.StatusBadGateway, map[string]string{"message": "Server Error"})
	default:
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b)
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{
		"message":           "Not Found",
		"documentation_url": "https://docs.github.com/rest",
	})
}

// serve answers 200 with body and a strong ETag, or 304 with no body when
// the request's If-None-Match names that ETag. etag "" means a hash of body.
func serve(w http.ResponseWriter, r *http.Request, contentType, etag string, body []byte) {
	if etag == "" {
		h := sha256.Sum256(body)
		etag = `"` + hex.EncodeToString(h[:20]) + `"`
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, max-age=60, s-maxage=60")
	w.Header().Set("Vary", "Accept, Authorization")
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// etagMatch is If-None-Match's weak comparison (RFC 9110, 13.1.2).
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	opaque := strings.TrimPrefix(etag, "W/")
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || strings.TrimPrefix(c, "W/") == opaque {
			return true
		}
	}
	return false
}

func serveJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	serve(w, r, "application/json; charset=utf-8", "", b)
}

// repo returns the git directory of the request's repository, or answers 404.
func (s *Server) repo(w http.ResponseWriter, r *http.Request) (name, dir string, ok bool) {
	name = r.PathValue("owner") + "/" + r.PathValue("repo")
	dir, ok = s.repos[name]
	if !ok {
		notFound(w)
	}
	return name, dir, ok
}

func (s *Server) apiURL(format string, args ...any) string {
	return s.URL + fmt.Sprintf(format, args...)
}

func (s *Server) handleRepo(w http.ResponseWriter, r *http.Request) {
	name, _, ok := s.repo(w, r)
	if !ok {
		return
	}
	owner, repo, _ := strings.Cut(name, "/")
	serveJSON(w, r, map[string]any{
		"id":             1,
		"node_id":        "R_1",
		"name":           repo,
		"full_name":      name,
		"private":        false,
		"owner":          map[string]any{"login": owner, "id": 1, "type": "Organization"},
		"html_url":       "https://github.com/" + name,
		"url":            s.apiURL("repos/%s", name),
		"default_branch": "main",
		"visibility":     "public",
	})
}

// safeRef reports whether a ref is safe to hand to git: no option-like or
// revision-expression syntax beyond plain names, "HEAD" and SHAs.
func safeRef(ref string) bool {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.Contains(ref, "..") || strings.Contains(ref, "@{") {
		return false
	}
	for _, c := range ref {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._/-", c)) {
			return false
		}
	}
	return true
}

// resolve returns the SHA of ref peeled to kind ("commit" or "tree").
func resolve(ctx context.Context, dir, ref, kind string) (string, bool) {
	if !safeRef(ref) {
		return "", false
	}
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", ref+"^{"+kind+"}")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

func acceptsMedia(r *http.Request, media ...string) bool {
	accept := r.Header.Get("Accept")
	for _, m := range media {
		if strings.Contains(accept, m) {
			return true
		}
	}
	return false
}

func (s *Server) handleCommit(w http.ResponseWriter, r *http.Request) {
	name, dir, ok := s.repo(w, r)
	if !ok {
		return
	}
	sha, ok := resolve(r.Context(), dir, r.PathValue("ref"), "commit")
	if !ok {
		notFound(w)
		return
	}
	if acceptsMedia(r, "application/vnd.github.v3.sha", "application/vnd.github.sha") {
		// GitHub's ETag of the SHA form is the quoted SHA; go-github's
		// GetCommitSHA1 relies on that for its If-None-Match.
		serve(w, r, "application/vnd.github.sha; charset=utf-8", `"`+sha+`"`, []byte(sha))
		return
	}
	c, err := s.commitJSON(r.Context(), name, dir, sha)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	serveJSON(w, r, c)
}

// handleCommits lists commits as GitHub's GET /repos/O/R/commits does:
// from sha (default the default branch), those that changed path if
// given, newest first, per_page of them (default 30, at most 100).
func (s *Server) handleCommits(w http.ResponseWriter, r *http.Request) {
	name, dir, ok := s.repo(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	from := q.Get("sha")
	if from == "" {
		from = "HEAD"
	}
	sha, ok := resolve(r.Context(), dir, from, "commit")
	if !ok {
		notFound(w)
		return
	}
	n, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || n <= 0 {
		n = 30
	}
	args := []string{"log", "--format=%H", "-n", strconv.Itoa(min(n, 100)), sha}
	if p := strings.Trim(q.Get("path"), "/"); p != "" {
		args = append(args, "--", p)
	}
	out, err := git(r.Context(), dir, args...)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	list := []map[string]any{}
	for _, c := range strings.Fields(string(out)) {
		m, err := s.commitJSON(r.Context(), name, dir, c)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		list = append(list, m)
	}
	serveJSON(w, r, list)
}

// commitJSON is commit sha of repository name (in dir) as GitHub's API
// describes one.
func (s *Server) commitJSON(ctx context.Context, name, dir, sha string) (map[string]any, error) {
	out, err := git(ctx, dir, "show", "-s", "--format=%T%n%P%n%an%n%ae%n%aI%n%cn%n%ce%n%cI%n%B", sha)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitN(string(out), "\n", 9)
	for len(lines) < 9 {
		lines = append(lines, "")
	}
	parents := []map[string]string{}
	for _, p := range strings.Fields(lines[1]) {
		parents = append(parents, map[string]string{"sha": p, "url": s.apiURL("repos/%s/commits/%s", name, p)})
	}
	return map[string]any{
		"sha":      sha,
		"node_id":  "C_" + sha,
		"url":      s.apiURL("repos/%s/commits/%s", name, sha),
		"html_url": "https://github.com/" + name + "/commit/" + sha,
		"commit": map[string]any{
			"author":    map[string]string{"name": lines[2], "email": lines[3], "date": lines[4]},
			"committer": map[string]string{"name": lines[5], "email": lines[6], "date": lines[7]},
			"message":   strings.TrimRight(lines[8], "\n"),
			"tree":      map[string]string{"sha": lines[0], "url": s.apiURL("repos/%s/git/trees/%s", name, lines[0])},
			"url":       s.apiURL("repos/%s/git/commits/%s", name, sha),
		},
		"parents": parents,
	}, nil
}

type treeEntry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
	Size *int64 `json:"size,omitempty"` // blobs only, as on GitHub
	URL  string `json:"url"`
}

// listTree returns the entries of a tree, all of them below it if recursive.
// Listings are cached: a tree SHA names immutable content.
func (s *Server) listTree(ctx context.Context, name, dir, treeSHA string, recursive bool) ([]treeEntry, error) {
	key := fmt.Sprintf("%s %s %t", name, treeSHA, recursive)
	s.objMu.Lock()
	cached, ok := s.trees[key]
	s.objMu.Unlock()
	if ok {
		return cached, nil
	}
	args := []string{"ls-tree", "-l", "-z"}
	if recursive {
		args = append(args, "-r", "-t")
	}
	out, err := git(ctx, dir, append(args, treeSHA)...)
	if err != nil {
		return nil, err
	}
	entries := []treeEntry{}
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		// "<mode> <type> <sha> <size>\t<path>", size "-" for non-blobs.
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("unexpected ls-tree output %q", rec)
		}
		e := treeEntry{Path: p, Mode: f[0], Type: f[1], SHA: f[2]}
		switch e.Type {
		case "blob":
			n, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("unexpected ls-tree size %q", rec)
			}
			e.Size = &n
			e.URL = s.apiURL("repos/%s/git/blobs/%s", name, e.SHA)
		case "tree":
			e.URL = s.apiURL("repos/%s/git/trees/%s", name, e.SHA)
		}
		entries = append(entries, e)
	}
	s.objMu.Lock()
	s.trees[key] = entries
	s.objMu.Unlock()
	return entries, nil
}

func (s *Server) handleTree(w http.ResponseWriter, r *http.Request) {
	name, dir, ok := s.repo(w, r)
	if !ok {
		return
	}
	// Like GitHub, accept a tree SHA, a commit SHA or a branch name.
	treeSHA, ok := resolve(r.Context(), dir, r.PathValue("sha"), "tree")
	if !ok {
		notFound(w)
		return
	}
	recursive := r.URL.Query().Get("recursive") != "" && r.URL.Query().Get("recursive") != "0" && r.URL.Query().Get("recursive") != "false"
	entries, err := s.listTree(r.Context(), name, dir, treeSHA, recursive)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	truncate := s.faults.TruncateTrees
	s.mu.Unlock()
	truncated := false
	if recursive && truncate {
		entries, truncated = entries[:len(entries)/2], true
	}
	serveJSON(w, r, map[string]any{
		"sha":       treeSHA,
		"url":       s.apiURL("repos/%s/git/trees/%s", name, treeSHA),
		"tree":      entries,
		"truncated": truncated,
	})
}

func validSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func (s *Server) handleBlob(w http.ResponseWriter, r *http.Request) {
	name, dir, ok := s.repo(w, r)
	if !ok {
		return
	}
	sha := r.PathValue("sha")
	s.mu.Lock()
	hide := s.faults.HideBlobs
	s.mu.Unlock()
	if !validSHA(sha) || hide {
		notFound(w)
		return
	}
	if out, err := git(r.Context(), dir, "cat-file", "-t", sha); err != nil || strings.TrimSpace(string(out)) != "blob" {
		notFound(w)
		return
	}
	content, err := git(r.Context(), dir, "cat-file", "blob", sha)
	if err != nil {
		if errors.Is(r.Context().Err(), context.Canceled) {
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if acceptsMedia(r, "application/vnd.github.raw", "application/vnd.github.v3.raw") {
		serve(w, r, "application/vnd.github.raw", `"`+sha+`"`, content)
		return
	}
	serveJSON(w, r, map[string]any{
		"sha":      sha,
		"node_id":  "B_" + sha,
		"size":     len(content),
		"url":      s.apiURL("repos/%s/git/blobs/%s", name, sha),
		"content":  wrapBase64(content),
		"encoding": "base64",
	})
}

// wrapBase64 encodes like GitHub does, with a newline every 60 characters,
// so clients must cope with the line breaks.
func wrapBase64(b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	var sb strings.Builder
	for len(enc) > 60 {
		sb.WriteString(enc[:60])
		sb.WriteByte('\n')
		enc = enc[60:]
	}
	sb.WriteString(enc)
	sb.WriteByte('\n')
	return sb.String()
}
