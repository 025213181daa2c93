// Package charts downloads Helm charts (.tgz) for dm: from a URL, from a
// chart repository's index.yaml by name and version constraint, or from an
// OCI registry (oci://HOST/PATH:VERSION) through Helm's registry client.
//
// Only hosts the caller allows are reached (redirects included), every
// download is size-limited, a repository's digest is verified, and
// downloads with a known digest are cached in a directory by that digest.
// Credentials follow Helm's conventions (repositories.yaml, the registry
// config.json) or are given explicitly.
package charts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
)

// Defaults for the Fetcher's zero fields.
const (
	// DefaultMaxBytes bounds one download (a chart or an index.yaml).
	DefaultMaxBytes = 20 << 20
	// DefaultTimeout bounds one fetch, all requests included.
	DefaultTimeout = 2 * time.Minute
)

// Credentials authenticate to one host: basic auth, or a bearer token when
// Username is empty.
type Credentials struct {
	Username string
	Password string
}

// Fetcher downloads charts. Its zero value reaches no host.
type Fetcher struct {
	// AllowHosts are the hosts (host or host:port) that may be reached;
	// a redirect elsewhere fails naming the host.
	AllowHosts []string
	// CacheDir keeps downloads by sha256 digest; empty keeps none.
	CacheDir string
	// MaxBytes bounds one download; DefaultMaxBytes when zero.
	MaxBytes int64
	// Timeout bounds one fetch; DefaultTimeout when zero.
	Timeout time.Duration
	// Credentials by host (host or host:port).
	Credentials map[string]Credentials
	// RegistryConfig is Helm's registry credentials file (a docker
	// config.json); empty uses Helm's default place.
	RegistryConfig string
	// Transport makes the requests; http.DefaultTransport when nil.
	Transport http.RoundTripper
	// PlainHTTP reaches OCI registries over http (tests, local ones).
	PlainHTTP bool
	// Log receives a line per download; nil logs nothing.
	Log *slog.Logger
}

// Chart is a downloaded chart archive.
type Chart struct {
	// Name and Version are the repository's (empty for a plain URL).
	Name, Version string
	// URL is where it came from.
	URL string
	// Digest is the sha256 of Data, in hex.
	Digest string
	// Data is the .tgz.
	Data []byte
}

// URL downloads the chart archive at rawURL (http or https).
func (f *Fetcher) URL(ctx context.Context, rawURL string) (*Chart, error) {
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	b, err := f.get(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return &Chart{URL: rawURL, Digest: digest(b), Data: b}, nil
}

// Repo downloads chart name from the Helm repository at repoURL: the
// highest version of its index.yaml that satisfies constraint (a
// Masterminds/semver constraint as Helm's, such as "^1.2" or "1.2.3";
// empty for the latest stable), verified against the index's digest.
func (f *Fetcher) Repo(ctx context.Context, repoURL, name, constraint string) (*Chart, error) {
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	base := strings.TrimSuffix(repoURL, "/")
	indexURL := base + "/index.yaml"
	b, err := f.get(ctx, indexURL)
	if err != nil {
		return nil, err
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", indexURL, invalid(fmt.Errorf("not a chart repository index: %w", err)))
	}
	if idx.APIVersion == "" {
		return nil, fmt.Errorf("%s: %w", indexURL, invalid(errors.New("not a chart repository index: no apiVersion")))
	}
	idx.SortEntries()
	cv, err := idx.Get(name, constraint)
	if err != nil {
		return nil, fmt.Errorf("%s: chart %s version %q: %w: %w", indexURL, name, constraint, derrors.NotFound, err)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%s: chart %s %s has no URL: %w", indexURL, name, cv.Version, derrors.InvalidArgument)
	}
	u, err := repo.ResolveReferenceURL(base+"/", cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%s: chart %s %s: URL %q: %w", indexURL, name, cv.Version, cv.URLs[0], invalid(err))
	}
	want := strings.TrimPrefix(cv.Digest, "sha256:")
	if want != "" {
		if b, ok := f.cached(want); ok {
			return &Chart{Name: name, Version: cv.Version, URL: u, Digest: want, Data: b}, nil
		}
	}
	data, err := f.get(ctx, u)
	if err != nil {
		return nil, err
	}
	got := digest(data)
	if want != "" && got != want {
		return nil, fmt.Errorf("%s: digest sha256:%s, but %s lists sha256:%s for %s %s: %w", u, got, indexURL, want, name, cv.Version, derrors.InvalidArgument)
	}
	if want != "" {
		f.store(got, data)
	}
	return &Chart{Name: name, Version: cv.Version, URL: u, Digest: got, Data: data}, nil
}

func (f *Fetcher) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	t := f.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	return context.WithTimeout(ctx, t)
}

func (f *Fetcher) maxBytes() int64 {
	if f.MaxBytes > 0 {
		return f.MaxBytes
	}
	return DefaultMaxBytes
}

// allowed reports whether host (host or host:port) may be reached.
func (f *Fetcher) allowed(u *url.URL) bool {
	for _, h := range f.AllowHosts {
		if strings.EqualFold(h, u.Host) || strings.EqualFold(h, u.Hostname()) {
			return true
		}
	}
	return false
}

func (f *Fetcher) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: %w", u.Redacted(), invalid(fmt.Errorf("scheme %q: only http and https are fetched", u.Scheme)))
	}
	if !f.allowed(u) {
		return fmt.Errorf("%s: %w: host %s is not among the allowed chart hosts (allow it, for example with --chart-repo)", u.Redacted(), derrors.Forbidden, u.Host)
	}
	return nil
}

// client returns an http.Client that refuses hosts out of the allow list,
// on the first request and on every redirect.
func (f *Fetcher) client() *http.Client {
	return &http.Client{
		Transport: &guard{f: f, next: f.transport()},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return f.checkURL(req.URL)
		},
	}
}

func (f *Fetcher) transport() http.RoundTripper {
	if f.Transport != nil {
		return f.Transport
	}
	return http.DefaultTransport
}

// guard is the transport every request goes through: the allow list,
// then credentials for the host, then a size limit on the answer.
type guard struct {
	f    *Fetcher
	next http.RoundTripper
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.f.checkURL(req.URL); err != nil {
		return nil, err
	}
	if req.Header.Get("Authorization") == "" {
		if c, ok := g.f.credentials(req.URL); ok {
			req = req.Clone(req.Context())
			if c.Username == "" {
				req.Header.Set("Authorization", "Bearer "+c.Password)
			} else {
				req.SetBasicAuth(c.Username, c.Password)
			}
		}
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > g.f.maxBytes() {
		resp.Body.Close()
		return nil, limitErr(req.URL, g.f.maxBytes())
	}
	resp.Body = &limitedBody{rc: resp.Body, n: g.f.maxBytes(), u: req.URL}
	return resp, nil
}

func (f *Fetcher) credentials(u *url.URL) (Credentials, bool) {
	if c, ok := f.Credentials[u.Host]; ok {
		return c, true
	}
	c, ok := f.Credentials[u.Hostname()]
	return c, ok
}

// limitedBody fails a read past n bytes, naming the URL.
type limitedBody struct {
	rc io.ReadCloser
	n  int64
	u  *url.URL
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, limitErr(l.u, 0)
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	k, err := l.rc.Read(p)
	l.n -= int64(k)
	if l.n < 0 {
		return k, limitErr(l.u, 0)
	}
	return k, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }

// LimitError is a download larger than Fetcher.MaxBytes.
type LimitError struct {
	URL string
	Max int64
}

func (e *LimitError) Error() string {
	if e.Max > 0 {
		return fmt.Sprintf("%s: larger than %d bytes (limit MaxBytes)", e.URL, e.Max)
	}
	return fmt.Sprintf("%s: larger than the download limit (MaxBytes)", e.URL)
}

// Unwrap returns derrors.LimitExceeded.
func (e *LimitError) Unwrap() error { return derrors.LimitExceeded }

func limitErr(u *url.URL, max int64) error { return &LimitError{URL: u.Redacted(), Max: max} }

// get downloads rawURL whole, within the limits.
func (f *Fetcher) get(ctx context.Context, rawURL string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, invalid(fmt.Errorf("chart URL %q: %w", rawURL, err))
	}
	if err := f.checkURL(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, invalid(fmt.Errorf("chart URL %q: %w", rawURL, err))
	}
	resp, err := f.client().Do(req)
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) || errors.Is(err, derrors.Forbidden) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w: %w", u.Redacted(), derrors.Unavailable, unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		kind := derrors.Unavailable
		switch resp.StatusCode {
		case http.StatusNotFound:
			kind = derrors.NotFound
		case http.StatusUnauthorized, http.StatusForbidden:
			kind = derrors.Unauthorized
		}
		return nil, fmt.Errorf("%s: %w: HTTP %s", u.Redacted(), kind, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return nil, &LimitError{URL: le.URL, Max: f.maxBytes()}
		}
		return nil, fmt.Errorf("%s: %w: %w", u.Redacted(), derrors.Unavailable, err)
	}
	if f.Log != nil {
		f.Log.Info("chart download", "url", u.Redacted(), "bytes", len(b))
	}
	return b, nil
}

// unwrapURL drops *url.Error's repetition of the method and URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		var ne net.Error
		if errors.As(ue.Err, &ne) && ne.Timeout() {
			return fmt.Errorf("timed out: %w", ue.Err)
		}
		return ue.Err
	}
	return err
}

func (f *Fetcher) cachePath(d string) string {
	return filepath.Join(f.CacheDir, "sha256-"+d+".tgz")
}

// cached returns the download of digest d from the cache, re-verified.
func (f *Fetcher) cached(d string) ([]byte, bool) {
	if f.CacheDir == "" || len(d) != 64 {
		return nil, false
	}
	b, err := os.ReadFile(f.cachePath(d))
	if err != nil || digest(b) != d {
		return nil, false
	}
	return b, true
}

// store keeps b in the cache, atomically; a failure only costs a later
// download.
func (f *Fetcher) store(d string, b []byte) {
	if f.CacheDir != "" {
		_ = fetch.WriteFileAtomic(f.cachePath(d), b)
	}
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// kindError gives an error one of derrors' kinds without changing its text.
type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

func invalid(err error) error { return &kindError{err: err, kind: derrors.InvalidArgument} }
