package kubereg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// TestListingGate: at most total listings hold a slot, at most perNS of
// one namespace; a namespace's waiters do not take the daemon's slots
// from another namespace; a waiter whose context ends holds nothing; no
// lane outlives its last user.
func TestListingGate(t *testing.T) {
	tests := []struct {
		name         string
		total, perNS int
		namespaces   []string // one listing each, all at once
		wantMax      int      // most held at once
		wantMaxPerNS int
	}{
		{"daemon bound", 2, 2, []string{"a", "b", "c", "d", "e", "f"}, 2, 1},
		{"namespace bound", 4, 1, []string{"a", "a", "a", "a", "b"}, 2, 1},
		{"both", 3, 2, []string{"a", "a", "a", "b", "b", "b", "c"}, 3, 2},
		{"cluster lane", 2, 1, []string{"", "", "", "a"}, 2, 1},
		{"unbounded", 0, 0, []string{"a", "a", "a"}, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newListingGate(tt.total, tt.perNS)
			var mu sync.Mutex
			held, maxHeld := 0, 0
			perNS, maxPerNS := map[string]int{}, 0
			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, ns := range tt.namespaces {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					release, err := g.acquire(context.Background(), ns)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					held++
					perNS[ns]++
					maxHeld, maxPerNS = max(maxHeld, held), max(maxPerNS, perNS[ns])
					mu.Unlock()
					time.Sleep(20 * time.Millisecond) // a listing being read
					mu.Lock()
					held--
					perNS[ns]--
					mu.Unlock()
					release()
					release() // twice gives back nothing more
				}()
			}
			close(start)
			wg.Wait()
			if maxHeld > tt.wantMax || maxPerNS > tt.wantMaxPerNS {
				t.Errorf("held at most %d at once, %d of one namespace; want at most %d and %d", maxHeld, maxPerNS, tt.wantMax, tt.wantMaxPerNS)
			}
			if total, lanes := g.inUse(); total != 0 || lanes != 0 {
				t.Errorf("after every release: %d slots held, %d lanes kept", total, lanes)
			}
		})
	}

	t.Run("a cancelled waiter", func(t *testing.T) {
		g := newListingGate(1, 1)
		release, err := g.acquire(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"a", "b"} { // waiting on its lane, then on the daemon's
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			if _, err := g.acquire(ctx, ns); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("namespace %s: %v, want the context's error", ns, err)
			}
			cancel()
		}
		release()
		if total, lanes := g.inUse(); total != 0 || lanes != 0 {
			t.Errorf("%d slots held, %d lanes kept", total, lanes)
		}
		// Nothing was left held by the waiters: both namespaces list again.
		for _, ns := range []string{"a", "b"} {
			r, err := g.acquire(context.Background(), ns)
			if err != nil {
				t.Fatal(err)
			}
			r()
		}
	})

	t.Run("another namespace is not queued behind one", func(t *testing.T) {
		g := newListingGate(2, 1)
		// Namespace a has many listings waiting; b's first gets the
		// second slot as soon as it asks, not after all of a's.
		var running atomic.Int32
		hold := make(chan struct{})
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := g.acquire(context.Background(), "a")
				if err != nil {
					t.Error(err)
					return
				}
				running.Add(1)
				<-hold
				r()
			}()
		}
		for running.Load() != 1 {
			time.Sleep(time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := g.acquire(ctx, "b")
		if err != nil {
			t.Fatalf("b's listing waited behind a's: %v", err)
		}
		r()
		close(hold)
		wg.Wait()
	})
}

// TestListingsBounded: Registries of several namespaces created at once
// are listed at most --max-listings at a time (counted at the GitHub
// server), and every one is indexed in the end; without the bound they
// are listed all at once, which is what the bound is for.
func TestListingsBounded(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opts    Options
		atMost  int
		atLeast int
	}{
		{"bounded", Options{MaxListings: 2, MaxNamespaceListings: 1}, 2, 1},
		{"unbounded", Options{}, 9, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newQuotaEnv(t, tt.opts)
			e.gh.SetFaults(githubtest.Faults{Latency: 100 * time.Millisecond})
			want := map[string]string{}
			for i, ns := range []string{"a", "a", "a", "b", "b", "b", "c", "c", "c"} {
				name := fmt.Sprintf("r%d", i)
				e.add(ns, name, "small", i)
				want["Registry/"+ns+"/"+name] = "Indexed"
			}
			e.settle(want)
			if n := e.gh.MaxInFlight("tree"); n > tt.atMost || n < tt.atLeast {
				t.Errorf("%d listings read at once, want %d to %d", n, tt.atLeast, tt.atMost)
			}
			if total, lanes := e.w.listings.inUse(); total != 0 || lanes != 0 {
				t.Errorf("after indexing: %d slots held, %d lanes kept", total, lanes)
			}
		})
	}
}
