// Package kcc holds Config Connector's CustomResourceDefinitions of the
// kinds internal/gcp maps to (see README.md), for tests that install them
// on a test apiserver (internal/gcp/kcctest). No program links it.
package kcc

import "embed"

// CRDs holds crds/*.yaml, one CustomResourceDefinition each.
//
//go:embed crds/*.yaml
var CRDs embed.FS
