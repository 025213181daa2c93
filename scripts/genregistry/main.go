// Command genregistry writes a synthetic registry of 10,000 template
// versions (by default) into a directory, for whole-process benchmarks.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/dmhq/dm/internal/index/indextest"
)

func main() {
	dir := flag.String("dir", "", "output directory")
	collections := flag.Int("collections", 4, "collections (the root included)")
	templates := flag.Int("templates", 250, "templates per collection")
	versions := flag.Int("versions", 10, "versions per template")
	flag.Parse()
	if *dir == "" {
		log.Fatal("genregistry: --dir is required")
	}
	for p, c := range indextest.Files(*collections, *templates, *versions) {
		name := filepath.Join(*dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(c), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
