// Command devcluster runs etcd and kube-apiserver on loopback ports for a
// person, as the tests do (package kubetest), prints the line that points
// kubectl and dm at it, and stops and removes everything on Ctrl-C.
//
//	make dev-cluster                  # builds and runs bin/devcluster
//	bin/devcluster [-port 6443] [-dir /tmp]
//
// Objects are stored, validated and admitted, but no pods run: there is no
// kubelet, scheduler or controller-manager.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

func main() {
	port := flag.Int("port", 0, "apiserver port on 127.0.0.1 (0 picks a free one)")
	dir := flag.String("dir", "", "where to make the cluster's temporary directory (default $TMPDIR)")
	flag.Parse()
	if err := run(*port, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(port int, dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bins, err := kubetest.FindBinaries()
	if err != nil {
		return err
	}
	env, err := kubetest.Launch(ctx, kubetest.Options{Binaries: bins, Dir: dir, Port: port})
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Printf(`kube-apiserver is ready at %s (logs in %s).
Admin (system:masters):
  export KUBECONFIG=%s
A user with no permissions:
  export KUBECONFIG=%s
kubectl: %s
Objects are stored, validated and admitted, but no pods run (no kubelet or controller-manager).
Ctrl-C stops the cluster and deletes its data.
`, env.Server, env.Dir, env.Kubeconfig, env.LimitedKubeconfig, orNone(env.Kubectl))
	<-ctx.Done()
	fmt.Println("devcluster: stopping")
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none found (make testenv builds one)"
	}
	return s
}
