package helmproxy

import (
	"context"
	"net/url"
	"strings"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Downloader downloads one chart: *Engine does in dm-helm; a program that
// links Helm downloads in-process (helmserve.Handler.Downloader).
type Downloader interface {
	Fetch(ctx context.Context, req FetchRequest) (map[string][]byte, *FetchedChart, error)
}

// Fetcher downloads the charts of type: helm resources through its
// Downloader, reaching only the hosts of Repos.
type Fetcher struct {
	Engine Downloader
	// Repos are the chart repositories and registries the user allowed
	// (--chart-repo): their hosts may be reached. An http:// one reaches
	// an OCI registry on its host over plain HTTP.
	Repos []string
	// CacheDir keeps downloads by digest; empty keeps none.
	CacheDir string
	// RepositoryConfig and RegistryConfig are Helm's credentials files;
	// empty uses Helm's default places.
	RepositoryConfig, RegistryConfig string
}

var _ engine.ChartFetcher = (*Fetcher)(nil)

// FetchChart downloads src.
func (f *Fetcher) FetchChart(ctx context.Context, src engine.ChartSource) (*engine.Chart, error) {
	req := FetchRequest{URL: src.URL, OCI: src.OCI, Repo: src.Repo, Chart: src.Chart, Version: src.Version,
		CacheDir: f.CacheDir, RepositoryConfig: f.RepositoryConfig, RegistryConfig: f.RegistryConfig}
	ociHost := ""
	if src.OCI != "" {
		ociHost, _, _ = strings.Cut(strings.TrimPrefix(src.OCI, "oci://"), "/")
	}
	for _, r := range f.Repos {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			// A bare host is allowed as given.
			req.AllowHosts = append(req.AllowHosts, strings.TrimSuffix(r, "/"))
			continue
		}
		req.AllowHosts = append(req.AllowHosts, u.Host)
		if u.Scheme == "http" && u.Host == ociHost {
			req.PlainHTTP = true
		}
	}
	files, c, err := f.Engine.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	return &engine.Chart{Files: files, Name: c.Name, Version: c.Version, URL: c.URL, Digest: c.Digest}, nil
}
