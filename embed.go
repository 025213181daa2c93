// Package dm holds what the dm programs embed: the example registry, served
// when no other registry is configured.
package dm

import (
	"embed"
	"io/fs"
)

//go:embed all:registry-example
var registryExample embed.FS

// ExampleRegistryPrefix is the reference prefix the embedded example
// registry answers to.
const ExampleRegistryPrefix = "github.com/acme/templates"

// ExampleRegistry returns the embedded example registry's files.
func ExampleRegistry() fs.FS {
	sub, err := fs.Sub(registryExample, "registry-example")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
