// Command genregistry writes a synthetic registry of 10,000 template
// versions (by default) into a directory, for whole-process benchmarks.
package main

import (
	"flag"
	"log"

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
	if err := indextest.WriteFiles(*dir, indextest.Files(*collections, *templates, *versions)); err != nil {
		log.Fatal(err)
	}
}
