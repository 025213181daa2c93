package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/resolve"
)

// resolveRoute is the route label of the hot path.
const resolveRoute = "/v1/resolve"

// maxCachedAnswers bounds the encoded-answer cache; when it fills up it
// starts over, which also drops the versions of replaced snapshots.
const maxCachedAnswers = 50_000

// resolveHandler serves GET /v1/resolve. Everything an answer holds except
// "requested" and "note" depends only on the resolved version, and
// versions are immutable, so that part is encoded once per version and the
// rest is appended by hand into a pooled buffer. The bytes are exactly what
// json.Marshal of an api.Resolution gives.
type resolveHandler struct {
	s       *Server
	counts  map[int]prometheus.Counter // pre-curried by status code
	observe prometheus.Histogram

	answers atomic.Pointer[sync.Map] // *index.Version -> *encodedVersion
	size    atomic.Int64
	// gen is the resolver's generation the answers are of: a registry
	// removed takes its versions' answers with it.
	gen  atomic.Uint64
	bufs sync.Pool
}

// encodedVersion is the version-dependent part of an answer: head is
// `{"resolved":"..."`, body `,"registry":...` up to but excluding "note".
type encodedVersion struct {
	head, body []byte
}

func newResolveHandler(s *Server) *resolveHandler {
	h := &resolveHandler{
		s:       s,
		counts:  map[int]prometheus.Counter{},
		observe: s.metrics.resolveDuration,
	}
	for _, code := range []int{200, 400, 404, 409, 500, 503} {
		h.counts[code] = s.metrics.httpRequests.WithLabelValues(resolveRoute, strconv.Itoa(code))
	}
	h.answers.Store(new(sync.Map))
	h.bufs.New = func() any { b := make([]byte, 0, 2048); return &b }
	return h
}

func (h *resolveHandler) count(code int) {
	if c, ok := h.counts[code]; ok {
		c.Inc()
		return
	}
	h.s.metrics.httpRequests.WithLabelValues(resolveRoute, strconv.Itoa(code)).Inc()
}

// ServeHTTP answers one resolve request.
func (h *resolveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code := h.serve(w, r)
	d := time.Since(start)
	h.observe.Observe(d.Seconds())
	h.count(code)
	if d >= h.s.slow {
		h.s.log.Warn("slow request", "method", r.Method, "route", resolveRoute, "status", code, "duration", d)
	}
}

func (h *resolveHandler) serve(w http.ResponseWriter, r *http.Request) int {
	ref, reg, ns, err := refQuery(r.URL.RawQuery)
	if err == nil && ref == "" {
		err = fmt.Errorf("missing query parameter ref: %w", derrors.InvalidArgument)
	}
	def := h.s.resolver.Default
	if err == nil && reg != "" {
		def, err = resolve.ParseRegistry(reg)
	}
	var res *resolve.Resolution
	if err == nil {
		var ctx context.Context
		if ctx, err = h.s.scopedIn(r, ns); err == nil {
			res, err = h.s.resolver.ResolveIn(ctx, ref, def)
		}
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return statusOf(err)
	}
	enc, err := h.encoded(res)
	if err != nil {
		h.s.writeError(w, r, err)
		return http.StatusInternalServerError
	}
	bp := h.bufs.Get().(*[]byte)
	b := append((*bp)[:0], enc.head...)
	b = append(b, `,"requested":`...)
	b = appendJSONString(b, res.Requested)
	b = append(b, enc.body...)
	if res.Note != "" {
		b = append(b, `,"note":`...)
		b = appendJSONString(b, res.Note)
	}
	b = append(b, "}\n"...)
	w.Header()["Content-Type"] = ctJSON
	w.Write(b)
	*bp = b
	if cap(b) <= 64<<10 {
		h.bufs.Put(bp)
	}
	return http.StatusOK
}

// encoded returns the cached encoding of res's version, encoding it on
// first use.
func (h *resolveHandler) encoded(res *resolve.Resolution) (*encodedVersion, error) {
	if g := h.s.resolver.Generation(); h.gen.Load() != g {
		h.reset(g)
	}
	m := h.answers.Load()
	if e, ok := m.Load(res.Version); ok {
		return e.(*encodedVersion), nil
	}
	full := api.ResolutionOf(res)
	full.Requested, full.Note = "", ""
	b, err := json.Marshal(full)
	if err != nil {
		return nil, fmt.Errorf("encoding the resolution of %s: %w", res.Resolved(), err)
	}
	const mark = `,"requested":""`
	i := bytes.Index(b, []byte(mark))
	if i < 0 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("encoding the resolution of %s: unexpected layout", res.Resolved())
	}
	e := &encodedVersion{head: b[:i], body: b[i+len(mark) : len(b)-1]}
	if h.size.Add(1) > maxCachedAnswers {
		h.answers.Store(new(sync.Map))
		h.size.Store(1)
		m = h.answers.Load()
	}
	m.Store(res.Version, e)
	return e, nil
}

// reset drops every encoded answer, for the resolver's generation g.
func (h *resolveHandler) reset(g uint64) {
	h.answers.Store(new(sync.Map))
	h.size.Store(0)
	h.gen.Store(g)
}

// refQuery returns the first ref, registry and namespace parameters of a
// raw query string in one pass, unescaping only when needed.
func refQuery(raw string) (ref, registry, namespace string, err error) {
	var haveRef, haveReg, haveNS bool
	for raw != "" && !(haveRef && haveReg && haveNS) {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(kv, "=")
		var dst *string
		switch {
		case k == "ref" && !haveRef:
			dst, haveRef = &ref, true
		case k == "registry" && !haveReg:
			dst, haveReg = &registry, true
		case k == NamespaceParam && !haveNS:
			dst, haveNS = &namespace, true
		default:
			continue
		}
		if strings.ContainsAny(v, "%+") {
			if v, err = url.QueryUnescape(v); err != nil {
				return "", "", "", fmt.Errorf("query parameter %s: %v: %w", k, err, derrors.InvalidArgument)
			}
		}
		*dst = v
	}
	return ref, registry, namespace, nil
}

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it (with HTML-safe escaping), quickly for plain ASCII.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
