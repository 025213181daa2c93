// Command dm-helm renders and downloads Helm charts for dm. dm starts it
// on the first chart a command meets and talks to it over stdin and
// stdout (package helmproxy), so that Helm's start-up cost is paid only by
// commands that render charts. It is not meant to be run by hand.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/dmhq/dm/internal/deploy/chartlookup"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/expand/helmproxy"
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
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "dm-helm renders Helm charts for dm, which starts it; it takes no arguments")
		os.Exit(2)
	}
	// Charts are other people's code: bound what one may take.
	for _, p := range helmproxy.ApplyLimits(helmproxy.DefaultMaxMemory) {
		fmt.Fprintln(os.Stderr, "dm-helm: warning:", p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := helmproxy.Serve(ctx, os.Stdin, os.Stdout, &helmserve.Handler{Cluster: cluster}, 0); err != nil {
		fmt.Fprintln(os.Stderr, "dm-helm:", err)
		os.Exit(1)
	}
}
