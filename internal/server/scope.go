package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Authorizer decides who may see a namespace's registries and registryd's
// metrics. registryd --watch-registries asks the apiserver (package
// kubereg: TokenReview, then SubjectAccessReview), as an aggregated API
// server does; without one, no request sees a namespaced registry.
type Authorizer interface {
	// Authenticate tells whether the apiserver knows the caller's token,
	// before anything else is asked of a request: nil when it does,
	// ErrUnauthenticated when it does not (the request is then served as
	// an anonymous one's), a *ThrottledError when the token is not
	// reviewed now (answered 429). It depends on the token and the
	// caller's address alone, never on what the request names: a made-up
	// token costs the same whatever namespace it names.
	Authenticate(ctx context.Context, c Caller) error
	// AllowedRegistry reports whether the caller may get the Registry
	// object name in namespace ns.
	AllowedRegistry(ctx context.Context, c Caller, ns, name string) bool
	// AllowedPath reports whether the caller may get the non-resource URL
	// path (/metrics).
	AllowedPath(ctx context.Context, c Caller, path string) bool
}

// A Caller is who sent a request: its bearer token, the token's SHA-256,
// computed once per request, by which every cache of who asks is keyed
// (never by the token), and its client address (its IP address, or the
// one a trusted proxy names), by which unknown tokens are rate-limited.
type Caller struct {
	Token string
	Sum   [32]byte
	Addr  string
}

// ErrUnauthenticated is Authenticate's answer for a token the apiserver
// does not know (or that registryd refused without asking: not a
// well-formed token of an issuer and audience the apiserver accepts).
var ErrUnauthenticated = errors.New("the token is not authenticated")

// ThrottledError is Authenticate's answer for a token not reviewed now:
// its client sent too many tokens the apiserver had not reviewed lately,
// or the reviews of such tokens are all in flight. The request is
// answered 429 with Retry-After; tokens reviewed lately are never
// throttled.
type ThrottledError struct {
	// After is when to try again.
	After time.Duration
	// Reason says which bound, and the flag that sets it.
	Reason string
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many bearer tokens to review: %s; retry in %s", e.Reason, e.After.Round(time.Second))
}

// statusOf is the HTTP status of an error a handler answers.
func statusOf(err error) int {
	var te *ThrottledError
	if errors.As(err, &te) {
		return http.StatusTooManyRequests
	}
	return derrors.HTTPStatus(err)
}

// retryAfter is the Retry-After header's value for e: whole seconds, at
// least one.
func (e *ThrottledError) retryAfter() string {
	return strconv.Itoa(max(1, int((e.After+time.Second-1)/time.Second)))
}

// NewCaller returns the Caller of a bearer token.
func NewCaller(token string) Caller { return Caller{Token: token, Sum: sha256.Sum256([]byte(token))} }

// connCaller remembers the last Caller of one connection: a keep-alive
// client (dm-controller, a proxy) sends the same token with every request,
// whose hash is then computed once per connection, not per request. It
// lives as long as the connection, which holds the token anyway.
type connCaller struct {
	mu     sync.Mutex
	caller Caller
	// remote is the RemoteAddr that caller.Addr was computed from.
	remote string
}

type connCallerKey struct{}

// ConnContext is http.Server's ConnContext: registryd gives each
// connection its remembered Caller.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connCallerKey{}, &connCaller{})
}

// callerOf returns the Caller of r's token, from its connection's when
// the connection sent it last. The address is r's own (clientAddr): a
// proxy sends many clients' requests over one connection.
func (s *Server) callerOf(r *http.Request, token string) Caller {
	cc, ok := r.Context().Value(connCallerKey{}).(*connCaller)
	if !ok {
		c := NewCaller(token)
		c.Addr = s.clientAddr(r)
		return c
	}
	remote := r.RemoteAddr
	if len(s.proxies) > 0 {
		remote += "\x00" + strings.Join(r.Header.Values("X-Forwarded-For"), ",")
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.caller.Token != token {
		addr := cc.caller.Addr
		cc.caller = NewCaller(token)
		cc.caller.Addr = addr
	}
	if cc.remote != remote || cc.caller.Addr == "" {
		cc.remote, cc.caller.Addr = remote, s.clientAddr(r)
	}
	return cc.caller
}

// ClientAddr names the peer of r for rate limits: its IP address, or for
// IPv6 its /64 (one host's, which may use any address in it).
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Is4() {
		return host // as it came: no allocation
	}
	return addrKey(ip)
}

// addrKey names a client by ip: an IPv4 address as is, an IPv6 one by
// its /64.
func addrKey(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// clientAddr names the client of r for rate limits: the peer (ClientAddr)
// or, when the peer is one of Options.TrustedProxies, the address its
// X-Forwarded-For names: the last entry that is not a trusted proxy
// itself, read from the right, as nginx's real_ip_recursive does (the
// entries further left are the client's to write).
func (s *Server) clientAddr(r *http.Request) string {
	peer := ClientAddr(r)
	if len(s.proxies) == 0 {
		return peer
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !s.trusted(ip) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := parseHop(hops[i])
		if err != nil {
			break // a proxy wrote no address: the last proxy is the client
		}
		ip = hop
		if !s.trusted(hop) {
			break
		}
	}
	return addrKey(ip)
}

// parseHop reads one X-Forwarded-For entry: an address, perhaps with a
// port (IPv6 then in brackets).
func parseHop(s string) (netip.Addr, error) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), nil
	}
	return netip.ParseAddr(strings.Trim(s, "[]"))
}

// trusted reports whether ip is one of Options.TrustedProxies.
func (s *Server) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range s.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// NamespaceParam is the query parameter that names the namespace whose
// registries a request asks for; NamespaceCookie remembers it for the
// catalog's pages, whose links do not carry it.
const (
	NamespaceParam  = "namespace"
	NamespaceCookie = "dm-namespace"
)

// Bounds of what a request's scope is read from: a namespace is a DNS
// label; a Kubernetes token (a JWT) is a few kilobytes.
const (
	maxNamespace = 63
	maxToken     = 16 << 10
)

// ParseScope reads the scope of a request: the namespace it names (the
// namespace query parameter, else for the catalog its cookie) and its
// bearer token (the Authorization header). A namespace that is not a DNS
// label, or a token that is not one header token, counts as none: the
// request is anonymous, never an error that would tell names apart.
func ParseScope(authorization, namespace string) (ns, token string) {
	if !validNamespace(namespace) {
		return "", ""
	}
	return namespace, bearerToken(authorization)
}

// bearerToken returns the token of an Authorization header, or "" when it
// holds none or not one header token.
func bearerToken(authorization string) string {
	scheme, tok, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > maxToken {
		return ""
	}
	// One token, no spaces (net/http refuses control bytes in header
	// values): what is sent to the apiserver is what the client sent. A
	// service account's token is a kilobyte, checked on every request:
	// IndexByte is vectorised.
	if strings.IndexByte(tok, ' ') >= 0 || strings.IndexByte(tok, '\t') >= 0 || strings.IndexByte(tok, 0) >= 0 {
		return ""
	}
	return tok
}

// validNamespace reports whether s is a Kubernetes namespace name (an RFC
// 1123 label).
func validNamespace(s string) bool {
	if s == "" || len(s) > maxNamespace {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(s)-1) {
			return false
		}
	}
	return true
}

// scoped returns r's context with the scope the request names, when it
// names a namespace with a token the apiserver knows and the server has an
// Authorizer. The namespace is the request's parameter (or, for the
// catalog, its cookie). The token is authenticated first, whatever the
// namespace holds: a token the apiserver does not know is served as an
// anonymous caller, after the same work whether or not the namespace has
// registries. The error is a *ThrottledError.
func (s *Server) scoped(r *http.Request) (context.Context, error) {
	if s.authz == nil {
		return r.Context(), nil
	}
	return s.scopedIn(r, r.URL.Query().Get(NamespaceParam))
}

// scopedIn is scoped with the namespace parameter read already (the hot
// path reads its parameters in one pass).
func (s *Server) scopedIn(r *http.Request, namespace string) (context.Context, error) {
	ctx := r.Context()
	if s.authz == nil || namespace == "" && r.Header.Get("Authorization") == "" {
		return ctx, nil
	}
	if namespace == "" && !strings.HasPrefix(r.URL.Path, "/v1/") {
		if c, err := r.Cookie(NamespaceCookie); err == nil {
			namespace = c.Value
		}
	}
	ns, token := ParseScope(r.Header.Get("Authorization"), namespace)
	if ns == "" || token == "" {
		return ctx, nil
	}
	caller := s.callerOf(r, token)
	authz := s.authz
	if err := authz.Authenticate(ctx, caller); err != nil {
		var te *ThrottledError
		if errors.As(err, &te) {
			return ctx, err
		}
		return ctx, nil // as anonymous
	}
	return resolve.WithScope(ctx, resolve.Scope{
		Namespace: ns,
		// The caches of who asks are keyed by a hash of the token, never
		// by the token.
		Who: [16]byte(caller.Sum[:16]),
		Allow: func(ctx context.Context, g *index.Registry) bool {
			return authz.AllowedRegistry(ctx, caller, g.Namespace, g.Object)
		},
	}), nil
}

// scope is middleware: it puts the request's scope in its context. A
// catalog page asked for with ?namespace=NS remembers NS in a cookie, so
// that the catalog's links, which do not carry it, stay in the namespace
// (?namespace= with no value forgets it). The cookie only names a
// namespace: what is shown still takes the bearer token.
func (s *Server) scope(next http.Handler) http.Handler {
	if s.authz == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") && r.URL.Query().Has(NamespaceParam) {
			ns := r.URL.Query().Get(NamespaceParam)
			c := &http.Cookie{Name: NamespaceCookie, Value: ns, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode}
			if !validNamespace(ns) {
				c.Value, c.MaxAge = "", -1
			}
			http.SetCookie(w, c)
		}
		ctx, err := s.scoped(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
