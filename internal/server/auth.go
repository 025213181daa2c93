package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultAdminFailureDelay is how long a client that sent a wrong admin
// token waits before its next token is checked.
const DefaultAdminFailureDelay = time.Second

// maxAuthClients bounds the clients whose last failure is remembered:
// an attacker with many addresses costs a bounded table, not memory
// without limit, and no request ever sleeps.
const maxAuthClients = 4096

// authResult is what a request's admin token turned out to be.
type authResult int

const (
	authNone      authResult = iota // no Authorization header, or no admin token configured
	authOK                          // the admin token
	authFailed                      // a wrong token or scheme
	authThrottled                   // not checked: the client failed too recently
)

// adminGate checks admin tokens. A wrong one is logged (never the token),
// counted, and makes its client wait Delay before its next token is
// checked: attempts within it answer 429 at once, so that guessing is slow
// without a goroutine or a timer held per attempt.
type adminGate struct {
	hash     [sha256.Size]byte
	has      bool
	delay    time.Duration
	log      *slog.Logger
	failures prometheus.Counter

	mu    sync.Mutex // makes the look-up and the hold of a client one step
	until *lru.Cache[string, time.Time]
}

func newAdminGate(token string, delay time.Duration, log *slog.Logger, failures prometheus.Counter) *adminGate {
	if delay <= 0 {
		delay = DefaultAdminFailureDelay
	}
	until, _ := lru.New[string, time.Time](maxAuthClients)
	g := &adminGate{has: token != "", delay: delay, log: log, failures: failures, until: until}
	if g.has {
		// Comparing hashes makes the comparison constant-time whatever the
		// lengths, and keeps no copy of the token itself.
		g.hash = sha256.Sum256([]byte(token))
	}
	return g
}

// clientOf names the client of r for throttling: its IP address.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// check classifies r's Authorization header; for authThrottled it also
// returns how long the client must still wait.
func (g *adminGate) check(r *http.Request) (authResult, time.Duration) {
	header := r.Header.Get("Authorization")
	if !g.has || header == "" {
		return authNone, 0
	}
	client := clientOf(r)
	now := time.Now()
	g.mu.Lock()
	if t, ok := g.until.Peek(client); ok && now.Before(t) {
		g.mu.Unlock()
		return authThrottled, t.Sub(now)
	}
	// Held while the token is compared, so that concurrent guesses from
	// one client get one answer between them.
	g.until.Add(client, now.Add(g.delay))
	g.mu.Unlock()
	scheme, tok, ok := strings.Cut(header, " ")
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(got[:], g.hash[:]) == 1 {
		g.until.Remove(client)
		return authOK, 0
	}
	g.failures.Inc()
	g.log.Warn("wrong admin token", "client", client, "method", r.Method, "path", r.URL.Path, "next_check_in", g.delay)
	return authFailed, 0
}
