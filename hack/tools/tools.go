//go:build tools

// Package tools pins controller-gen, which generates the controller's CRD
// manifests and deepcopy functions from its Go types (make generate). It is
// a separate module so that the main module never requires
// sigs.k8s.io/controller-tools.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
