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

// indexState is the registries' indexed versions and their token.
func (s *Server) indexState() api.IndexChanges {
	regs := s.resolver.Registries()
	out := api.IndexChanges{Registries: make(map[string]string, len(regs))}
	names := make([]string, 0, len(regs))
	for _, g := range regs {
		v := ""
		if snap := g.Snapshot(); snap != nil && snap.Tree != nil {
			v = snap.Tree.Version
		}
		out.Registries[g.Name] = v
		names = append(names, g.Name)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", n, out.Registries[n])
	}
	out.Token = hex.EncodeToString(h.Sum(nil))[:24]
	return out
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
	st := s.indexState()
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
			if st = s.indexState(); st.Token != since {
				writeJSON(w, http.StatusOK, st)
				return
			}
		}
	}
}
