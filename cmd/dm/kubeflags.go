package main

import (
	"github.com/spf13/pflag"
)

// kubeFlags are kubectl's cluster flags, global to dm.
type kubeFlags struct {
	kubeconfig string // --kubeconfig
	context    string // --context
	namespace  string // -n/--namespace
}

// addKubeFlags registers the cluster flags as kubectl names them.
func addKubeFlags(fs *pflag.FlagSet, k *kubeFlags) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig `file` (default $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "kubeconfig `context` to use (default the current context)")
	fs.StringVarP(&k.namespace, "namespace", "n", "", "`namespace` (default the context's namespace, else default)")
}
