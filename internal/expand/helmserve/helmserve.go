// Package helmserve is dm-helm's side of package helmproxy: it renders
// charts with Helm's library (package helmrender), lints them with Helm's
// rules (package helmlint) and downloads them with package charts, for a
// program that does not link them.
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
	"github.com/dmhq/dm/internal/expand/helm/helmlint"
	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/expand/helmrender"
	"github.com/dmhq/dm/internal/fetch/charts"
)

// Handler renders, lints and fetches charts: dm-helm's work. Its zero
// value works; its Renderer keeps what it loaded for the requests that
// follow (one dm command's).
type Handler struct {
	helmrender.Renderer
}

var (
	_ helmproxy.Handler      = (*Handler)(nil)
	_ helmproxy.FetchHandler = (*Handler)(nil)
	_ helmproxy.LintHandler  = (*Handler)(nil)
)

// Lint runs Helm's lint rules as helmlint.Engine does in-process.
func (h *Handler) Lint(ctx context.Context, req *helmproxy.LintRequest) ([]engine.Finding, error) {
	opts := h.Options
	opts.KubeVersion = req.KubeVersion
	return (&helmlint.Engine{Engine: helm.Engine{Options: opts}}).Lint(ctx, req.Files, req.File)
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
