package kubereg

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// releaser returns the memory of stopped registries to the system. The Go
// runtime gives freed memory back slowly, and only what a collection found
// free: an idle registryd collects rarely, so a tenant's deleted registries
// would stay in its resident set for minutes. After a large delete it
// collects and returns at once (debug.FreeOSMemory), once the references
// the registry's last refresh and its tests held have gone, at most once
// per period: a collection of a large heap costs CPU.
type releaser struct {
	after time.Duration
	min   int64
	log   *slog.Logger
	free  func()

	mu      sync.Mutex
	pending int64 // index bytes freed since the last release
	timer   *time.Timer
	// again is set while timer is a release's follow-up.
	again bool
	last  time.Time
	// released counts the releases, for tests.
	released int
}

// followUp is how many periods after a release it is done again.
const followUp = 6

func newReleaser(after time.Duration, minBytes int64, log *slog.Logger) *releaser {
	if after <= 0 {
		after = 10 * time.Second
	}
	if minBytes <= 0 {
		minBytes = 64 << 20
	}
	return &releaser{after: after, min: minBytes, log: log, free: debug.FreeOSMemory}
}

// freed notes that registries holding n index bytes are no longer served.
func (r *releaser) freed(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending += n
	if r.pending < r.min || r.timer != nil && !r.again {
		return
	}
	if r.timer != nil {
		r.timer.Stop() // a follow-up: this release comes sooner
	}
	r.again = false
	wait := r.after
	if next := time.Until(r.last.Add(r.after)); next > wait {
		wait = next
	}
	r.timer = time.AfterFunc(wait, r.release)
}

func (r *releaser) release() {
	r.mu.Lock()
	n := r.pending
	r.pending, r.timer, r.last = 0, nil, time.Now()
	r.released++
	r.again = n > 0
	if r.again {
		// Once more later: what the registries' example results left
		// goes with their ConfigMaps, which the Lease holder deletes and
		// every replica's informer then drops, some seconds on.
		r.timer = time.AfterFunc(followUp*r.after, r.release)
	}
	r.mu.Unlock()
	start := time.Now()
	r.free()
	if n > 0 {
		r.log.Info("returned the memory of registries no longer served to the system", "index_bytes", n, "duration", time.Since(start))
	}
}
