package kubereg

import (
	"context"
	"sync"
)

// listingGate bounds the listings in flight: at most total for the whole
// daemon and perNS for one namespace. A listing is held in memory whole
// until it is indexed (up to --max-tree-entries entries, some 50 MiB for
// the largest), and its index bytes are known, and admitted against the
// namespace and daemon bounds, only once it is read: without the gate,
// every Registry created at once would be listed at once, whatever those
// bounds say. The namespace's lane is taken before the daemon's, so that
// one namespace's many Registries queue among themselves and take at
// most perNS of the daemon's slots: another namespace's first listing
// waits for a slot, never behind all of them.
type listingGate struct {
	total chan struct{}
	perNS int

	mu sync.Mutex
	ns map[string]*nsLane // lanes in use only: removed when no one holds or waits for one
}

type nsLane struct {
	slots chan struct{}
	users int
}

// newListingGate returns a gate of total slots, perNS of them at most for
// one namespace; zero or less means no bound for either.
func newListingGate(total, perNS int) *listingGate {
	g := &listingGate{perNS: perNS, ns: map[string]*nsLane{}}
	if total > 0 {
		g.total = make(chan struct{}, total)
	}
	return g
}

// acquire waits for a slot for a listing of namespace ns ("" for a
// ClusterRegistry, whose lane is its own) and returns its release, or
// ctx's error when ctx ends first (nothing is then held).
func (g *listingGate) acquire(ctx context.Context, ns string) (release func(), err error) {
	var lane *nsLane
	if g.perNS > 0 {
		g.mu.Lock()
		lane = g.ns[ns]
		if lane == nil {
			lane = &nsLane{slots: make(chan struct{}, g.perNS)}
			g.ns[ns] = lane
		}
		lane.users++
		g.mu.Unlock()
		select {
		case lane.slots <- struct{}{}:
		case <-ctx.Done():
			g.leave(ns, lane, false)
			return nil, ctx.Err()
		}
	}
	if g.total != nil {
		select {
		case g.total <- struct{}{}:
		case <-ctx.Done():
			g.leave(ns, lane, true)
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if g.total != nil {
				<-g.total
			}
			g.leave(ns, lane, true)
		})
	}, nil
}

// leave gives back ns's lane slot (if held) and drops the lane when no
// one else uses it, so that the map holds only namespaces listing now.
func (g *listingGate) leave(ns string, lane *nsLane, held bool) {
	if lane == nil {
		return
	}
	if held {
		<-lane.slots
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if lane.users--; lane.users == 0 {
		delete(g.ns, ns)
	}
}

// inUse reports the slots held for the daemon and the namespaces with a
// lane, for tests.
func (g *listingGate) inUse() (total, namespaces int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total != nil {
		total = len(g.total)
	}
	return total, len(g.ns)
}
