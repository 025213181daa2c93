//go:build tools

// Package kube pins the Kubernetes commands the tests and `make dev-cluster`
// run (kube-apiserver, kubectl). It is a separate module so that the main
// module never requires k8s.io/kubernetes; `make testenv` builds from here.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
