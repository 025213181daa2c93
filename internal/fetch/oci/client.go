// Package oci reads and writes template registries kept in OCI
// registries: a fetch.Source over an OCI repository prefix (Source), and
// the pushes of dm push, dm mirror and registryd --mirror-to (Pusher).
//
// A registry oci://HOST/PATH keeps each template in a repository of its
// own, HOST/PATH/[COLLECTION/]TEMPLATE, and each version as one artifact
// (package artifact) tagged with the version. The repositories are listed
// with the registry's catalog API or, where a registry has none (ghcr.io,
// ECR, Docker Hub), from the index artifact dm push keeps at
// HOST/PATH:dm-index; each repository's tags are its versions.
//
// Credentials come from Docker's configuration file and credential
// helpers (as docker, Helm, oras and Flux read them) or from a Secret's
// .dockerconfigjson; plain HTTP is used only for a registry configured
// with it; proxies come from the environment.
package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
)

// Scheme is the URL scheme of OCI registries: oci://HOST/PATH.
const Scheme = "oci://"

// Location is an OCI repository prefix: where a registry's templates are.
type Location struct {
	// Host is the registry's host[:port].
	Host string
	// Path is the repository prefix, without leading or trailing slash;
	// it may be empty (templates at the registry's root).
	Path string
}

// String returns oci://HOST/PATH.
func (l Location) String() string {
	if l.Path == "" {
		return Scheme + l.Host
	}
	return Scheme + l.Host + "/" + l.Path
}

// Repository returns the repository of a template: PATH/[COLLECTION/]NAME.
func (l Location) Repository(collection, name string) string {
	parts := make([]string, 0, 3)
	if l.Path != "" {
		parts = append(parts, l.Path)
	}
	if collection != "" {
		parts = append(parts, collection)
	}
	return strings.Join(append(parts, name), "/")
}

// ParseURL parses oci://HOST[:PORT][/PATH]. The host and path are
// checked as the distribution spec names registries and repositories
// (lower case; no credentials, query or fragment).
func ParseURL(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Location{}, derrors.Errorf(derrors.InvalidArgument, "OCI registry %q: want oci://HOST[:PORT]/PATH", s)
	}
	if strings.ContainsAny(rest, "?#@ \\") {
		return Location{}, derrors.Errorf(derrors.InvalidArgument, "OCI registry %q: want oci://HOST[:PORT]/PATH without credentials, query or fragment", s)
	}
	host, path, _ := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	u, err := url.Parse("//" + host)
	if host == "" || err != nil || u.Host != host || u.User != nil {
		return Location{}, derrors.Errorf(derrors.InvalidArgument, "OCI registry %q: host %q is not HOST[:PORT]", s, host)
	}
	if path != "" {
		if err := checkRepository(path); err != nil {
			return Location{}, fmt.Errorf("OCI registry %q: %w", s, err)
		}
	}
	return Location{Host: strings.ToLower(host), Path: path}, nil
}

// checkRepository checks a repository name as the distribution spec
// writes it: components of [a-z0-9] separated by '.', '_', '__' or
// runs of '-', joined by '/'.
func checkRepository(repo string) error {
	if len(repo) > 255 {
		return derrors.Errorf(derrors.InvalidArgument, "repository %q: longer than 255 characters", repo)
	}
	for _, comp := range strings.Split(repo, "/") {
		if err := checkComponent(comp); err != nil {
			return derrors.Errorf(derrors.InvalidArgument, "repository %q: component %q: %v (OCI repository names are lower-case letters and digits separated by '.', '_' or '-')", repo, comp, err)
		}
	}
	return nil
}

// componentRE is a path component of the distribution spec's repository
// names.
var componentRE = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$`)

func checkComponent(c string) error {
	switch {
	case c == "":
		return errors.New("empty")
	case !componentRE.MatchString(c):
		return errors.New("not lower-case letters and digits separated by '.', '_', '__' or '-'")
	}
	return nil
}

// Options configure a client of one OCI registry.
type Options struct {
	// URL is oci://HOST[:PORT]/PATH.
	URL string
	// PlainHTTP lets the client speak plain HTTP to the registry's own
	// host (a loopback or in-cluster registry); every other request,
	// and every request without it, is HTTPS.
	PlainHTTP bool
	// Auth, if set, is the credential to use. Otherwise Keychain
	// resolves one for the host (default: Docker's configuration file
	// and credential helpers, authn.DefaultKeychain); none is anonymous.
	Auth     authn.Authenticator
	Keychain authn.Keychain
	// Transport is the HTTP transport under authentication; nil is a
	// clone of http.DefaultTransport (proxies from the environment) with
	// timeouts.
	Transport http.RoundTripper
	// OnRequest, if set, is called once per HTTP request with the
	// endpoint ("ping", "token", "catalog", "tags", "manifest", "blob",
	// "referrers", "upload" or "other") and the status code, 0 when no
	// answer came.
	OnRequest func(endpoint string, status int)
	Logger    *slog.Logger
}

// String describes the options without credentials.
func (o Options) String() string {
	s := o.URL
	if o.PlainHTTP {
		s += " (plain HTTP)"
	}
	if o.Auth != nil {
		s += " credential=REDACTED"
	}
	return s
}

// LogValue is String, so that slog prints no credential.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// client speaks the distribution API to one registry host.
type client struct {
	loc       Location
	reg       name.Registry
	plainHTTP bool
	auth      authn.Authenticator
	keychain  authn.Keychain
	base      http.RoundTripper
	log       *slog.Logger

	mu sync.Mutex
	// authn and challenge are resolved and pinged on first use; rts are
	// the authenticated transports by scope.
	authn     authn.Authenticator
	challenge *transport.Challenge
	rts       map[string]http.RoundTripper
}

func newClient(opts Options) (*client, error) {
	loc, err := ParseURL(opts.URL)
	if err != nil {
		return nil, err
	}
	var nopts []name.Option
	if opts.PlainHTTP {
		nopts = append(nopts, name.Insecure)
	}
	reg, err := name.NewRegistry(loc.Host, nopts...)
	if err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "OCI registry %s: %v", loc, err)
	}
	base := opts.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 30 * time.Second
		base = t
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base = &guardTransport{base: base, plainHost: plainHost(opts.PlainHTTP, loc.Host), onRequest: opts.OnRequest, log: log}
	kc := opts.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	return &client{loc: loc, reg: reg, plainHTTP: opts.PlainHTTP, auth: opts.Auth, keychain: kc, base: base, log: log}, nil
}

func plainHost(plain bool, host string) string {
	if plain {
		return host
	}
	return ""
}

// transport returns the authenticated transport for scope (a
// repository's "repository:NAME:pull" or "...:pull,push", or the
// catalog's "registry:catalog:*"), made on first use. The registry is
// pinged once per client; a token-authenticated registry gets a token of
// its own for each scope (one request, no ping), as docker and oras ask
// for them, so no token request grows with the registry's repositories.
// Each transport asks for a new token when the registry answers with a
// challenge (an expired token, a scope it lacks).
func (c *client) transport(ctx context.Context, scope string) (http.RoundTripper, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rt, ok := c.rts[scope]; ok {
		return rt, nil
	}
	if c.authn == nil {
		auth := c.auth
		if auth == nil {
			a, err := authn.Resolve(ctx, c.keychain, c.reg)
			if err != nil {
				return nil, fmt.Errorf("%s: reading credentials: %w", c.loc, err)
			}
			auth = a
		}
		pr, err := transport.Ping(ctx, c.reg, c.base)
		if err != nil {
			return nil, c.mapError(fmt.Sprintf("%s: connecting", c.loc), err)
		}
		c.authn, c.challenge = auth, pr
		c.rts = map[string]http.RoundTripper{}
	}
	tok := &transport.Token{}
	if strings.EqualFold(c.challenge.Scheme, "bearer") {
		t, err := transport.Exchange(ctx, c.reg, c.authn, c.base, []string{scope}, c.challenge)
		if err != nil {
			return nil, c.mapError(fmt.Sprintf("%s: getting a token for %s", c.loc, scope), err)
		}
		tok = t
	}
	rt, err := transport.FromToken(c.reg, c.authn, c.base, c.challenge, tok)
	if err != nil {
		return nil, c.mapError(fmt.Sprintf("%s: connecting", c.loc), err)
	}
	// Bounded: a listing reads at most its bound of repositories.
	if len(c.rts) >= maxTransports {
		clear(c.rts)
	}
	c.rts[scope] = rt
	return rt, nil
}

// maxTransports bounds the scopes a client keeps a transport for.
const maxTransports = 10_000

// scopeOf returns the token scope a request of path needs.
func scopeOf(path string, push bool) string {
	if strings.HasPrefix(path, "/v2/_catalog") {
		return "registry:catalog:*"
	}
	repo := strings.TrimPrefix(path, "/v2/")
	for _, marker := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
		if i := strings.LastIndex(repo, marker); i >= 0 {
			repo = repo[:i]
			break
		}
	}
	return repoScope(repo, push)
}

func repoScope(repo string, push bool) string {
	if push {
		return "repository:" + repo + ":pull,push"
	}
	return "repository:" + repo + ":pull"
}

// url returns the URL of a distribution API path. The scheme is https;
// the transport turns it to http for a plain-HTTP registry.
func (c *client) url(path string) string {
	scheme := "https"
	if c.plainHTTP {
		scheme = "http"
	}
	return scheme + "://" + c.loc.Host + path
}

// do sends a request through the authenticated transport of its path.
func (c *client) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	rt, err := c.transport(ctx, scopeOf(req.URL.Path, false))
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: rt, Timeout: 5 * time.Minute}
	return hc.Do(req.WithContext(ctx))
}

// get GETs path and returns its body, at most limit bytes, and the
// answer's headers. A 304 returns derrors.NotModified.
func (c *client) get(ctx context.Context, what, path string, limit int64, header http.Header) ([]byte, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, c.url(path), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.do(ctx, req)
	if err != nil {
		return nil, nil, c.mapError(what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return nil, resp.Header, fmt.Errorf("%s: %w", what, derrors.NotModified)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.Header, c.statusError(what, resp)
	}
	if resp.ContentLength > limit {
		return nil, resp.Header, fmt.Errorf("%s: %w", what, &fetch.BoundError{Bound: "response", Limit: limit})
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, resp.Header, c.mapError(what, err)
	}
	if int64(len(b)) > limit {
		return nil, resp.Header, fmt.Errorf("%s: %w", what, &fetch.BoundError{Bound: "response", Limit: limit})
	}
	return b, resp.Header, nil
}

// statusError is the error of an answer other than 200, waiting as long
// as its Retry-After says when it asks to back off.
func (c *client) statusError(what string, resp *http.Response) error {
	err := c.mapError(what, transport.CheckError(resp, http.StatusOK))
	var re *fetch.RetryError
	if errors.As(err, &re) {
		if after, ok := fetch.RetryAfter(resp.Header); ok && after > 0 {
			re.After = after
		}
	}
	return err
}

// Waits suggested when the registry gives no hint of its own.
const (
	retryServerError = 30 * time.Second
	retryTimeout     = 10 * time.Second
	retryRateLimit   = time.Minute
)

// mapError turns a transport or distribution error into one wrapping the
// dm sentinel that fits: NotFound for 404 (and the spec's *_UNKNOWN
// codes), Unauthorized and Forbidden, a *fetch.RetryError for rate limits,
// server errors and timeouts.
func (c *client) mapError(what string, err error) error {
	wrapped := fmt.Errorf("%s: %w", what, err)
	retry := func(after time.Duration, reason string) error {
		c.log.Warn("OCI registry asks to back off", "registry", c.loc.String(), "reason", reason, "op", what)
		return &fetch.RetryError{Service: "OCI registry " + c.loc.Host, After: after, Reason: reason, Err: wrapped}
	}
	var te *transport.Error
	if errors.As(err, &te) {
		code := te.StatusCode
		switch {
		case code == http.StatusTooManyRequests:
			return retry(retryRateLimit, "too many requests (429)")
		case code >= 500:
			return retry(retryServerError, fmt.Sprintf("server error %d", code))
		case code == http.StatusNotFound:
			return fmt.Errorf("%w: %w", wrapped, derrors.NotFound)
		case code == http.StatusUnauthorized:
			return fmt.Errorf("%w: the registry refused the credentials (docker login %s, or the credentials Secret): %w", wrapped, c.loc.Host, derrors.Unauthorized)
		case code == http.StatusForbidden:
			return fmt.Errorf("%w: %w", wrapped, derrors.Forbidden)
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.BlobUnknownErrorCode, transport.NameUnknownErrorCode:
				return fmt.Errorf("%w: %w", wrapped, derrors.NotFound)
			case transport.UnauthorizedErrorCode:
				return fmt.Errorf("%w: %w", wrapped, derrors.Unauthorized)
			case transport.DeniedErrorCode:
				return fmt.Errorf("%w: %w", wrapped, derrors.Forbidden)
			case transport.TooManyRequestsErrorCode:
				return retry(retryRateLimit, "too many requests")
			}
		}
		return wrapped
	}
	var plain *plainHTTPError
	if errors.As(err, &plain) {
		return fmt.Errorf("%w: %w", wrapped, derrors.InvalidArgument)
	}
	if errors.Is(err, context.Canceled) {
		return wrapped
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return retry(retryTimeout, "network error")
	}
	return wrapped
}

// plainHTTPError is a plain-HTTP request the client would not send.
type plainHTTPError struct{ host string }

func (e *plainHTTPError) Error() string {
	return fmt.Sprintf("plain HTTP to %s refused: use HTTPS, or configure the registry with plain HTTP (--plain-http, plainHTTP: true) if it serves only HTTP", e.host)
}

// guardTransport refuses plain HTTP but to the one host configured with
// it, and reports every request.
type guardTransport struct {
	base      http.RoundTripper
	plainHost string
	onRequest func(endpoint string, status int)
	log       *slog.Logger
}

func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && (t.plainHost == "" || !strings.EqualFold(req.URL.Host, t.plainHost)) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &plainHTTPError{host: req.URL.Host}
	}
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	ep := Endpoint(req)
	if t.onRequest != nil {
		t.onRequest(ep, status)
	}
	// Method, host, path and status only: headers carry credentials.
	t.log.DebugContext(req.Context(), "OCI request", "method", req.Method, "host", req.URL.Host, "path", req.URL.Path,
		"endpoint", ep, "status", status, "duration", time.Since(start).String())
	return resp, err
}

// Endpoint names the distribution API endpoint of a request: "ping",
// "catalog", "tags", "manifest", "upload", "blob", "referrers", "token"
// or "other".
func Endpoint(req *http.Request) string {
	p := req.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		return "ping"
	case strings.HasSuffix(p, "/_catalog"):
		return "catalog"
	case strings.HasSuffix(p, "/tags/list"):
		return "tags"
	case strings.Contains(p, "/manifests/"):
		return "manifest"
	case strings.Contains(p, "/blobs/uploads"):
		return "upload"
	case strings.Contains(p, "/blobs/"):
		return "blob"
	case strings.Contains(p, "/referrers/"):
		return "referrers"
	case req.URL.Query().Get("scope") != "" || req.URL.Query().Get("service") != "":
		return "token"
	}
	return "other"
}

// DockerConfigAuth returns the credential a Docker configuration
// (.dockerconfigjson of a kubernetes.io/dockerconfigjson Secret, or
// config.json) holds for host, anonymous when it holds none. Credential
// helpers are not run: a Secret's configuration holds the credentials
// themselves.
func DockerConfigAuth(b []byte, host string) (authn.Authenticator, error) {
	cf := configfile.New("")
	if err := cf.LoadFromReader(strings.NewReader(string(b))); err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "Docker configuration: %v", err)
	}
	for _, key := range []string{host, "https://" + host, "http://" + host, "https://" + host + "/v1/", "https://" + host + "/v2/"} {
		ac, ok := cf.AuthConfigs[key]
		if !ok {
			continue
		}
		if ac.Auth != "" && ac.Username == "" {
			// LoadFromReader decodes auth into Username and Password.
			continue
		}
		return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password, IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}), nil
	}
	return authn.Anonymous, nil
}

// DockerKeychain returns the keychain of Docker's configuration in dir
// (config.json, with its credential helpers and credsStore, as docker
// login writes them); "" is Docker's own default ($DOCKER_CONFIG, else
// ~/.docker). A registry it holds nothing for is read anonymously.
func DockerKeychain(dir string) authn.Keychain { return dockerKeychain{dir: dir} }

type dockerKeychain struct{ dir string }

func (k dockerKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	cf, err := config.Load(k.dir)
	if err != nil {
		return nil, fmt.Errorf("reading Docker's configuration: %w", err)
	}
	key := r.RegistryStr()
	if key == name.DefaultRegistry {
		key = authn.DefaultAuthKey
	}
	ac, err := cf.GetAuthConfig(key)
	if err != nil {
		return nil, fmt.Errorf("reading the credential of %s from Docker's configuration: %w", r.RegistryStr(), err)
	}
	if ac.Username == "" && ac.Password == "" && ac.IdentityToken == "" && ac.RegistryToken == "" {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password, IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}), nil
}
