package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/api"
)

// GET /v1/index/changes answers at once with the registries' state, and,
// given that state's token, waits until the index moves on.
func TestIndexChanges(t *testing.T) {
	e := newEnv(t, "", true)
	c, err := api.NewClient(e.http.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.IndexChanges(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if first.Token == "" || first.Registries[prefix] == "" {
		t.Fatalf("first state %+v; want a token and %s's version", first, prefix)
	}
	for _, tt := range []struct {
		name, query string
		status      int
	}{
		{"no wait", "?since=" + first.Token + "&wait=0", 200},
		{"other token", "?since=stale&wait=60", 200},
		{"bad wait", "?since=" + first.Token + "&wait=soon", 400},
		{"negative wait", "?wait=-1", 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do(t, "GET", "/v1/index/changes"+tt.query, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
		})
	}

	// A waiting request answers when a new version is indexed.
	got := make(chan *api.IndexChanges, 1)
	go func() {
		ch, err := c.IndexChanges(ctx, first.Token, 25*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- ch
	}()
	writeTree(t, e.dir, map[string]string{"redis/v1.2.8/redis.jinja": "new\n", "redis/v1.2.8/example.yaml": "x: 1\n"})
	if err := e.reg.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	next := <-got
	if next == nil || next.Token == first.Token || next.Registries[prefix] == first.Registries[prefix] {
		t.Fatalf("after a new version: %+v; want a new token and version (before %+v)", next, first)
	}

	// Waiters are bounded: past MaxChangesWaiters the answer is 503.
	for i := range MaxChangesWaiters {
		if _, full := e.srv.longPolls.acquire(fmt.Sprintf("10.0.%d.%d", i/256, i%256), true); full != "" {
			t.Fatalf("waiter %d: %s", i, full)
		}
	}
	resp, body := e.do(t, "GET", "/v1/index/changes?wait=5&since="+next.Token, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with every waiter taken: %d %s; want 503 with Retry-After", resp.StatusCode, body)
	}
}

// TestLongPollSlots: one client address holds at most MaxChangesPerClient
// waiting requests; callers without an authenticated token together at
// most MaxChangesWaiters-ChangesReserved, so that an authenticated one
// (dm-controller) always finds a slot while they hold theirs; released
// slots are given back.
func TestLongPollSlots(t *testing.T) {
	var p longPolls
	var releases []func()
	take := func(client string, authenticated bool) string {
		release, full := p.acquire(client, authenticated)
		if full == "" {
			releases = append(releases, release)
		}
		return full
	}
	for i := range MaxChangesPerClient {
		if full := take("192.0.2.1", false); full != "" {
			t.Fatalf("request %d of one client: %s", i, full)
		}
	}
	if full := take("192.0.2.1", false); !strings.Contains(full, "from this client address") {
		t.Errorf("one request more from that client: %q, want refused", full)
	}
	if full := take("192.0.2.1", true); !strings.Contains(full, "from this client address") {
		t.Errorf("an authenticated one from that client: %q, want refused (the bound is the address's)", full)
	}
	// Anonymous clients from many addresses fill their share.
	for i := 0; p.anonymous < MaxChangesWaiters-ChangesReserved; i++ {
		if full := take(fmt.Sprintf("198.51.%d.%d", i/256, i%256), false); full != "" {
			t.Fatalf("anonymous request %d: %s", i, full)
		}
	}
	if full := take("203.0.113.9", false); !strings.Contains(full, "kept for authenticated callers") {
		t.Errorf("one anonymous request more: %q, want refused", full)
	}
	if full := take("203.0.113.10", true); full != "" {
		t.Errorf("dm-controller's request with every anonymous slot taken: %s", full)
	}
	for _, r := range releases {
		r()
	}
	if p.waiting != 0 || p.anonymous != 0 || len(p.byClient) != 0 {
		t.Errorf("after every release: %d waiting, %d anonymous, clients %v", p.waiting, p.anonymous, p.byClient)
	}
}
