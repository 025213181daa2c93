//go:build tools

// Package helm pins the helm command that the chart parity test of
// internal/expand/helm runs (`helm template`), at the Helm version the main
// module links. It is a module of its own, beside hack/kube, so that
// Helm's requirements never move the versions kube-apiserver and etcd are
// built with; hack/kube/build.sh builds it when asked for helm.
package helm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
