package expand

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/expand/value"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGolden expands each directory of testdata/expand: config.yaml (or
// config.json) with every other file as an import, against the registry in
// testdata/registry, and compares the result with want.json or the error
// with want.err.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/expand/*")
	if err != nil {
		t.Fatal(err)
	}
	r := newResolver(t, os.DirFS("testdata/registry"))
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			x := New(Options{Resolver: r, Timeout: 5 * time.Second})
			req := Request{Imports: map[string][]byte{}, Deployment: "dep", Namespace: "ns"}
			err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				rel = filepath.ToSlash(rel)
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				switch rel {
				case "config.yaml", "config.json":
					req.Config, req.ConfigName = data, rel
				case "want.json", "want.err":
				case "ref.txt":
					req.Ref = strings.TrimSpace(string(data))
				case "properties.json":
					if err := json.Unmarshal(data, &req.Properties); err != nil {
						return err
					}
					req.Properties = value.Numbers(map[string]any(req.Properties)).(map[string]any)
				default:
					req.Imports[rel] = data
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := x.Expand(context.Background(), req)
			var got []byte
			wantFile := filepath.Join(dir, "want.json")
			if err != nil {
				got = []byte(err.Error() + "\n")
				wantFile = filepath.Join(dir, "want.err")
			} else {
				got, _ = json.MarshalIndent(res, "", "  ")
				got = append(got, '\n')
			}
			if *update {
				os.Remove(filepath.Join(dir, "want.json"))
				os.Remove(filepath.Join(dir, "want.err"))
				if err := os.WriteFile(wantFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, rerr := os.ReadFile(wantFile)
			if rerr != nil {
				t.Fatalf("got (no %s):\n%s", filepath.Base(wantFile), got)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs; got:\n%s\nwant:\n%s", filepath.Base(wantFile), got, want)
			}
		})
	}
}
