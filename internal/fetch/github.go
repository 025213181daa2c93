package fetch

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/google/go-github/v57/github"
)

// DefaultGitHubAPI is the API base URL of github.com.
const DefaultGitHubAPI = "https://api.github.com/"

const (
	// maxBlobSize bounds a blob read from GitHub, as MaxLocalFileSize does
	// for local files, so one oversized file cannot exhaust memory.
	maxBlobSize = MaxLocalFileSize
	// walkConcurrency bounds the parallel tree requests of a walk, to be
	// quick on large registries without tripping secondary rate limits.
	walkConcurrency = 8
	// Waits suggested when GitHub gives no hint of its own.
	retryServerError = 30 * time.Second
	retryTimeout     = 10 * time.Second
	retryRateLimit   = time.Minute
)

// GitHubOptions configure a GitHub source.
type GitHubOptions struct {
	// Owner and Repo name the repository.
	Owner, Repo string
	// Branch is the branch to track; "" tracks the default branch.
	Branch string
	// BaseURL is the REST API base URL, used as given (with a trailing
	// slash added): DefaultGitHubAPI when empty, for GitHub Enterprise
	// usually "https://HOST/api/v3/".
	BaseURL string
	// Token, if set, is sent as a bearer token. It never appears in logs,
	// errors or String.
	Token string
	// HTTPClient is the client to use; it is copied, not modified. The
	// default has timeouts.
	HTTPClient *http.Client
	// OnRequest, if set, is called once per HTTP request made, with the
	// endpoint ("commit", "tree", "blob" or "other") and the status code, 0
	// when no response arrived. Requests that go-github refuses locally
	// because a rate limit has not reset yet are not made and not reported.
	OnRequest func(endpoint string, status int)
	// Logger receives debug logs of requests and warnings about backing off;
	// nil discards them.
	Logger *slog.Logger
	// MaxEntries bounds the entries of a listing: past it Tree fails with
	// a *BoundError, and stops reading. Zero means DefaultMaxEntries.
	MaxEntries int
}

// DefaultMaxEntries bounds a listing's entries when GitHubOptions sets no
// bound.
const DefaultMaxEntries = 100_000

// bytesPerEntry is room for one entry of a tree answer in GitHub's JSON
// (path, mode, type, sha, size and url, about 250 bytes): an answer is
// bounded by its entries' bound before it is decoded.
const bytesPerEntry = 512

// String describes the options without the token.
func (o GitHubOptions) String() string {
	tok := ""
	if o.Token != "" {
		tok = " token=REDACTED"
	}
	return fmt.Sprintf("github %s/%s@%s base=%s%s", o.Owner, o.Repo, o.Branch, o.BaseURL, tok)
}

// GoString is String, so that %#v does not print the token either.
func (o GitHubOptions) GoString() string { return o.String() }

// LogValue is String, so that slog does not print the token either.
func (o GitHubOptions) LogValue() slog.Value { return slog.StringValue(o.String()) }

// GitHub is a Source that reads a repository through the GitHub REST API.
// A cold listing costs two requests (head commit, recursive tree) and a
// refresh of an unchanged branch one conditional request answered 304,
// which GitHub does not count against the rate limit.
type GitHub struct {
	owner, repo, ref string
	token            string
	client           *github.Client
	log              *slog.Logger
	maxEntries       int
}

// NewGitHub returns a GitHub source for opts.
func NewGitHub(opts GitHubOptions) (*GitHub, error) {
	if !validName(opts.Owner) || !validName(opts.Repo) {
		return nil, fmt.Errorf("GitHub repository %q/%q: owner and repository must be non-empty names of letters, digits, '.', '-' and '_': %w",
			opts.Owner, opts.Repo, derrors.InvalidArgument)
	}
	ref := opts.Branch
	if ref == "" {
		// HEAD is the default branch: no request needed to learn its name.
		ref = "HEAD"
	} else if !validBranch(ref) {
		return nil, fmt.Errorf("GitHub branch %q: not a valid branch name: %w", ref, derrors.InvalidArgument)
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultGitHubAPI
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		// The URL is not echoed: it might carry credentials.
		return nil, derrors.Errorf(derrors.InvalidArgument, "GitHub API URL: want http(s)://host/path/ without credentials")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	var hc http.Client
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	} else {
		hc = http.Client{Timeout: 60 * time.Second}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 30 * time.Second
		hc.Transport = t
	}
	// Redirects are followed only within the API's origin: a redirect is
	// the server's answer, and following it elsewhere would send requests
	// (and put the answers' statuses and messages in the registry's
	// status) to hosts nobody allowed.
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, u) {
			return errCrossOrigin
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	base0 := hc.Transport
	if base0 == nil {
		base0 = http.DefaultTransport
	}
	maxEntries := opts.MaxEntries
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	// Every answer is read through a bound, so a hostile server's answer
	// costs no more memory than a registry within the bounds could.
	maxBody := max(int64(maxEntries)*bytesPerEntry+1<<20, maxBlobSize*4/3+1<<20)
	hc.Transport = &observeTransport{base: base0, onRequest: opts.OnRequest, log: log, maxBody: maxBody}

	if opts.Token != "" {
		// Not go-github's WithAuthToken: it adds the token to every
		// request, redirects to other hosts included.
		hc.Transport = &tokenTransport{base: hc.Transport, token: opts.Token, scheme: u.Scheme, hosts: tokenHosts(u.Host)}
	}
	client := github.NewClient(&hc)
	client.BaseURL = u
	client.UserAgent = "dm-registry"
	return &GitHub{
		owner:      opts.Owner,
		repo:       opts.Repo,
		ref:        ref,
		token:      opts.Token,
		client:     client,
		log:        log.With("source", "github", "repo", opts.Owner+"/"+opts.Repo),
		maxEntries: maxEntries,
	}, nil
}

// errCrossOrigin refuses a redirect out of the API's origin. It names
// neither the target nor anything the target said: none was asked.
var errCrossOrigin = errors.New("the GitHub API redirected to another scheme, host or port; not followed")

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// String names the repository and branch tracked.
func (g *GitHub) String() string {
	return "github.com/" + g.owner + "/" + g.repo + "@" + g.ref
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 100 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validBranch follows the gist of git check-ref-format, enough to keep
// revision syntax and control characters out of the URL.
func validBranch(s string) bool {
	if s == "" || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") ||
		strings.Contains(s, "..") || strings.Contains(s, "//") || strings.Contains(s, "@{") || strings.HasSuffix(s, ".lock") {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c == 0x7f || strings.ContainsRune("~^:?*[\\", c) {
			return false
		}
	}
	return true
}

// Tree lists the files of the tracked branch's head commit. With prev, the
// head commit request is conditional: when it is unchanged, Tree returns prev
// and an error wrapping derrors.NotModified after that one request.
func (g *GitHub) Tree(ctx context.Context, prev *Tree) (*Tree, error) {
	t, err := g.tree(ctx, prev)
	return t, g.redact(err)
}

func (g *GitHub) tree(ctx context.Context, prev *Tree) (*Tree, error) {
	validator := ""
	if prev != nil {
		validator = prevValidator(prev)
	}
	sha, resp, err := g.client.Repositories.GetCommitSHA1(ctx, g.owner, g.repo, g.ref, validator)
	if resp != nil && resp.StatusCode == http.StatusNotModified && prev != nil {
		return prev, fmt.Errorf("%s unchanged at %s: %w", g, short(prev.Version), derrors.NotModified)
	}
	if err != nil {
		return nil, g.mapError(fmt.Sprintf("%s: resolving head commit", g), err)
	}
	sha = strings.TrimSpace(sha)
	if !validSHA(sha) {
		return nil, fmt.Errorf("%s: head commit: GitHub answered %q, not a SHA-1", g, short(sha))
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		etag = `"` + sha + `"`
	}
	if prev != nil && prev.Version == sha {
		// The validator was not honoured (e.g. by a proxy), but nothing changed.
		return prev, fmt.Errorf("%s unchanged at %s: %w", g, short(sha), derrors.NotModified)
	}

	entries, err := g.list(ctx, sha)
	if err != nil {
		return nil, err
	}
	g.log.InfoContext(ctx, "listed GitHub tree", "commit", sha, "files", len(entries))
	return &Tree{Version: sha, ETag: etag, Entries: entries}, nil
}

// TreeAt lists the files of commit, a SHA a push named, in one request (no
// head commit request): the tree of a commit never changes, so prev at
// that commit is returned with derrors.NotModified and no request at all.
// The tree's ETag is the commit itself, so that the next Tree asks for the
// head against it, and a commit older than the head (pushes recorded out
// of order) is left at the next refresh.
func (g *GitHub) TreeAt(ctx context.Context, commit string, prev *Tree) (*Tree, error) {
	if !validSHA(commit) {
		return nil, fmt.Errorf("%s: commit %q is not a SHA-1: %w", g, short(commit), derrors.InvalidArgument)
	}
	if prev != nil && prev.Version == commit {
		return prev, fmt.Errorf("%s unchanged at %s: %w", g, short(commit), derrors.NotModified)
	}
	entries, err := g.list(ctx, commit)
	if err != nil {
		return nil, g.redact(err)
	}
	g.log.InfoContext(ctx, "listed GitHub tree of a pushed commit", "commit", commit, "files", len(entries))
	return &Tree{Version: commit, ETag: `"` + commit + `"`, Entries: entries}, nil
}

// prevValidator returns what to send as If-None-Match for prev. go-github's
// GetCommitSHA1 quotes it, so it is the opaque part of prev's ETag; the SHA
// itself is GitHub's ETag for this media type, hence the fallback.
func prevValidator(prev *Tree) string {
	v := strings.Trim(strings.TrimPrefix(prev.ETag, "W/"), `"`)
	if v == "" {
		v = prev.Version
	}
	return v
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// list returns the blobs of commit sha in one recursive request, or, when
// GitHub truncates that listing, by walking the trees one request each.
func (g *GitHub) list(ctx context.Context, sha string) ([]Entry, error) {
	var entries []Entry
	t, err := g.getTree(ctx, sha, true, func(e treeEntry) {
		if en, ok := g.entry("", e); ok {
			entries = append(entries, en)
		}
	})
	if err != nil {
		return nil, g.mapError(fmt.Sprintf("%s: listing tree of %s", g, short(sha)), err)
	}
	if t.Truncated {
		root := t.SHA
		if !validSHA(root) {
			root = sha // the commit names its root tree as well
		}
		g.log.InfoContext(ctx, "GitHub truncated the recursive tree listing; walking subtrees", "commit", sha)
		return g.walk(ctx, root)
	}
	sortEntries(entries)
	return entries, nil
}

// treeListing is what list and walk read of GitHub's answer to GET
// /repos/OWNER/REPO/git/trees/SHA: go-github's Tree holds every field of
// every entry behind pointers, three times the memory of these for a
// listing of 100,000 entries.
type treeListing struct {
	SHA       string
	Truncated bool
	// Entries counts the entries read, trees and blobs.
	Entries int
}

// treeEntry is one entry of a tree listing.
type treeEntry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
	Size int64  `json:"size"`
}

// getTree lists the tree of sha (a commit's or a tree's), recursively or one
// level, calling each with every entry as it is decoded: the listing is
// never held whole, and one over the entries bound stops being read there.
// Its errors are go-github's, for mapError.
func (g *GitHub) getTree(ctx context.Context, sha string, recursive bool, each func(treeEntry)) (treeListing, error) {
	u := fmt.Sprintf("repos/%v/%v/git/trees/%v", g.owner, g.repo, url.PathEscape(sha))
	if recursive {
		u += "?recursive=1"
	}
	req, err := g.client.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return treeListing{}, err
	}
	resp, err := g.client.BareDo(ctx, req)
	if err != nil {
		return treeListing{}, err
	}
	defer resp.Body.Close()
	return decodeTree(resp.Body, g.maxEntries, each)
}

// decodeTree reads a tree listing from r, streaming its entries to each;
// more than max entries fail with a *BoundError.
func decodeTree(r io.Reader, max int, each func(treeEntry)) (treeListing, error) {
	var t treeListing
	dec := json.NewDecoder(r)
	delim := func(want json.Delim) error {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("decoding the tree listing: %w", err)
		}
		if d, ok := tok.(json.Delim); !ok || d != want {
			return fmt.Errorf("decoding the tree listing: got %v, want %v", tok, want)
		}
		return nil
	}
	if err := delim('{'); err != nil {
		return t, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return t, fmt.Errorf("decoding the tree listing: %w", err)
		}
		var derr error
		switch tok {
		case "sha":
			derr = dec.Decode(&t.SHA)
		case "truncated":
			derr = dec.Decode(&t.Truncated)
		case "tree":
			if err := delim('['); err != nil {
				return t, err
			}
			for dec.More() {
				var e treeEntry
				if err := dec.Decode(&e); err != nil {
					return t, fmt.Errorf("decoding the tree listing's entry %d: %w", t.Entries, err)
				}
				if t.Entries++; t.Entries > max {
					return t, &BoundError{Bound: "entries", Limit: int64(max), Got: int64(t.Entries)}
				}
				each(e)
			}
			derr = delim(']')
		default:
			var skip json.RawMessage
			derr = dec.Decode(&skip)
		}
		if derr != nil {
			return t, fmt.Errorf("decoding the tree listing's %v: %w", tok, derr)
		}
	}
	return t, delim('}')
}

// entry converts a GitHub tree entry below dir into an Entry, if it is part
// of the registry: a regular file, not hidden, like Local lists.
func (g *GitHub) entry(dir string, e treeEntry) (Entry, bool) {
	p := e.Path
	if dir != "" {
		p = dir + "/" + p
	}
	// Symbolic links (120000) and submodules (type "commit") are not files.
	if e.Type != "blob" || e.Mode == "120000" || hidden(p) {
		return Entry{}, false
	}
	if !fs.ValidPath(p) || !validSHA(e.SHA) {
		g.log.Warn("skipping malformed GitHub tree entry", "path", p, "sha", e.SHA)
		return Entry{}, false
	}
	return Entry{Path: p, SHA: e.SHA, Size: e.Size}, true
}

// hidden reports whether any element of p starts with ".", like the files
// and directories Local leaves out (.git, .github, .gitignore).
func hidden(p string) bool {
	for _, el := range strings.Split(p, "/") {
		if hiddenName(el) {
			return true
		}
	}
	return false
}

// hiddenName reports whether a file or directory name is left out of
// registries: it starts with ".", but for a Helm chart's .helmignore,
// which says what of the chart Helm loads (dm reads charts as Helm does).
func hiddenName(name string) bool {
	return strings.HasPrefix(name, ".") && name != ".helmignore"
}

func sortEntries(entries []Entry) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
}

// walk lists the tree root level by level, each distinct tree once, a few
// requests at a time.
func (g *GitHub) walk(ctx context.Context, root string) ([]Entry, error) {
	type dir struct{ path, sha string }
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	listed := map[string][]treeEntry{} // tree SHA -> its entries
	level := []dir{{"", root}}
	var entries []Entry
	seen := 0 // entries read, trees and blobs: the walk's bound
	for len(level) > 0 {
		var todo []string
		for _, d := range level {
			if _, ok := listed[d.sha]; !ok {
				listed[d.sha] = nil
				todo = append(todo, d.sha)
			}
		}
		results := make([][]treeEntry, len(todo))
		errs := make([]error, len(todo))
		sem := make(chan struct{}, walkConcurrency)
		var wg sync.WaitGroup
		for i, sha := range todo {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				var es []treeEntry
				t, err := g.getTree(ctx, sha, false, func(e treeEntry) { es = append(es, e) })
				if err != nil {
					errs[i] = g.mapError(fmt.Sprintf("%s: listing tree %s", g, short(sha)), err)
					cancel() // one failure fails the walk; stop the rest
					return
				}
				if t.Truncated {
					errs[i] = fmt.Errorf("%s: tree %s has more entries than GitHub lists: %w", g, short(sha), derrors.LimitExceeded)
					cancel()
					return
				}
				results[i] = es
			}()
		}
		wg.Wait()
		if err := firstError(errs); err != nil {
			return nil, err
		}
		for i, sha := range todo {
			listed[sha] = results[i]
			if seen += len(results[i]); seen > g.maxEntries {
				return nil, fmt.Errorf("%s: walking the tree: %w", g, &BoundError{Bound: "entries", Limit: int64(g.maxEntries), Got: int64(seen)})
			}
		}

		var next []dir
		for _, d := range level {
			for _, e := range listed[d.sha] {
				p := e.Path
				if d.path != "" {
					p = d.path + "/" + p
				}
				switch e.Type {
				case "tree":
					// Hidden directories are not listed, so not walked either.
					if !hidden(p) && fs.ValidPath(p) && validSHA(e.SHA) {
						next = append(next, dir{p, e.SHA})
					}
				case "blob":
					if en, ok := g.entry(d.path, e); ok {
						entries = append(entries, en)
					}
				}
			}
		}
		level = next
	}
	sortEntries(entries)
	return entries, nil
}

// FirstError returns the first error of requests run side by side,
// preferring one other than the cancellations a failure causes in the
// requests running beside it; nil when there is none.
func FirstError(errs []error) error { return firstError(errs) }

// firstError prefers an error other than the cancellations a failure causes
// in the requests running beside it.
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// Blob returns the content whose git blob SHA is sha, in one request.
func (g *GitHub) Blob(ctx context.Context, sha string) ([]byte, error) {
	b, err := g.blob(ctx, sha)
	return b, g.redact(err)
}

func (g *GitHub) blob(ctx context.Context, sha string) ([]byte, error) {
	if !validSHA(sha) {
		return nil, fmt.Errorf("blob %q: not a SHA-1: %w", sha, derrors.InvalidArgument)
	}
	what := fmt.Sprintf("%s: reading blob %s", g, sha)
	req, err := g.client.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/git/blobs/%s", g.owner, g.repo, sha), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// Raw content avoids base64's third more bytes; BareDo leaves the body to
	// us so that its size can be bounded while reading.
	req.Header.Set("Accept", "application/vnd.github.raw")
	resp, err := g.client.BareDo(ctx, req)
	if err != nil {
		return nil, g.mapError(what, err)
	}
	defer resp.Body.Close()
	if resp.ContentLength > maxBlobSize {
		return nil, fmt.Errorf("%s: %d bytes is over the %d-byte limit for registry files: %w", what, resp.ContentLength, maxBlobSize, derrors.LimitExceeded)
	}
	// base64 JSON of a blob at the limit is about 4/3 its size.
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBlobSize*4/3+4096))
	if err != nil {
		return nil, g.mapError(what, err)
	}
	content := body
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// A server that ignores the raw media type answers GitHub's JSON.
		var blob github.Blob
		if err := json.Unmarshal(body, &blob); err != nil {
			return nil, fmt.Errorf("%s: decoding JSON answer: %w", what, err)
		}
		if blob.GetEncoding() != "base64" {
			return nil, fmt.Errorf("%s: unsupported encoding %q", what, blob.GetEncoding())
		}
		// StdEncoding skips the line breaks GitHub puts in the content.
		content, err = base64.StdEncoding.DecodeString(blob.GetContent())
		if err != nil {
			return nil, fmt.Errorf("%s: decoding base64 content: %w", what, err)
		}
	}
	if len(content) > maxBlobSize {
		return nil, fmt.Errorf("%s: over the %d-byte limit for registry files: %w", what, maxBlobSize, derrors.LimitExceeded)
	}
	if got := BlobSHA(content); got != sha {
		return nil, fmt.Errorf("%s: content hashes to %s: %w", what, short(got), derrors.Unavailable)
	}
	return content, nil
}

// RetryError is returned when GitHub (or another source) asks us to wait (rate limit, 429, 5xx,
// timeouts): the caller should keep what it has and try again After.
// errors.Is(err, derrors.Unavailable) holds for it.
type RetryError struct {
	// Service names what is unavailable; "" is GitHub.
	Service string
	// After is how long to wait before the next request.
	After time.Duration
	// Reason says why, for logs and metrics.
	Reason string
	// Err is the underlying error.
	Err error
}

// Error says why and how long to wait, then what failed.
func (e *RetryError) Error() string {
	service := e.Service
	if service == "" {
		service = "GitHub"
	}
	msg := fmt.Sprintf("%s unavailable (%s), retry in %s", service, e.Reason, e.After.Round(time.Second))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// RetryAfter returns After; index.Registry backs off by it.
func (e *RetryError) RetryAfter() time.Duration { return e.After }

// Unwrap returns derrors.Unavailable and the underlying error, so that both
// errors.Is(err, derrors.Unavailable) and errors.As into the go-github error
// work.
func (e *RetryError) Unwrap() []error {
	if e.Err == nil {
		return []error{derrors.Unavailable}
	}
	return []error{derrors.Unavailable, e.Err}
}

// mapError turns a go-github or transport error into one wrapping the dm
// sentinel that fits, a *RetryError when waiting may help.
func (g *GitHub) mapError(what string, err error) error {
	wrapped := fmt.Errorf("%s: %w", what, err)
	retry := func(after time.Duration, reason string) error {
		if after <= 0 {
			after = time.Second
		}
		g.log.Warn("GitHub asks to back off", "reason", reason, "retry_after", after.Round(time.Second).String(), "op", what)
		return &RetryError{After: after, Reason: reason, Err: wrapped}
	}

	var rateErr *github.RateLimitError
	var abuseErr *github.AbuseRateLimitError
	var respErr *github.ErrorResponse
	switch {
	case errors.Is(err, errCrossOrigin):
		// Not a network error (a *url.Error is a net.Error): retrying
		// meets the same redirect.
		return fmt.Errorf("%s: %w: %w", what, errCrossOrigin, derrors.Unavailable)
	case errors.As(err, &rateErr):
		return retry(time.Until(rateErr.Rate.Reset.Time), "rate limit exhausted")
	case errors.As(err, &abuseErr):
		after := retryRateLimit
		if abuseErr.RetryAfter != nil {
			after = *abuseErr.RetryAfter
		}
		return retry(after, "secondary rate limit")
	case errors.As(err, &respErr) && respErr.Response != nil:
		code := respErr.Response.StatusCode
		after, hinted := retryAfter(respErr.Response.Header)
		switch {
		case code == http.StatusTooManyRequests:
			if !hinted {
				after = retryRateLimit
			}
			return retry(after, "too many requests (429)")
		case code >= 500:
			if !hinted {
				after = retryServerError
			}
			return retry(after, fmt.Sprintf("server error %d", code))
		case hinted:
			// Any other answer that says when to come back, such as a
			// secondary rate limit go-github did not recognise.
			return retry(after, fmt.Sprintf("status %d with Retry-After", code))
		case code == http.StatusNotFound, code == http.StatusUnprocessableEntity:
			// GitHub answers 422 for a ref that names no commit.
			return fmt.Errorf("%w: %w", wrapped, derrors.NotFound)
		case code == http.StatusUnauthorized, code == http.StatusForbidden:
			// Retrying will not help until the token or permissions change.
			return fmt.Errorf("%w: GitHub refused access (check the token): %w", wrapped, derrors.Unavailable)
		}
		return wrapped
	case errors.Is(err, context.DeadlineExceeded):
		return retry(retryTimeout, "timeout")
	case errors.Is(err, context.Canceled):
		return wrapped
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		reason := "network error"
		if netErr.Timeout() {
			reason = "timeout"
		}
		return retry(retryTimeout, reason)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return retry(retryTimeout, "network error")
	}
	return wrapped
}

// RetryAfter parses a Retry-After header, seconds or an HTTP date, as
// every HTTP source reads it.
func RetryAfter(h http.Header) (time.Duration, bool) { return retryAfter(h) }

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t), true
	}
	return 0, false
}

// redact keeps the token out of err's message even if some layer echoed it
// (a proxy, a server), while errors.Is and errors.As still see through it.
func (g *GitHub) redact(err error) error {
	if err == nil || g.token == "" || !strings.Contains(err.Error(), g.token) {
		return err
	}
	return &redactedError{err: err, token: g.token}
}

type redactedError struct {
	err   error
	token string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.token, "REDACTED")
}

func (e *redactedError) Unwrap() error { return e.err }

// tokenTransport sends the token only to the configured API host (and its
// upload host), over the configured scheme: a redirect elsewhere, or to
// plain HTTP, goes without it.
type tokenTransport struct {
	base   http.RoundTripper
	token  string
	scheme string
	hosts  []string
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != t.scheme || !slices.ContainsFunc(t.hosts, func(h string) bool { return strings.EqualFold(h, req.URL.Host) }) {
		return t.base.RoundTrip(req)
	}
	// A RoundTripper must not modify the request it is given.
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// tokenHosts are the hosts that get the token: the API host, and for
// api.github.com its upload host (GitHub Enterprise serves uploads from
// the API host).
func tokenHosts(api string) []string {
	if strings.EqualFold(api, "api.github.com") {
		return []string{api, "uploads.github.com"}
	}
	return []string{api}
}

// observeTransport reports every request to OnRequest and the debug log.
type observeTransport struct {
	base      http.RoundTripper
	onRequest func(endpoint string, status int)
	log       *slog.Logger
	// maxBody bounds every answer's body.
	maxBody int64
}

func (t *observeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	endpoint := endpointOf(req.URL.Path)
	if t.onRequest != nil {
		t.onRequest(endpoint, status)
	}
	// Only method, path and status: headers carry the token.
	t.log.DebugContext(req.Context(), "GitHub request", "method", req.Method, "path", req.URL.Path,
		"endpoint", endpoint, "status", status, "duration", time.Since(start).String())
	if err == nil && t.maxBody > 0 {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.maxBody, limit: t.maxBody}
	}
	return resp, err
}

// boundedBody fails a read past its limit with a *BoundError, so that no
// answer is read whole into memory past the bound.
type boundedBody struct {
	io.ReadCloser
	left, limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, &BoundError{Bound: "response", Limit: b.limit}
		}
		return b.ReadCloser.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func endpointOf(path string) string {
	switch {
	case strings.Contains(path, "/git/trees/"):
		return "tree"
	case strings.Contains(path, "/git/blobs/"):
		return "blob"
	case strings.Contains(path, "/commits/"):
		return "commit"
	}
	return "other"
}
