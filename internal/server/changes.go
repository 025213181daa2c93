package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Bounds of GET /v1/index/changes, a long poll: a client (dm-controller)
// names the state it has seen and the answer comes when the index moves
// on, or after wait with the same state.
const (
	// DefaultChangesWait and MaxChangesWait bound how long one request
	// waits; both are under the server's WriteTimeout.
	DefaultChangesWait = 30 * time.Second
	MaxChangesWait     = 60 * time.Second
	// MaxChangesWaiters bounds the requests waiting at once; past it the
	// answer is 503 with Retry-After. ChangesReserved of them wait only
	// for callers whose bearer token the apiserver authenticated
	// (dm-controller's), so that anonymous clients cannot hold them all,
	// and MaxChangesPerClient bounds one client address's, whoever it is.
	MaxChangesWaiters   = 256
	ChangesReserved     = 64
	MaxChangesPerClient = 8
	// changesPoll is how often a waiting request looks at the in-memory
	// snapshots: a pointer load per registry.
	changesPoll = 200 * time.Millisecond
)

// indexState is the indexed versions of the registries see admits, by
// key (index.Registry.Key), and their token.
func (s *Server) indexState(see func(*index.Registry) bool) api.IndexChanges {
	regs := s.resolver.Registries()
	out := api.IndexChanges{Registries: make(map[string]string, len(regs))}
	names := make([]string, 0, len(regs))
	for _, g := range regs {
		if !see(g) {
			continue
		}
		v := ""
		if snap := g.Snapshot(); snap != nil && snap.Tree != nil {
			v = snap.Tree.Version
		}
		out.Registries[g.Key()] = v
		names = append(names, g.Key())
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", n, out.Registries[n])
	}
	out.Token = hex.EncodeToString(h.Sum(nil))[:24]
	return out
}

// changesScope returns which registries a changes request sees: those
// visible everywhere, and, with a bearer token the apiserver knows, the
// namespaced registries whose Registry objects its holder may get, in
// every namespace (a controller follows all of its namespaces at once;
// the keys NAMESPACE/NAME say whose each is). The namespace parameter
// narrows it to one namespace. authenticated reports that the token was
// authenticated; the error is a *ThrottledError.
func (s *Server) changesScope(r *http.Request) (see func(*index.Registry) bool, authenticated bool, err error) {
	token := bearerToken(r.Header.Get("Authorization"))
	ns := r.URL.Query().Get(NamespaceParam)
	if ns != "" && !validNamespace(ns) {
		token = "" // a namespace no object can be in: what anyone sees
	}
	ctx := r.Context()
	caller := s.callerOf(r, token)
	switch {
	case s.authz == nil || token == "":
	case ns != "":
		// The scope middleware authenticated the token of a request that
		// names a namespace (and answered 429 if throttled): it set a
		// scope if and only if the apiserver knows the token.
		if authenticated = resolve.ScopeFrom(ctx) != nil; !authenticated {
			token = ""
		}
	default:
		if err := s.authz.Authenticate(ctx, caller); err != nil {
			var te *ThrottledError
			if errors.As(err, &te) {
				return nil, false, err
			}
			token = "" // as anonymous
		} else {
			authenticated = true
		}
	}
	return func(g *index.Registry) bool {
		switch {
		case g.Namespace == "":
			return true
		case s.authz == nil || token == "" || ns != "" && g.Namespace != ns:
			return false
		}
		return s.authz.AllowedRegistry(ctx, caller, g.Namespace, g.Object)
	}, authenticated, nil
}

// longPolls counts the requests waiting in GET /v1/index/changes.
type longPolls struct {
	mu sync.Mutex
	// waiting is every waiting request; anonymous those of callers not
	// authenticated; byClient each client address's.
	waiting, anonymous int
	byClient           map[string]int
}

// acquire takes a waiting slot for a request of client, or says which
// bound is reached; release gives the slot back.
func (p *longPolls) acquire(client string, authenticated bool) (release func(), full string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.waiting >= MaxChangesWaiters:
		return nil, fmt.Sprintf("%d requests already wait for index changes", MaxChangesWaiters)
	case !authenticated && p.anonymous >= MaxChangesWaiters-ChangesReserved:
		return nil, fmt.Sprintf("%d requests without an authenticated token already wait for index changes (%d more are kept for authenticated callers)", p.anonymous, ChangesReserved)
	case p.byClient[client] >= MaxChangesPerClient:
		return nil, fmt.Sprintf("%d requests from this client address already wait for index changes", MaxChangesPerClient)
	}
	if p.byClient == nil {
		p.byClient = map[string]int{}
	}
	p.waiting++
	p.byClient[client]++
	if !authenticated {
		p.anonymous++
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.waiting--
		if p.byClient[client]--; p.byClient[client] == 0 {
			delete(p.byClient, client)
		}
		if !authenticated {
			p.anonymous--
		}
	}, ""
}

// handleChanges answers GET /v1/index/changes?since=TOKEN&wait=SECONDS:
// at once when the state differs from since (or since is empty), else when
// it changes or wait ends, whichever comes first.
func (s *Server) handleChanges(w http.ResponseWriter, r *http.Request) {
	since := r.URL.Query().Get("since")
	wait := DefaultChangesWait
	if v := r.URL.Query().Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.writeError(w, r, fmt.Errorf("wait=%q: want a number of seconds: %w", v, derrors.InvalidArgument))
			return
		}
		wait = min(time.Duration(n)*time.Second, MaxChangesWait)
	}
	see, authenticated, err := s.changesScope(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st := s.indexState(see)
	if since == "" || st.Token != since || wait == 0 {
		writeJSON(w, http.StatusOK, st)
		return
	}
	release, full := s.longPolls.acquire(s.clientAddr(r), authenticated)
	if full != "" {
		s.metrics.shed.WithLabelValues("long_poll").Inc()
		w.Header().Set("Retry-After", "5")
		s.writeError(w, r, fmt.Errorf("%s: %w", full, derrors.Unavailable))
		return
	}
	defer release()
	t := time.NewTicker(changesPoll)
	defer t.Stop()
	end := time.NewTimer(wait)
	defer end.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-end.C:
			writeJSON(w, http.StatusOK, st)
			return
		case <-t.C:
			if st = s.indexState(see); st.Token != since {
				writeJSON(w, http.StatusOK, st)
				return
			}
		}
	}
}
