package main

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/index/indextest"
)

// TestGenFS checks that the generated directory is a well-behaved fs.FS
// holding exactly what indextest.Files writes, so the benchmark indexes
// the registry the other benchmarks use, only larger.
func TestGenFS(t *testing.T) {
	for _, tc := range []struct{ collections, templates, versions int }{
		{1, 1, 1}, {2, 3, 4}, {4, 2, 30},
	} {
		g := &genFS{collections: tc.collections, templates: tc.templates, versions: tc.versions}
		want := indextest.Files(tc.collections, tc.templates, tc.versions)
		var paths []string
		for p := range want {
			paths = append(paths, p)
		}
		if err := fstest.TestFS(g, paths...); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		n := 0
		err := fs.WalkDir(g, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			n++
			b, err := fs.ReadFile(g, p)
			if err != nil {
				return err
			}
			if string(b) != want[p] {
				t.Errorf("%+v: %s = %q, want %q", tc, p, b, want[p])
			}
			return nil
		})
		if err != nil || n != len(want) {
			t.Errorf("%+v: %d files (%v), want %d", tc, n, err, len(want))
		}
	}
}
