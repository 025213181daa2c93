//go:build !race

// The race detector's allocator reserves terabytes of address space, so a
// race-detector build runs workers without a memory limit: these tests are
// left out of it, and make test runs them in a build without -race.

package sandbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
)

// TestMemoryLimit: a template that allocates past the worker's limit gets
// an error naming MaxMemory and the template; the pool goes on.
func TestMemoryLimit(t *testing.T) {
	ctx := t.Context()
	var exits []string
	p := newPool(t, Options{Workers: 1, MaxMemory: 128 << 20, OnExit: func(why string) { exits = append(exits, why) }})
	bomb := hostile("bomb.py", "def GenerateConfig(ctx):\n  l = ['x' * 4000000]\n  for i in range(60):\n    l = l + [l[0] + str(i)]\n  return str(l)\n")
	_, err := p.Expand(ctx, bomb)
	if !errors.Is(err, derrors.LimitExceeded) || !strings.Contains(err.Error(), "Options.MaxMemory") || !strings.Contains(err.Error(), "bomb.py") {
		t.Fatalf("got %v, want a MaxMemory limit error naming bomb.py", err)
	}
	if !reflect.DeepEqual(exits, []string{ExitMemory}) {
		t.Errorf("worker exits %q, want [%s]", exits, ExitMemory)
	}
	if _, err := p.Expand(ctx, &api.ExpandRequest{Config: composite}); err != nil {
		t.Fatalf("after the bomb: %v", err)
	}
}

// TestMemoryGrownWorkerReplaced: a worker whose memory grew past a third of its
// limit is replaced after its job, which succeeded: the runtime keeps its
// address space, and the next job would start near the limit.
func TestMemoryGrownWorkerReplaced(t *testing.T) {
	var exits []string
	p := newPool(t, Options{Workers: 1, MaxMemory: 512 << 20, OnExit: func(why string) { exits = append(exits, why) }})
	big := hostile("big.py", "def GenerateConfig(ctx):\n  l = ['x' * 1000000 for i in range(200)]\n  return {'resources': [{'name': 'n', 'type': 'ConfigMap', 'properties': {'data': {'n': len(l)}}}]}\n")
	if _, err := p.Expand(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(exits, []string{ExitRecycled}) {
		t.Errorf("worker exits %q, want [%s]", exits, ExitRecycled)
	}
	for range 3 {
		if _, err := p.Expand(t.Context(), &api.ExpandRequest{Config: composite}); err != nil {
			t.Fatal(err)
		}
	}
	if len(exits) != 1 {
		t.Errorf("worker exits %q after small jobs, want one", exits)
	}
}
