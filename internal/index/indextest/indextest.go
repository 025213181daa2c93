// Package indextest builds tree listings for tests and benchmarks.
package indextest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/dmhq/dm/internal/fetch"
)

// Tree returns a listing of the given files, path -> content, with real
// git blob SHAs.
func Tree(files map[string]string) *fetch.Tree {
	t := &fetch.Tree{}
	for p, c := range files {
		t.Entries = append(t.Entries, fetch.Entry{Path: p, SHA: fetch.BlobSHA([]byte(c)), Size: int64(len(c))})
	}
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	t.Version = fetch.ListingHash(t.Entries)
	return t
}

// Files returns a registry of collections x templates x versions template
// versions, each a Jinja template with a schema and an example, spread over
// a root collection and named collections: versions are v<minor/10+1>.<minor>.<patch>
// style so resolution has patches and minors to choose from.
func Files(collections, templates, versions int) map[string]string {
	files := map[string]string{}
	for c := 0; c < collections; c++ {
		col := ""
		if c > 0 {
			col = fmt.Sprintf("col%d/", c)
		}
		for t := 0; t < templates; t++ {
			name := fmt.Sprintf("t%d", t)
			for v := 0; v < versions; v++ {
				dir := fmt.Sprintf("%s%s/v%d.%d.%d", col, name, 1+v/25, (v/5)%5, v%5)
				files[dir+"/"+name+".jinja"] = fmt.Sprintf("resources: [] # %s %d", dir, v)
				files[dir+"/"+name+".jinja.schema"] = "properties: {}\n"
				files[dir+"/example.yaml"] = fmt.Sprintf("resources:\n- name: x\n  type: %s:v1\n", name)
			}
		}
	}
	return files
}

// WriteFiles writes files, path -> content, under dir.
func WriteFiles(dir string, files map[string]string) error {
	for p, c := range files {
		name := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, []byte(c), 0o644); err != nil {
			return err
		}
	}
	return nil
}
