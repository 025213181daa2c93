// Package helmrender answers the render requests of package helmproxy with
// Helm's library (package helm). It is all that dm-helm-render links, the
// program dm starts to expand charts offline: no chart downloads, no lint
// rules, no cluster client, whose packages' initialisation would be paid
// at every start (package helmserve adds them, for dm-helm).
package helmrender

import (
	"context"
	"fmt"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/expand/helmproxy"
)

// Renderer renders charts. Its zero value works; it keeps the engines of
// the capabilities and clusters it saw, and their loaded charts, for the
// requests that follow (one dm command's).
type Renderer struct {
	// Options are the render's limits (MaxChartBytes, MaxOutputBytes,
	// Timeout); the release and capabilities come with each request.
	Options helm.Options
	// Cluster gives the release options of a chart deployed to the
	// cluster c names: KubeVersion, APIVersions with ClusterAPIVersions,
	// and Lookup. Nil refuses such requests. dm-helm's main provides it,
	// since reading a cluster is the deploy side's (chartlookup).
	Cluster func(c helmproxy.Cluster) (helm.Options, error)

	engines map[string]*helm.Engine // by capabilities and cluster
}

var _ helmproxy.Handler = (*Renderer)(nil)

// Render renders a chart as helm.Engine does in-process.
func (h *Renderer) Render(ctx context.Context, req *helmproxy.RenderRequest) (engine.Output, error) {
	key := req.KubeVersion + "\x00" + strings.Join(req.APIVersions, ",")
	if c := req.Cluster; c != nil {
		key = "cluster\x00" + c.Kubeconfig + "\x00" + c.Context
	}
	e := h.engines[key]
	if e == nil {
		if h.engines == nil {
			h.engines = map[string]*helm.Engine{}
		}
		opts := h.Options
		opts.KubeVersion, opts.APIVersions = req.KubeVersion, req.APIVersions
		if c := req.Cluster; c != nil {
			if h.Cluster == nil {
				return engine.Output{}, derrors.Errorf(derrors.InvalidArgument, "this program does not read clusters for charts")
			}
			co, err := h.Cluster(*c)
			if err != nil {
				return engine.Output{}, engine.At(req.File, 0, fmt.Errorf("reading the cluster's capabilities for the chart: %w", err))
			}
			opts.KubeVersion, opts.APIVersions, opts.ClusterAPIVersions, opts.Lookup = co.KubeVersion, co.APIVersions, co.ClusterAPIVersions, co.Lookup
		}
		e = &helm.Engine{Options: opts}
		h.engines[key] = e
	}
	return e.Render(ctx, engine.Invocation{
		File: req.File, Source: req.Files[req.File], Files: req.Files, FilesKey: req.FilesKey,
		Properties: req.Properties, Env: req.Env, Label: req.Label,
	})
}
