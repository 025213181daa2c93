package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
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

// Bounds of the throttling: an attacker with many addresses costs a table
// of at most maxAuthClients entries, and at most maxAuthWaiters requests
// (one per client) wait, each at most maxAuthWait; the others are answered
// 429 at once.
const (
	maxAuthClients = 4096
	maxAuthWaiters = 16
	maxAuthWait    = 2 * time.Second
)

// authResult is what a request's admin token turned out to be.
type authResult int

const (
	authNone      authResult = iota // no Authorization header, or no admin token configured
	authOK                          // the admin token
	authFailed                      // a wrong token or scheme
	authThrottled                   // not checked: the client failed too recently
)

// adminGate checks admin tokens. A wrong one is logged (never the token),
// counted, and makes its client wait delay before its next token is
// checked: a request within it waits for its turn, within the bounds
// above, or is answered 429, so that guessing is slow while no attacker
// can make registryd hold goroutines or memory without limit. A client
// that has not failed is never held: an admin's concurrent calls go
// through at once. One that has failed since its last success has its
// checks made one at a time, so that a burst of guesses gets one answer
// per delay.
type adminGate struct {
	hash     [sha256.Size]byte
	has      bool
	delay    time.Duration
	log      *slog.Logger
	failures prometheus.Counter

	mu      sync.Mutex // makes the look-up and the hold of a client one step
	until   *lru.Cache[string, time.Time]
	waiting map[string]bool // clients with a request waiting for its turn
}

func newAdminGate(token string, delay time.Duration, log *slog.Logger, failures prometheus.Counter) *adminGate {
	if delay <= 0 {
		delay = DefaultAdminFailureDelay
	}
	until, _ := lru.New[string, time.Time](maxAuthClients)
	g := &adminGate{has: token != "", delay: delay, log: log, failures: failures, until: until, waiting: map[string]bool{}}
	if g.has {
		// Comparing hashes makes the comparison constant-time whatever the
		// lengths, and keeps no copy of the token itself.
		g.hash = sha256.Sum256([]byte(token))
	}
	return g
}

// check classifies the Authorization header of r, from client; for
// authThrottled it also returns how long the client must still wait.
func (g *adminGate) check(r *http.Request, client string) (authResult, time.Duration) {
	header := r.Header.Get("Authorization")
	if !g.has || header == "" {
		return authNone, 0
	}
	for turn := 0; ; turn++ {
		g.mu.Lock()
		now := time.Now()
		t, failed := g.until.Peek(client)
		if !failed {
			g.mu.Unlock()
			break
		}
		if !now.Before(t) {
			// Held while the token is compared, so that concurrent
			// guesses from a failing client get one answer between them.
			g.until.Add(client, now.Add(g.delay))
			g.mu.Unlock()
			break
		}
		wait := t.Sub(now)
		if turn > 0 || wait > maxAuthWait || g.waiting[client] || len(g.waiting) >= maxAuthWaiters {
			g.mu.Unlock()
			return authThrottled, wait
		}
		g.waiting[client] = true
		g.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
		}
		g.mu.Lock()
		delete(g.waiting, client)
		g.mu.Unlock()
		if r.Context().Err() != nil {
			return authThrottled, wait
		}
	}
	scheme, tok, ok := strings.Cut(header, " ")
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(got[:], g.hash[:]) == 1 {
		g.until.Remove(client)
		return authOK, 0
	}
	g.mu.Lock()
	g.until.Add(client, time.Now().Add(g.delay))
	g.mu.Unlock()
	g.failures.Inc()
	g.log.Warn("wrong admin token", "client", client, "method", r.Method, "path", r.URL.Path, "next_check_in", g.delay)
	return authFailed, 0
}
