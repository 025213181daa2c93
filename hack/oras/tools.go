//go:build tools

// Package oras pins the oras command that the OCI interoperability test of
// internal/fetch/oci runs (a client dm did not write pushing a version dm
// resolves, and pulling what dm pushed). It is a module of its own, beside
// hack/kube and hack/helm, so that oras's requirements never move the main
// module's; hack/kube/build.sh builds it when asked for oras.
package oras

import (
	_ "oras.land/oras/cmd/oras"
)
