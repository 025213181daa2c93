package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/value"
)

// A worker cannot start programs (seccomp refuses it), so the engines a
// parent attached (Options.Expand.Engines: Helm charts, which dm renders
// in dm-helm) stay in the parent: the worker has a forwarding engine of
// each name, which sends the invocation to the parent as a "render" call,
// and the parent renders it with its own engine.

// renderCall is an invocation of an attached language, forwarded.
type renderCall struct {
	Lang       string            `json:"lang"`
	File       string            `json:"file"`
	Files      map[string][]byte `json:"files"`
	FilesKey   string            `json:"files_key,omitempty"`
	Properties map[string]any    `json:"properties,omitempty"`
	Env        map[string]any    `json:"env,omitempty"`
	Label      string            `json:"label,omitempty"`
}

// forwarded is the worker's engine for an attached language of the
// parent.
type forwarded struct {
	w    *worker
	name string
}

func (f *forwarded) Name() string { return f.name }

// Render asks the parent to render inv.
func (f *forwarded) Render(ctx context.Context, inv engine.Invocation) (engine.Output, error) {
	rep, err := (*remoteResolver)(f.w).call(call{Op: "render", Render: &renderCall{
		Lang: f.name, File: inv.File, Files: inv.Files, FilesKey: inv.FilesKey,
		Properties: inv.Properties, Env: inv.Env, Label: inv.Label,
	}})
	if err != nil {
		var e *expand.Error
		if errors.As(err, &e) && e.File != "" {
			// The engine's location, as the engine would have given it.
			return engine.Output{}, engine.At(e.File, e.Line, e.Err)
		}
		return engine.Output{}, err
	}
	if rep.Output == nil {
		return engine.Output{}, engine.At(inv.File, 0, fmt.Errorf("the %s engine answered nothing", f.name))
	}
	out := *rep.Output
	for i := range out.Resources {
		out.Resources[i].Properties, _ = value.Numbers(out.Resources[i].Properties).(map[string]any)
	}
	return out, nil
}

// render answers a worker's render call with the parent's engine.
func (p *Pool) render(ctx context.Context, c *renderCall) *reply {
	for _, e := range p.opts.Expand.Engines {
		if e.Name() != c.Lang {
			continue
		}
		props, _ := value.Numbers(c.Properties).(map[string]any)
		env, _ := value.Numbers(c.Env).(map[string]any)
		out, err := e.Render(ctx, engine.Invocation{
			File: c.File, Source: c.Files[c.File], Files: c.Files, FilesKey: c.FilesKey,
			Properties: props, Env: env, Label: c.Label,
		})
		if err != nil {
			var l *engine.Located
			if errors.As(err, &l) {
				w := toWire(l.Err)
				w.File, w.Line = l.File, l.Line
				return &reply{Err: w}
			}
			return &reply{Err: toWire(err)}
		}
		return &reply{Output: &out}
	}
	return &reply{Err: toWire(engine.Invalid("%s templates are not rendered by this program", c.Lang))}
}

// forwardNames are the names of the parent's attached engines.
func forwardNames(engs []engine.Engine) []string {
	var names []string
	for _, e := range engs {
		names = append(names, e.Name())
	}
	return names
}

// forwardedCharts is the worker's chart fetcher: the parent downloads
// (the worker has no network).
type forwardedCharts struct{ w *worker }

// FetchChart asks the parent for the chart of src.
func (f *forwardedCharts) FetchChart(ctx context.Context, src engine.ChartSource) (*engine.Chart, error) {
	rep, err := (*remoteResolver)(f.w).call(call{Op: "chart", Chart: &src})
	if err != nil {
		return nil, err
	}
	if rep.Chart == nil {
		return nil, fmt.Errorf("chart %s: the parent answered nothing", src)
	}
	return rep.Chart, nil
}

// fetchChart answers a worker's chart call with the parent's fetcher.
func (p *Pool) fetchChart(ctx context.Context, src *engine.ChartSource) *reply {
	if p.opts.Expand.Charts == nil {
		return &reply{Err: toWire(fmt.Errorf("chart %s: this program does not download charts: %w", src, errors.ErrUnsupported))}
	}
	c, err := p.opts.Expand.Charts.FetchChart(ctx, *src)
	if err != nil {
		return &reply{Err: toWire(err)}
	}
	return &reply{Chart: c}
}
