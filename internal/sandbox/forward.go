package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
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

// A worker holds no credentials: a chart's lookup, when the job is
// deployed to a cluster (its request's Cluster), goes to the parent as a
// "lookup" call, and the parent reads the cluster with the Lookup the
// job's caller gave (dm-controller's: the instance's account). Each job
// runs on one worker at a time, so the parent answers a call with the
// Lookup of the job that worker runs, and no other.

// forwardedLookup is the worker's Lookup for one job.
type forwardedLookup struct {
	w   *worker
	job uint64 // the job it was made for (worker.job)
}

// Lookup asks the parent for the object or list q names.
func (f *forwardedLookup) Lookup(ctx context.Context, q engine.LookupQuery) (map[string]any, error) {
	rep, err := (*remoteResolver)(f.w).callFor(f.job, call{Op: "lookup", Lookup: &q})
	if err != nil {
		return nil, err
	}
	if rep.Missing {
		return nil, nil
	}
	if len(rep.Object) == 0 {
		return nil, fmt.Errorf("lookup %s: the parent answered neither an object nor that there is none", q)
	}
	dec := json.NewDecoder(bytes.NewReader(rep.Object))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("lookup %s: the parent's answer: %w", q, err)
	}
	// Numbers as the dynamic client gives them (int64, float64).
	m, ok := value.Numbers(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("lookup %s: the parent answered %s, not an object", q, jsonKind(v))
	}
	return m, nil
}

// jsonKind names a decoded JSON value's kind, for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// lookup answers a worker's lookup call with the Lookup of its job,
// within the job's deadline and the lookup limits. A job without one
// renders offline: nothing is found, as under helm template.
func (p *Pool) lookup(ctx context.Context, st *jobState, q *engine.LookupQuery) *reply {
	if st.lookup == nil {
		return &reply{Missing: true}
	}
	st.lookups++
	if st.lookups > p.opts.MaxLookups {
		return &reply{Err: toWire(&expand.LimitError{Field: "MaxLookups", Limit: p.opts.MaxLookups, What: fmt.Sprintf("lookup %s: one expansion's lookups", q)})}
	}
	// The worker waits on this answer, and the job's deadline is checked
	// only between frames: the read must end by it.
	ctx, cancel := context.WithDeadline(ctx, st.started.Add(p.opts.Expand.TotalTimeout))
	defer cancel()
	obj, err := st.lookup.Lookup(ctx, *q)
	if err != nil {
		return &reply{Err: toWire(err)}
	}
	if obj == nil {
		return &reply{Missing: true}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return &reply{Err: toWire(fmt.Errorf("lookup %s: encoding the object: %w", q, err))}
	}
	if len(b) > p.opts.MaxLookupBytes {
		return &reply{Err: toWire(&expand.LimitError{Field: "MaxLookupBytes", Limit: formatBytes(uint64(p.opts.MaxLookupBytes)), What: fmt.Sprintf("lookup %s: the answer is %d bytes", q, len(b))})}
	}
	return &reply{Object: b}
}
