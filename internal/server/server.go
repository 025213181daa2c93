// Package server is registryd's HTTP API: the JSON API of package api under
// /v1/, health and readiness probes, and Prometheus metrics.
//
// Routes (see package api for the wire types):
//
//	GET  /, /search, /r/..., /t/...          the HTML catalog (package catalog)
//	GET  /v1/                                a short JSON index of the routes
//	GET  /healthz                            200 while the process serves
//	GET  /readyz                             200 once every registry has an index, else 503 naming those without
//	GET  /metrics                            Prometheus metrics (namespace registryd)
//	GET  /v1/registries                      api.RegistryList
//	GET  /v1/registries/{name}               api.Registry with findings; {name} is a registry name
//	                                         with its slashes (github.com/acme/templates) or URL-escaped
//	POST /v1/registries/{name}/refresh       refresh now; answers api.Registry after the refresh;
//	                                         needs Authorization: Bearer <admin token>
//	GET  /v1/collections?registry=           api.CollectionList
//	GET  /v1/templates?registry=&collection=&q=   api.TemplateList
//	GET  /v1/versions?ref=&registry=         api.Template
//	GET  /v1/template?ref=&registry=         api.TemplateVersion
//	GET  /v1/file?ref=&path=&registry=[&download=1]  raw file content as inert data (text/plain or
//	                                         application/octet-stream, CSP sandbox), ETag "<blob sha>"
//	GET  /v1/resolve?ref=&registry=          api.Resolution
//	GET  /v1/search?q=&registry=             api.SearchResults
//	GET  /v1/index/changes?since=&wait=      api.IndexChanges, a long poll (wait <= 60 s, 256 waiters,
//	                                         8 per client, 64 kept for authenticated callers)
//	POST /v1/expand                          api.ExpandRequest -> api.ExpandResult (bounded in size and time)
//	POST /processedTemplates                 a kind: Template -> the processed Template (seed 000)
//	POST /v1/webhooks/github                 GitHub push events refresh a registry (needs a secret)
//
// Errors are {"error": "..."} with the status of derrors.HTTPStatus: 400 for
// a malformed reference, 404 for what does not exist (unknown routes too),
// 405 for a wrong method, 409 for an ambiguous version, 503 while a
// registry has no index; their messages are derrors.Message, at most a few
// hundred bytes of any input. Clients without credentials are bounded:
// POST /v1/expand takes only application/json (415), request bodies share
// a byte budget (BodyBudget; past it 503 with Retry-After), webhook
// signatures are checked for form before the body is read, and a wrong
// admin token slows its client down (adminGate).
//
// With an Authorizer (registryd --watch-registries), a namespace's
// registries answer only a request that names the namespace
// (?namespace=NS, on every route; the catalog remembers it in a cookie)
// with a Kubernetes bearer token whose holder may get their Registry
// objects; everyone else gets 404, as if they did not exist (scope.go).
// The token is authenticated before anything about the namespace is
// looked at, and one the Authorizer will not review now (too many unknown
// tokens from the client) is answered 429 with Retry-After. /metrics then
// takes a token allowed to get it. The per-client bounds name a client
// by its address, or the one a trusted proxy's X-Forwarded-For names.
//
// GET /v1/resolve is the hot path: it bypasses the router's middleware,
// caches the encoded answer per version and builds the rest by hand, so it
// costs little more than writing a constant.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/catalog"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/resolve"
)

// Options configure a Server.
type Options struct {
	// Resolver holds the registries to serve. Required.
	Resolver *resolve.Resolver
	// AdminToken authorises POST /v1/registries/{name}/refresh and shows
	// local registries' directories in /v1/registries. Empty disables
	// refresh over HTTP (403).
	AdminToken string
	// AdminFailureDelay is how long a client that sent a wrong admin
	// token waits before its next one is checked (429 until then); zero
	// means DefaultAdminFailureDelay.
	AdminFailureDelay time.Duration
	// BodyBudget bounds the request body bytes that POST /v1/expand, POST
	// /processedTemplates and the catalog's previews hold at once, across
	// requests; past it they answer 503 with Retry-After. Zero means
	// DefaultBodyBudget.
	BodyBudget int64
	// Logger receives error and slow-request logs; nil discards them.
	Logger *slog.Logger
	// Metrics to record into and serve; nil creates new ones.
	Metrics *Metrics
	// SlowRequest is the duration from which a request is logged; zero
	// means one second.
	SlowRequest time.Duration
	// RefreshTimeout bounds a refresh asked for over HTTP; zero means 50
	// seconds. The refresh goes on if the client goes away.
	RefreshTimeout time.Duration
	// Expand configures POST /v1/expand's engine: limits, and AllowURLs
	// for URL types. Its Resolver is Resolver.
	Expand expand.Options
	// MaxExpansions bounds the expansions running at once; zero means
	// twice GOMAXPROCS. Requests beyond it wait up to ExpansionQueueWait
	// (zero: 5 seconds), then get 503.
	MaxExpansions      int
	ExpansionQueueWait time.Duration
	// ExampleWorkers bounds the examples tested at once in the background
	// (Run); zero means GOMAXPROCS.
	ExampleWorkers int
	// Webhooks configure POST /v1/webhooks/github; without a secret the
	// endpoint answers 404.
	Webhooks WebhookOptions
	// Expander runs the expansions of POST /v1/expand (and, if it also
	// has ProcessTemplate, of POST /processedTemplates): a sandbox.Pool of
	// worker processes. Nil expands in-process with Expand's options.
	Expander api.Expander
	// ExampleExpander runs the background tests of examples: a pool of
	// its own, so that slow examples cannot hold the workers interactive
	// expansions need. Nil uses Expander.
	ExampleExpander api.Expander
	// ExampleSettle is the examples tester's RemoteSettle: how long a
	// GitHub registry's index must stay unchanged before its new versions
	// are tested; zero means one minute, negative none.
	ExampleSettle time.Duration
	// ExampleActive and ExampleResult are the tester's Active and
	// OnResult: replicas that share one tester.
	ExampleActive func() bool
	ExampleResult func(registry, digest string, r catalog.ExampleResult)
	// ReadyNotes, if set, adds notes to /readyz's answer that do not make
	// it fail, such as "apiserver unreachable: serving snapshots".
	ReadyNotes func() []string
	// ReadyOptional, if set, reports registries whose missing index does
	// not fail /readyz (registries from cluster objects: one broken object
	// must not take every replica out of its Service), by key
	// (index.Registry.Key); they are counted in the notes instead.
	ReadyOptional func(key string) bool
	// TrustedProxies are the proxies (an ingress controller's pods)
	// whose X-Forwarded-For names the client of a request, for the
	// per-client bounds (unknown tokens' reviews, the long poll, wrong
	// admin tokens): without them every client behind a proxy counts as
	// the proxy. Others' X-Forwarded-For is ignored.
	TrustedProxies []netip.Prefix
	// Authorizer, if set, lets a request that names a namespace
	// (?namespace=NS) with a bearer token see that namespace's
	// registries, when the token's holder may get their Registry objects,
	// and guards /metrics. Without it only registries visible everywhere
	// are served.
	Authorizer Authorizer
}

// jsonExpander is an Expander that can answer with the expansion's JSON
// as is (sandbox.Pool: the worker's answer), sparing registryd decoding
// and encoding it again.
type jsonExpander interface {
	ExpandJSON(ctx context.Context, req *api.ExpandRequest) (json.RawMessage, error)
}

// templateProcessor is an Expander that also processes OpenShift
// Templates out of process (sandbox.Pool).
type templateProcessor interface {
	ProcessTemplate(ctx context.Context, body []byte) (json.RawMessage, error)
}

// Server is registryd's HTTP handler.
type Server struct {
	svc        *api.Service
	resolver   *resolve.Resolver
	admin      *adminGate
	hasAdmin   bool
	bodies     *byteBudget
	log        *slog.Logger
	metrics    *Metrics
	slow       time.Duration
	refreshTTL time.Duration
	router     chi.Router
	hot        *resolveHandler
	expansions chan struct{} // semaphore of POST /v1/expand
	// longPolls counts the requests GET /v1/index/changes holds.
	longPolls longPolls
	queueWait time.Duration
	// expander expands for POST /v1/expand, the catalog's previews and the
	// tested examples: the in-process service unless a sandbox replaces it.
	expander api.Expander
	examples *catalog.Examples
	catalog  *catalog.Catalog
	webhooks *webhooks
	// readyNotes and readyOptional are Options.ReadyNotes and
	// Options.ReadyOptional.
	readyNotes    func() []string
	readyOptional func(string) bool
	// authz is Options.Authorizer; proxies Options.TrustedProxies.
	authz   Authorizer
	proxies []netip.Prefix
}

// New returns the handler serving opts.Resolver's registries.
func New(opts Options) *Server {
	s := &Server{
		svc:           api.NewService(opts.Resolver, opts.Expand),
		resolver:      opts.Resolver,
		hasAdmin:      opts.AdminToken != "",
		log:           opts.Logger,
		metrics:       opts.Metrics,
		slow:          opts.SlowRequest,
		refreshTTL:    opts.RefreshTimeout,
		readyNotes:    opts.ReadyNotes,
		readyOptional: opts.ReadyOptional,
		authz:         opts.Authorizer,
		proxies:       opts.TrustedProxies,
	}
	s.expander = opts.Expander
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	s.admin = newAdminGate(opts.AdminToken, opts.AdminFailureDelay, s.log, s.metrics.adminFailures)
	s.bodies = newByteBudget(opts.BodyBudget)
	if s.slow <= 0 {
		s.slow = time.Second
	}
	if s.refreshTTL <= 0 {
		s.refreshTTL = 50 * time.Second
	}
	if opts.MaxExpansions <= 0 {
		opts.MaxExpansions = 2 * runtime.GOMAXPROCS(0)
	}
	s.expansions = make(chan struct{}, opts.MaxExpansions)
	s.queueWait = opts.ExpansionQueueWait
	if s.queueWait <= 0 {
		s.queueWait = 5 * time.Second
	}
	if s.expander == nil {
		// Unless a sandbox's Options.Expander set it above.
		s.expander = s.svc
	}
	exx := opts.ExampleExpander
	if exx == nil {
		exx = s.expander
	}
	s.examples = catalog.NewExamples(catalog.ExamplesOptions{Resolver: opts.Resolver, Expander: exx, Workers: opts.ExampleWorkers, Logger: s.log,
		RemoteSettle: opts.ExampleSettle, Active: opts.ExampleActive, OnResult: opts.ExampleResult})
	s.catalog = catalog.New(catalog.Options{Service: s.svc, Expander: s.expander, Examples: s.examples, Logger: s.log})
	s.webhooks = newWebhooks(opts.Webhooks, opts.Resolver, s.log, s.metrics.shed)
	s.metrics.watch(opts.Resolver)
	s.metrics.watchExamples(s.examples)
	s.hot = newResolveHandler(s)
	s.router = s.routes()
	return s
}

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	// HEAD is answered wherever GET is (net/http drops the body).
	r.Use(middleware.GetHead)
	// The hot path: no middleware; it counts and logs for itself. ServeHTTP
	// sends GET requests here without routing; the route answers the rest
	// (405 for other methods).
	r.Get(resolveRoute, s.hot.ServeHTTP)
	r.Group(func(r chi.Router) {
		r.Use(s.instrument, s.scope)
		r.Group(func(r chi.Router) {
			r.Use(s.budgetForms)
			s.catalog.Mount(r)
		})
		r.Get("/v1/", s.handleIndex)
		r.Get("/v1", s.handleIndex)
		r.Get("/healthz", s.handleHealth)
		r.Get("/readyz", s.handleReady)
		r.Method(http.MethodGet, "/metrics", s.guardMetrics(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{
			ErrorLog:      slogErrorLog{s.log},
			ErrorHandling: promhttp.ContinueOnError,
		})))
		r.Get("/v1/registries", s.handleRegistries)
		r.Get("/v1/registries/*", s.handleRegistry)
		r.Post("/v1/registries/*", s.handleRefresh)
		r.Get("/v1/collections", s.handleCollections)
		r.Get("/v1/templates", s.handleTemplates)
		r.Get("/v1/versions", s.handleVersions)
		r.Get("/v1/template", s.handleTemplate)
		r.Get("/v1/file", s.handleFile)
		r.Get("/v1/search", s.handleSearch)
		r.Get("/v1/index/changes", s.handleChanges)
		r.Post("/v1/expand", s.handleExpand)
		r.Post("/processedTemplates", s.handleProcessedTemplates)
		r.Post("/v1/webhooks/github", s.webhooks.ServeHTTP)
	})
	r.NotFound(s.counted("unmatched", func(w http.ResponseWriter, r *http.Request) {
		if wantsHTML(r) {
			s.catalog.NotFound(w, r)
			return
		}
		s.writeError(w, r, fmt.Errorf("no route %s %s: %w", r.Method, r.URL.Path, derrors.NotFound))
	}))
	r.MethodNotAllowed(s.counted("unmatched", func(w http.ResponseWriter, req *http.Request) {
		allowed := allowedMethods(r, req.URL.Path)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, api.Error{Error: fmt.Sprintf("method %s not allowed on %s; allowed: %s", req.Method, req.URL.Path, strings.Join(allowed, ", "))})
	}))
	return r
}

// wantsHTML reports whether an unmatched request is a browser's: outside
// the JSON API, asking for HTML.
func wantsHTML(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/v1/") && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// Run does the server's background work until ctx ends: testing every
// version's example after each index.
func (s *Server) Run(ctx context.Context) { s.examples.Run(ctx) }

// Examples returns the tester of the versions' examples.
func (s *Server) Examples() *catalog.Examples { return s.examples }

// allowedMethods lists the methods router answers on path, for the Allow
// header of a 405 (RFC 9110 requires it; chi sets it only for its own
// default handler).
func allowedMethods(router chi.Routes, path string) []string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == http.MethodHead {
			if slices.Contains(allowed, http.MethodGet) {
				allowed = append(allowed, m) // middleware.GetHead
			}
			continue
		}
		if router.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// Bounds of a request's head, checked before routing so that an oversized
// one gets a JSON answer like every other error. The http.Server's
// MaxHeaderBytes (MaxHeaderBytes) is set above them; past it net/http
// answers 431 in plain text before any handler runs.
const (
	maxURLBytes    = 16 << 10
	maxHeaderBytes = 64 << 10
	// MaxHeaderBytes is what registryd gives http.Server.MaxHeaderBytes:
	// room for the usual oversized URL (a pasted file, a runaway query) to
	// reach the handler and get JSON.
	MaxHeaderBytes = 1 << 20
)

// headTooLarge reports why r's URL or headers exceed the bounds, or "".
func headTooLarge(r *http.Request) string {
	if n := len(r.RequestURI); n > maxURLBytes {
		return fmt.Sprintf("request URL of %d bytes exceeds the limit of %d bytes", n, maxURLBytes)
	}
	n := 0
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4 // ": " and CRLF
		}
	}
	if n > maxHeaderBytes {
		return fmt.Sprintf("request headers of %d bytes exceed the limit of %d bytes", n, maxHeaderBytes)
	}
	return ""
}

// ServeHTTP serves the API. GET /v1/resolve goes straight to its handler,
// saving the router's per-request context; everything else is routed by
// chi.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := headTooLarge(r); msg != "" {
		s.counted("unmatched", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusRequestHeaderFieldsTooLarge, api.Error{Error: msg})
		})(w, r)
		return
	}
	if r.URL.Path == resolveRoute && r.Method == http.MethodGet {
		s.hot.ServeHTTP(w, r)
		return
	}
	s.router.ServeHTTP(w, r)
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts requests by route pattern and status, recovers panics
// and logs failed and slow requests.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil {
			route = rc.RoutePattern()
		}
		s.serveCounted(route, next, w, r)
	})
}

func (s *Server) counted(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serveCounted(route, h, w, r) }
}

func (s *Server) serveCounted(route string, next http.Handler, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request", "method", r.Method, "route", route, "panic", p)
			if rec.status == 0 {
				writeJSON(rec, http.StatusInternalServerError, api.Error{Error: "internal error"})
			}
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.metrics.httpRequests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
		if d := time.Since(start); d >= s.slow {
			s.log.Warn("slow request", "method", r.Method, "route", route, "status", rec.status, "duration", d)
		}
	}()
	next.ServeHTTP(rec, r)
}

// slogErrorLog adapts the logger for promhttp.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) { l.log.Error("serving metrics", "err", fmt.Sprint(v...)) }

var (
	ctJSON  = []string{"application/json"}
	nosniff = []string{"nosniff"}
)

// writeJSON writes v as the JSON answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	var err error
	if raw, ok := v.(json.RawMessage); ok {
		// An expansion worker's answer, checked to be JSON when it was
		// read (as encoding/json writes it, compact and HTML-safe):
		// encoding it again would only scan it once more.
		b = raw
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"encoding the answer failed"}`)
	}
	h := w.Header()
	h["Content-Type"] = ctJSON
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeError answers with err's status and message; server-side failures
// are logged.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var te *ThrottledError
	if errors.As(err, &te) {
		w.Header().Set("Retry-After", te.retryAfter())
	}
	status := statusOf(err)
	msg := derrors.Message(err)
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", msg)
	}
	e := api.Error{Error: msg}
	if errors.Is(err, derrors.VerificationFailed) {
		e.Kind = derrors.WireKind(derrors.VerificationFailed)
	}
	writeJSON(w, status, e)
}

// answer writes v, or err.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"name": "registryd",
		"routes": []string{
			"GET /healthz", "GET /readyz", "GET /metrics",
			"GET /v1/registries", "GET /v1/registries/{name}", "POST /v1/registries/{name}/refresh",
			"GET /v1/collections?registry=", "GET /v1/templates?registry=&collection=&q=",
			"GET /v1/versions?ref=", "GET /v1/template?ref=", "GET /v1/file?ref=&path=",
			"GET /v1/resolve?ref=", "GET /v1/search?q=", "GET /v1/index/changes?since=&wait=",
			"POST /v1/expand", "POST /processedTemplates", "POST /v1/webhooks/github",
		},
		"catalog": []string{"GET /", "GET /search?q=", "GET /r/{registry}", "GET /t/{reference}",
			"GET /t/{reference}/diff?from=VERSION", "POST /t/{reference}/preview"},
	})
}

// guardMetrics lets only callers the Authorizer allows to get /metrics
// read it, as Kubernetes' own components guard theirs: the series name
// the registries of every namespace. Without an Authorizer there are no
// namespaces' registries, and /metrics is open.
func (s *Server) guardMetrics(next http.Handler) http.Handler {
	if s.authz == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := bearerToken(r.Header.Get("Authorization"))
		if token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="registryd"`)
			s.writeError(w, r, fmt.Errorf("/metrics needs Authorization: Bearer <Kubernetes token> of an account that may get the non-resource URL /metrics: %w", derrors.Unauthorized))
			return
		}
		caller := s.callerOf(r, token)
		if err := s.authz.Authenticate(r.Context(), caller); err != nil {
			var te *ThrottledError
			if errors.As(err, &te) {
				s.writeError(w, r, err)
				return
			}
		}
		if !s.authz.AllowedPath(r.Context(), caller, "/metrics") {
			writeJSON(w, http.StatusForbidden, api.Error{Error: "this account may not get the non-resource URL /metrics"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Ready reports whether every registry has an index to serve, and names
// those that have none; registries Options.ReadyOptional names do not
// count.
func (s *Server) Ready() (bool, []string) {
	missing, _ := s.readiness()
	return len(missing) == 0, missing
}

// readiness names the registries without an index that fail readiness,
// and notes on the others. Registries from cluster objects are counted,
// not named: /readyz answers anyone, and a namespace's registries are
// its own.
func (s *Server) readiness() (missing, notes []string) {
	optional := 0
	for _, g := range s.resolver.Registries() {
		if g.Snapshot() != nil {
			continue
		}
		if s.readyOptional != nil && s.readyOptional(g.Key()) {
			optional++
			continue
		}
		missing = append(missing, g.Name)
	}
	if optional > 0 {
		notes = append(notes, fmt.Sprintf("%d registries from cluster objects have no index yet (their objects' status says why)", optional))
	}
	if s.readyNotes != nil {
		notes = append(notes, s.readyNotes()...)
	}
	return missing, notes
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	missing, notes := s.readiness()
	if len(missing) == 0 {
		writeJSON(w, http.StatusOK, api.Readiness{Ready: true, Notes: notes})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, api.Readiness{
		NotReady: missing,
		Notes:    notes,
		Error:    "no index yet for " + strings.Join(missing, ", "),
	})
}

// SetWebhookRegistries replaces the GitHub registries signed pushes may
// refresh (registries from cluster objects come and go).
func (s *Server) SetWebhookRegistries(regs []WebhookRegistry) { s.webhooks.setRegistries(regs) }

// RequestRefresh refreshes the registry of key (index.Registry.Key) as a
// push to it would:
// bursts make one refresh. commit, if not "", is the commit a push to
// another replica named: the refresh lists that commit (one request to
// GitHub) instead of reading the branch head. It reports whether the
// registry is served.
func (s *Server) RequestRefresh(key, commit string) bool {
	g, ok := s.resolver.ByKey(key)
	if ok {
		s.webhooks.request(g, commit)
	}
	return ok
}

func (s *Server) handleRegistries(w http.ResponseWriter, r *http.Request) {
	v, err := s.svc.Registries(r.Context())
	if err == nil && !s.isAdmin(r) {
		for i := range v.Registries {
			v.Registries[i].HideLocalPath()
		}
	}
	s.answer(w, r, v, err)
}

// isAdmin reports whether r carries the admin token. A wrong token counts
// as a failed attempt; a throttled client is simply not an admin.
func (s *Server) isAdmin(r *http.Request) bool {
	res, _ := s.admin.check(r, s.clientAddr(r))
	return res == authOK
}

// registryParam returns the registry name of a /v1/registries/* route,
// unescaped.
func registryParam(r *http.Request) (string, error) {
	raw := chi.URLParam(r, "*")
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("registry name %q: %v: %w", raw, err, derrors.InvalidArgument)
	}
	return strings.Trim(name, "/"), nil
}

func (s *Server) handleRegistry(w http.ResponseWriter, r *http.Request) {
	name, err := registryParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if base, ok := strings.CutSuffix(name, "/refresh"); ok {
		if _, known := s.resolver.Registry(r.Context(), name); !known {
			if _, known := s.resolver.Registry(r.Context(), base); known {
				w.Header().Set("Allow", http.MethodPost)
				writeJSON(w, http.StatusMethodNotAllowed, api.Error{Error: "refresh needs POST"})
				return
			}
		}
	}
	v, err := s.svc.Registry(r.Context(), name)
	if err == nil && !s.isAdmin(r) {
		v.HideLocalPath()
	}
	s.answer(w, r, v, err)
}

func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request) {
	name, err := registryParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name, ok := strings.CutSuffix(name, "/refresh")
	if !ok {
		s.writeError(w, r, fmt.Errorf("no route POST %s (want /v1/registries/{name}/refresh): %w", r.URL.Path, derrors.NotFound))
		return
	}
	if !s.hasAdmin {
		writeJSON(w, http.StatusForbidden, api.Error{Error: "refresh over HTTP is disabled: registryd has no admin token (set REGISTRYD_ADMIN_TOKEN)"})
		return
	}
	switch res, wait := s.admin.check(r, s.clientAddr(r)); res {
	case authOK:
	case authThrottled:
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		writeJSON(w, http.StatusTooManyRequests, api.Error{Error: fmt.Sprintf("a wrong admin token came from this client: the next one is checked in %s", wait.Round(time.Millisecond))})
		return
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="registryd"`)
		s.writeError(w, r, fmt.Errorf("refresh needs Authorization: Bearer <admin token>: %w", derrors.Unauthorized))
		return
	}
	// The refresh finishes even if the client goes away, so that a good
	// index is not thrown away half-built.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.refreshTTL)
	defer cancel()
	start := time.Now()
	v, err := s.svc.Refresh(ctx, name)
	if err == nil {
		s.log.Info("refresh over HTTP", "registry", name, "status", v.Status, "duration", time.Since(start))
	}
	s.answer(w, r, v, err)
}

// query returns the named query parameter, parsing the query once.
func query(r *http.Request, names ...string) []string {
	q := r.URL.Query()
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = q.Get(n)
	}
	return out
}

func (s *Server) handleCollections(w http.ResponseWriter, r *http.Request) {
	v, err := s.svc.Collections(r.Context(), r.URL.Query().Get("registry"))
	s.answer(w, r, v, err)
}

func (s *Server) handleTemplates(w http.ResponseWriter, r *http.Request) {
	p := query(r, "registry", "collection", "q")
	v, err := s.svc.Templates(r.Context(), api.TemplateQuery{Registry: p[0], Collection: p[1], Q: p[2]})
	s.answer(w, r, v, err)
}

// refParam returns the ref and registry parameters; ref is required.
func refParam(r *http.Request) (ref, registry string, err error) {
	p := query(r, "ref", "registry")
	if p[0] == "" {
		return "", "", fmt.Errorf("missing query parameter ref: %w", derrors.InvalidArgument)
	}
	return p[0], p[1], nil
}

func (s *Server) handleVersions(w http.ResponseWriter, r *http.Request) {
	ref, reg, err := refParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.svc.Versions(r.Context(), ref, reg)
	s.answer(w, r, v, err)
}

func (s *Server) handleTemplate(w http.ResponseWriter, r *http.Request) {
	ref, reg, err := refParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.svc.Template(r.Context(), ref, reg)
	if err == nil {
		v.ExampleTest = s.examples.Of(v)
	}
	s.answer(w, r, v, err)
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	p := query(r, "q", "registry")
	v, err := s.svc.Search(r.Context(), p[0], p[1])
	s.answer(w, r, v, err)
}

// fileType returns the media type registry files are served as: data,
// never active content, whatever their names say. A registry author's
// helper.html, logo.svg or x.js served as what it is would run in the
// catalog's origin.
func fileType(content []byte) string {
	if utf8.Valid(content) && bytes.IndexByte(content, 0) < 0 {
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// fileCSP is on every answer of GET /v1/file, 304 included, with
// nosniff: a browser that opens a file runs nothing of it.
var fileCSP = []string{"sandbox; default-src 'none'"}

func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	p := query(r, "ref", "registry", "path")
	if p[0] == "" {
		s.writeError(w, r, fmt.Errorf("missing query parameter ref: %w", derrors.InvalidArgument))
		return
	}
	f, err := s.svc.File(r.Context(), p[0], p[1], p[2])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	etag := `"` + f.File.SHA + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h["X-Content-Type-Options"] = nosniff
	h["Content-Security-Policy"] = fileCSP
	h.Set("X-Resolved", f.Resolved)
	if r.URL.Query().Has("download") {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(f.File.Path)}))
	}
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatch(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", fileType(f.Content))
	h.Set("Content-Length", strconv.Itoa(len(f.Content)))
	w.WriteHeader(http.StatusOK)
	w.Write(f.Content)
}

// etagMatch reports whether an If-None-Match header names etag.
func etagMatch(header, etag string) bool {
	for _, m := range strings.Split(header, ",") {
		m = strings.TrimPrefix(strings.TrimSpace(m), "W/")
		if m == etag || m == "*" {
			return true
		}
	}
	return false
}
