package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helmproxy"
)

// chartFlags are the flags of Helm charts: their capabilities offline and
// the chart repositories configurations may fetch from.
type chartFlags struct {
	kubeVersion string
	apiVersions []string
	repos       []string
}

// defaultKubeVersion is what .Capabilities.KubeVersion reports offline,
// as helm template v3.16 (helm.DefaultKubeVersion, which dm does not link).
const defaultKubeVersion = "v1.31.0"

func addChartFlags(fs *pflag.FlagSet, f *chartFlags) {
	fs.StringVar(&f.kubeVersion, "kube-version", defaultKubeVersion, "Kubernetes `version` Helm charts see as .Capabilities.KubeVersion when expanding")
	fs.StringArrayVar(&f.apiVersions, "api-versions", nil, "API `version` Helm charts see in .Capabilities.APIVersions besides Helm's defaults (group/version or group/version/Kind, repeatable)")
	fs.StringArrayVar(&f.repos, "chart-repo", nil, "chart repository or registry `URL` whose host type: helm resources may fetch charts from (repeatable)")
}

// engines are the engines dm attaches: Helm charts, rendered by dm-helm.
func (g *globals) engines() []engine.Engine {
	if g.helm == nil {
		g.helm = &helmproxy.Engine{Getenv: g.getenv, KubeVersion: g.charts.kubeVersion, APIVersions: g.charts.apiVersions}
	}
	return []engine.Engine{g.helm}
}

// chartFetcher downloads the charts of type: helm resources, in dm-helm,
// from the hosts of --chart-repo only, with Helm's credentials files.
func (g *globals) chartFetcher() engine.ChartFetcher {
	g.engines()
	f := &helmproxy.Fetcher{Engine: g.helm, Repos: g.charts.repos,
		RepositoryConfig: g.getenv("HELM_REPOSITORY_CONFIG"), RegistryConfig: g.getenv("HELM_REGISTRY_CONFIG")}
	if d := g.cacheDirOrDefault(); d != "" {
		f.CacheDir = filepath.Join(d, "charts")
	}
	if f.RepositoryConfig == "" {
		if d, err := os.UserConfigDir(); err == nil {
			f.RepositoryConfig = filepath.Join(d, "helm", "repositories.yaml")
		}
	}
	return f
}

// closeHelm ends dm-helm if a chart started it.
func (g *globals) closeHelm() {
	if g.helm != nil {
		g.helm.Close()
	}
}
