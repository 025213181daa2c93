// Package helmserve is dm-helm's side of package helmproxy: it renders
// charts with Helm's library (package helm) and downloads them with
// package charts, for a program that does not link them.
package helmserve

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/fetch/charts"
)

// Handler renders and fetches charts. Its zero value works; it keeps the
// charts it loaded for the requests that follow (one dm command's).
type Handler struct {
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

var _ helmproxy.Handler = (*Handler)(nil)

// Render renders a chart as helm.Engine does in-process.
func (h *Handler) Render(ctx context.Context, req *helmproxy.RenderRequest) (engine.Output, error) {
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

// Lint runs Helm's lint rules as helm.Engine does in-process.
func (h *Handler) Lint(ctx context.Context, req *helmproxy.LintRequest) ([]engine.Finding, error) {
	opts := h.Options
	opts.KubeVersion = req.KubeVersion
	return (&helm.Engine{Options: opts}).Lint(ctx, req.Files, req.File)
}

// Downloader returns h as a helmproxy.Downloader: a program that links
// Helm (registryd) downloads charts in-process with it.
func (h *Handler) Downloader() helmproxy.Downloader { return downloader{h} }

type downloader struct{ h *Handler }

func (d downloader) Fetch(ctx context.Context, req helmproxy.FetchRequest) (map[string][]byte, *helmproxy.FetchedChart, error) {
	return d.h.Fetch(ctx, &req)
}

// Fetch downloads a chart and unpacks it.
func (h *Handler) Fetch(ctx context.Context, req *helmproxy.FetchRequest) (map[string][]byte, *helmproxy.FetchedChart, error) {
	f := &charts.Fetcher{AllowHosts: req.AllowHosts, CacheDir: req.CacheDir, RegistryConfig: req.RegistryConfig, PlainHTTP: req.PlainHTTP}
	if req.RepositoryConfig != "" {
		creds, err := charts.RepositoryCredentials(req.RepositoryConfig)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		f.Credentials = creds
	}
	var c *charts.Chart
	var err error
	switch {
	case req.OCI != "":
		c, err = f.OCI(ctx, req.OCI)
	case req.URL != "":
		c, err = f.URL(ctx, req.URL)
	case req.Repo != "":
		c, err = f.Repo(ctx, req.Repo, req.Chart, req.Version)
	default:
		return nil, nil, derrors.Errorf(derrors.InvalidArgument, "a chart fetch names no url, oci reference or repository")
	}
	if err != nil {
		return nil, nil, err
	}
	files, err := Unpack(c.Data, h.Options.MaxChartBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("chart %s: %w", c.URL, err)
	}
	return files, &helmproxy.FetchedChart{Name: c.Name, Version: c.Version, URL: c.URL, Digest: c.Digest}, nil
}

// Unpack returns the files of a packed chart (.tgz), relative to its
// directory (the archive's first path element), at most maxBytes in all
// (helm.DefaultMaxChartBytes when zero). Only regular files are kept;
// a path that leaves the chart is an error.
func Unpack(tgz []byte, maxBytes int) (map[string][]byte, error) {
	if maxBytes <= 0 {
		maxBytes = helm.DefaultMaxChartBytes
	}
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "not a gzipped chart archive: %v", err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	total := 0
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, derrors.Errorf(derrors.InvalidArgument, "reading the chart archive: %v", err)
		}
		if hd.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(strings.TrimPrefix(hd.Name, "/"))
		_, rel, ok := strings.Cut(name, "/")
		if !ok || rel == "" || strings.HasPrefix(name, "../") {
			return nil, derrors.Errorf(derrors.InvalidArgument, "chart archive entry %q is not inside the chart's directory", hd.Name)
		}
		if total+int(hd.Size) > maxBytes || hd.Size < 0 {
			return nil, engine.Limit("MaxChartBytes", maxBytes, "the chart archive's files")
		}
		b, err := io.ReadAll(io.LimitReader(tr, hd.Size))
		if err != nil {
			return nil, derrors.Errorf(derrors.InvalidArgument, "reading %s of the chart archive: %v", hd.Name, err)
		}
		total += len(b)
		files[rel] = b
	}
	if _, ok := files["Chart.yaml"]; !ok {
		return nil, derrors.Errorf(derrors.InvalidArgument, "the chart archive has no Chart.yaml in its directory")
	}
	return files, nil
}
