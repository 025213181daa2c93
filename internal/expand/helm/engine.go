package helm

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/dmhq/dm/internal/expand/engine"
)

// hookEvents are the events whose hooks a render emits: those before the
// chart's objects first, then the others. Every hook is emitted once,
// whatever its events, and deploy picks by its helm.sh/hook annotation the
// ones an action runs (install, upgrade, rollback, delete), so one
// expansion serves a first deploy and an update alike.
var hookEvents = [...]string{"pre-install", "pre-upgrade", "post-install", "post-upgrade", "pre-rollback", "post-rollback", "pre-delete", "post-delete"}

// preEvents counts the events of hookEvents whose hooks come before the
// objects.
const preEvents = 2

// Engine is the helm language of dm's engine table: a version directory
// holding Chart.yaml, rendered by Helm's own loader, values and engine.
// The invocation's properties are the values; its env's name is the
// release name and its namespace the release namespace, so a chart
// renders as `helm template NAME CHART -n NAMESPACE` would.
//
// Each object becomes a primitive named by its metadata.name (qualified by
// its lower-cased kind when two objects share a name). The hooks come
// around them, each once: those of pre-install and pre-upgrade first (in
// Helm's order), then the objects, then every other hook (post-install,
// post-upgrade, rollback and delete hooks), as `helm template` prints every
// hook. They keep their helm.sh/hook, helm.sh/hook-weight and
// helm.sh/hook-delete-policy annotations, by which deploy runs those of
// its action as ordered tiers; test hooks are left out.
//
// An invocation's Cluster (when deploying) replaces the capabilities of
// Options with the cluster's and gives lookup its reads, as helm install.
//
// The engine is attached (engine.Language.Attached): a program links it
// only where its start-up cost is paid once.
type Engine struct {
	// Options are the release options every render starts from
	// (KubeVersion, APIVersions, Lookup, limits); ReleaseName and
	// Namespace come from each invocation.
	Options Options

	mu     sync.Mutex
	charts map[string]*chart.Chart // by FilesKey and chart directory
}

// Name returns "helm".
func (*Engine) Name() string { return "helm" }

// Render renders the chart whose Chart.yaml is inv.File.
func (e *Engine) Render(ctx context.Context, inv engine.Invocation) (_ engine.Output, err error) {
	defer engine.Recover("Helm chart", inv.File, nil, &err)
	c, err := e.load(inv)
	if err != nil {
		return engine.Output{}, err
	}
	opts := e.Options
	opts.ReleaseName, _ = inv.Env["name"].(string)
	if ns, _ := inv.Env["namespace"].(string); ns != "" {
		opts.Namespace = ns
	}
	if c := inv.Cluster; c != nil {
		// Deploying: the cluster's .Capabilities, and lookup reads it,
		// as under helm install.
		opts.KubeVersion = c.KubeVersion
		if len(c.APIVersions) > 0 {
			opts.APIVersions, opts.ClusterAPIVersions = c.APIVersions, true
		}
		if c.Lookup != nil {
			opts.Lookup = LookupProvider(ctx, c.Lookup)
		}
	}
	res, err := Render(ctx, c, inv.Properties, opts)
	if err != nil {
		return engine.Output{}, err
	}
	var objs []Object
	seen := map[Object]bool{}
	hooks := func(events []string) {
		for _, e := range events {
			for _, t := range res.Hooks[e] {
				for _, h := range t.Hooks {
					if !seen[h.Object] {
						seen[h.Object] = true
						objs = append(objs, h.Object)
					}
				}
			}
		}
	}
	hooks(hookEvents[:preEvents])
	objs = append(objs, res.Objects...)
	hooks(hookEvents[preEvents:])
	return resources(objs)
}

// load returns the chart of inv, loaded once per content.
func (e *Engine) load(inv engine.Invocation) (*chart.Chart, error) {
	dir := path.Dir(inv.File)
	key := inv.FilesKey + "\x00" + dir
	if inv.FilesKey != "" {
		e.mu.Lock()
		c := e.charts[key]
		e.mu.Unlock()
		if c != nil {
			return c, nil
		}
	}
	c, err := LoadFiles(FilesUnder(inv.Files, dir), e.Options.MaxChartBytes)
	if err != nil {
		return nil, err
	}
	if inv.FilesKey != "" {
		e.mu.Lock()
		if e.charts == nil || len(e.charts) >= maxCachedCharts {
			e.charts = make(map[string]*chart.Chart)
		}
		e.charts[key] = c
		e.mu.Unlock()
	}
	return c, nil
}

// maxCachedCharts bounds the loaded charts an Engine keeps; past it the
// cache starts again (charts are few per program).
const maxCachedCharts = 64

// resources makes the primitives of rendered objects.
func resources(objs []Object) (engine.Output, error) {
	count := make(map[string]int, len(objs))
	for _, o := range objs {
		count[o.Name]++
	}
	res := make([]engine.Resource, 0, len(objs))
	for i, o := range objs {
		m, err := o.Decode()
		if err != nil {
			return engine.Output{}, err
		}
		if m == nil {
			continue
		}
		n := o.Name
		if n == "" {
			n = fmt.Sprintf("object-%d", i)
		}
		if count[o.Name] > 1 {
			n = strings.ToLower(o.Kind) + "-" + n
		}
		res = append(res, engine.Resource{Name: n, Type: o.Kind, Properties: m})
	}
	return engine.Output{Resources: res}, nil
}

// FilesUnder returns the files under directory dir, named relative to
// it: the chart's, when the invocation's files are a configuration's.
func FilesUnder(files map[string][]byte, dir string) map[string][]byte {
	if dir == "." {
		return files
	}
	out := make(map[string][]byte)
	for n, b := range files {
		if rel, ok := strings.CutPrefix(n, dir+"/"); ok {
			out[rel] = b
		}
	}
	return out
}
