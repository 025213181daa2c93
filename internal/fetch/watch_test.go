package fetch

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestWatchDir(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "redis", "v1"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int32
	changed := make(chan struct{}, 16)
	done := make(chan error, 1)
	watching := make(chan struct{})
	go func() {
		done <- WatchDir(ctx, dir, 300*time.Millisecond, func() { close(watching) }, func() { calls.Add(1); changed <- struct{}{} })
	}()
	<-watching // changes from now on are reported
	wait := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no change reported", what)
		}
	}
	// A burst of writes is one change.
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, "redis", "v1", "redis.jinja"), []byte{byte('a' + i)}, 0o644)
	}
	wait("a burst of writes")
	time.Sleep(600 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Errorf("a burst of writes made %d calls, want 1", n)
	}
	// A new directory is watched too.
	os.MkdirAll(filepath.Join(dir, "web", "v2"), 0o755)
	wait("a new directory")
	time.Sleep(100 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "web", "v2", "web.py"), []byte("x"), 0o644)
	wait("a file in a new directory")
	// Hidden directories are not part of the registry.
	before := calls.Load()
	os.WriteFile(filepath.Join(dir, ".git", "index"), []byte("x"), 0o644)
	time.Sleep(600 * time.Millisecond)
	if calls.Load() != before {
		t.Error("a change under .git was reported")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("WatchDir: %v", err)
	}
	if err := WatchDir(context.Background(), filepath.Join(dir, "nope"), time.Millisecond, func() { t.Error("ready called for a missing directory") }, func() {}); err == nil {
		t.Error("watching a missing directory did not fail")
	}
}
