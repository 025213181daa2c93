// Command dm-helm renders, lints and downloads Helm charts for dm. dm
// starts it on the first chart a command meets that needs more than an
// offline render (dm-helm-render's work) and talks to it over stdin and
// stdout (package helmproxy), so that Helm's start-up cost is paid only by
// commands that meet charts. It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/dmhq/dm/internal/deploy/chartlookup"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/expand/helmrender"
	"github.com/dmhq/dm/internal/expand/helmserve"
)

// cluster gives the release options of charts dm deploys to c: the
// cluster's .Capabilities and lookup, read with the user's kubeconfig as
// helm install reads them.
func cluster(c helmproxy.Cluster) (helm.Options, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	if err != nil {
		return helm.Options{}, fmt.Errorf("kubeconfig: %w", err)
	}
	kv, apis, err := chartlookup.Capabilities(cfg)
	if err != nil {
		return helm.Options{}, err
	}
	lookup, err := chartlookup.New(cfg)
	if err != nil {
		return helm.Options{}, err
	}
	return helm.Options{KubeVersion: kv, APIVersions: apis, ClusterAPIVersions: true, Lookup: lookup}, nil
}

func main() {
	os.Exit(helmproxy.Main("dm-helm", &helmserve.Handler{Renderer: helmrender.Renderer{Cluster: cluster}}))
}
