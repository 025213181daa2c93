package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/dmhq/dm/internal/deploy/kube"
)

// kubeFlags are the kubectl-style flags of the commands that talk to a
// cluster.
type kubeFlags struct {
	kubeconfig string // --kubeconfig
	context    string // --context
	namespace  string // -n/--namespace
}

// addKubeFlags defines the cluster flags on fs (the root's persistent flags).
func addKubeFlags(fs *pflag.FlagSet, k *kubeFlags) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig `file` (default $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "kubeconfig `context` to use (default: its current context)")
	fs.StringVarP(&k.namespace, "namespace", "n", "", "cluster `namespace` (default: the context's, else default)")
}

// kubeClient connects to the cluster the flags select. It is created only
// by the commands that need a cluster.
func (g *globals) kubeClient(ctx context.Context) (*kube.Client, error) {
	return kube.New(ctx, kube.Config{
		Kubeconfig: g.kube.kubeconfig,
		Context:    g.kube.context,
		Namespace:  g.kube.namespace,
		// Concurrency bounds the requests in flight; a client-side rate
		// limit on top only makes a large deployment wait (< 0: none).
		QPS: -1,
	})
}
