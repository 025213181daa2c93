package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
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
	// answer is 503 with Retry-After.
	MaxChangesWaiters = 256
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
// visible everywhere, and, with a bearer token, the namespaced registries
// whose Registry objects its holder may get, in every namespace (a
// controller follows all of its namespaces at once; the keys
// NAMESPACE/NAME say whose each is). The namespace parameter narrows it to
// one namespace.
func (s *Server) changesScope(r *http.Request) func(*index.Registry) bool {
	token := bearerToken(r.Header.Get("Authorization"))
	ns := r.URL.Query().Get(NamespaceParam)
	if ns != "" && !validNamespace(ns) {
		token = "" // a namespace no object can be in: what anyone sees
	}
	ctx := r.Context()
	caller := NewCaller(token)
	return func(g *index.Registry) bool {
		switch {
		case g.Namespace == "":
			return true
		case s.authz == nil || token == "" || ns != "" && g.Namespace != ns:
			return false
		}
		return s.authz.AllowedRegistry(ctx, caller, g.Namespace, g.Object)
	}
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
	see := s.changesScope(r)
	st := s.indexState(see)
	if since == "" || st.Token != since || wait == 0 {
		writeJSON(w, http.StatusOK, st)
		return
	}
	select {
	case s.changeWaiters <- struct{}{}:
		defer func() { <-s.changeWaiters }()
	default:
		w.Header().Set("Retry-After", "5")
		s.writeError(w, r, fmt.Errorf("%d requests already wait for index changes: %w", MaxChangesWaiters, derrors.Unavailable))
		return
	}
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
