package server

import (
	"context"
	"net/http"
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
	for range cap(e.srv.changeWaiters) {
		e.srv.changeWaiters <- struct{}{}
	}
	resp, body := e.do(t, "GET", "/v1/index/changes?wait=5&since="+next.Token, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with every waiter taken: %d %s; want 503 with Retry-After", resp.StatusCode, body)
	}
}
