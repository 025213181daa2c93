package server

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"

	"github.com/dmhq/dm/internal/catalog"
	"github.com/dmhq/dm/internal/derrors"
)

// DefaultBodyBudget is Options.BodyBudget's default: the request body
// bytes the body-reading handlers (POST /v1/expand, /processedTemplates,
// the catalog's previews) hold at once. Decoded and passed to a
// worker, a body costs registryd about three times its size, so 32 MiB
// keeps the bodies in flight near 100 MB whatever the number of clients.
const DefaultBodyBudget = 32 << 20

// Bodies up to smallBody may use the last smallReserve bytes of the
// budget, which large ones may not: a flood of large bodies leaves room
// for the usual small requests.
const (
	smallBody    = 1 << 20
	smallReserve = 4 << 20
)

// byteBudget counts the request body bytes held across requests.
type byteBudget struct {
	mu          sync.Mutex
	used, total int64
}

func newByteBudget(total int64) *byteBudget {
	if total <= 0 {
		total = DefaultBodyBudget
	}
	return &byteBudget{total: max(total, 2*smallReserve)}
}

// acquire takes n bytes of the budget; it reports false when they are not
// there.
func (b *byteBudget) acquire(n int64) bool {
	limit := b.total
	if n > smallBody {
		limit -= smallReserve
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > limit {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// errBudget is the error of a body that did not fit in the budget.
var errBudget = fmt.Errorf("registryd holds as many request bodies as it may; try again shortly: %w", derrors.Unavailable)

// readBudgeted reads r's body of at most max bytes within s's budget: the
// bytes are reserved first (the Content-Length, or max when the length is
// unknown), so that a body that would not fit is never read. release gives
// them back; call it when done with the body and what was decoded from it.
// A body over max fails with *http.MaxBytesError before it is read when
// its length is announced.
func (s *Server) readBudgeted(w http.ResponseWriter, r *http.Request, max int64) (body []byte, release func(), err error) {
	if r.ContentLength > max {
		return nil, nil, &http.MaxBytesError{Limit: max}
	}
	want := max
	if r.ContentLength >= 0 {
		want = r.ContentLength
	}
	if !s.bodies.acquire(want) {
		s.metrics.shed.WithLabelValues("body_budget").Inc()
		return nil, nil, errBudget
	}
	release = func() { s.bodies.release(want) }
	var buf bytes.Buffer
	buf.Grow(int(min(want, max)) + bytes.MinRead)
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max)); err != nil {
		release()
		return nil, nil, err
	}
	if len(bytes.TrimSpace(buf.Bytes())) == 0 {
		release()
		return nil, nil, fmt.Errorf("request body is empty: %w", derrors.InvalidArgument)
	}
	if n := int64(buf.Len()); n < want {
		// A body of unknown length holds only what it turned out to be.
		s.bodies.release(want - n)
		want = n
	}
	return buf.Bytes(), release, nil
}

// budgetForms makes the catalog's form POSTs (previews, at most
// catalog.MaxForm bytes) hold their bytes in the body budget while they
// are served, as POST /v1/expand does.
func (s *Server) budgetForms(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		want := int64(catalog.MaxForm)
		if r.ContentLength >= 0 && r.ContentLength < want {
			want = r.ContentLength
		}
		if !s.bodies.acquire(want) {
			s.metrics.shed.WithLabelValues("body_budget").Inc()
			w.Header().Set("Retry-After", "1")
			s.writeError(w, r, errBudget)
			return
		}
		defer s.bodies.release(want)
		next.ServeHTTP(w, r)
	})
}
