package sandbox

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
)

type ownEngine struct{}

func (ownEngine) Name() string { return "helm" }
func (ownEngine) Render(context.Context, engine.Invocation) (engine.Output, error) {
	return engine.Output{}, nil
}

// TestWorkerOwnEnginesNotForwarded: a worker whose program attaches an
// engine itself (registryd links Helm's) renders with it, and forwards to
// the parent only the attached languages it lacks; before, a parent that
// attached helm too made the worker panic ("two engines for language").
func TestWorkerOwnEnginesNotForwarded(t *testing.T) {
	tests := []struct {
		name string
		own  []engine.Engine
	}{
		{"own engine and the parent's", []engine.Engine{ownEngine{}}},
		{"the parent's only", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := workerConfig{Expand: expand.Options{Engines: tt.own}, Forward: []string{"helm"}}
			w := newWorker(cfg, strings.NewReader(""), io.Discard, nil, slog.New(slog.DiscardHandler))
			if w.x == nil {
				t.Fatal("no expander")
			}
		})
	}
}
