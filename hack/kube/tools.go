//go:build tools

// Package kube pins the Kubernetes commands the tests and `make dev-cluster`
// run (kube-apiserver, kube-controller-manager, kubectl, etcd). It is a
// separate module so that the main module never requires k8s.io/kubernetes
// or etcd's server; `make testenv` builds from here.
package kube

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
