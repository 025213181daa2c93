package expand

import (
	"context"
	"encoding/json"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// newResolver indexes fsys as the registry github.com/acme/templates.
func newResolver(t testing.TB, fsys fs.FS) *resolve.Resolver {
	t.Helper()
	ctx := context.Background()
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(fsys)}
	if err := reg.Refresh(ctx); err != nil {
		t.Fatalf("indexing: %v", err)
	}
	return resolve.New(resolve.Registry{Host: "github.com", Owner: "acme", Repo: "templates"}, reg)
}

// TestExampleRegistry expands the example.yaml of every version of every
// template in the embedded example registry.
func TestExampleRegistry(t *testing.T) {
	ctx := context.Background()
	fsys := dm.ExampleRegistry()
	r := newResolver(t, fsys)
	reg, _ := r.Registry(ctx, dm.ExampleRegistryPrefix)
	snap := reg.Snapshot()
	// The example registry has a chart: the test attaches Helm's engine,
	// as registryd and dm-helm do.
	x := New(Options{Resolver: r, Engines: []engine.Engine{&helm.Engine{}}})
	n := 0
	for _, tmpl := range snap.AllTemplates() {
		for _, v := range tmpl.Versions {
			n++
			name := v.Ref
			t.Run(name, func(t *testing.T) {
				if v.Problem != "" {
					t.Fatalf("version is unusable: %s", v.Problem)
				}
				if v.Example == "" {
					t.Fatalf("%s has no %s", v.Path, index.ExampleFile)
				}
				data, err := fs.ReadFile(fsys, path.Join(v.Path, v.Example))
				if err != nil {
					t.Fatal(err)
				}
				// Example configurations use floating references (redis:v1.0.1
				// means the newest v1.0.x), so pin the types naming this
				// template to this version's digest: every version directory is
				// expanded, not only the newest.
				cfg, err := ParseConfig(data, v.Path+"/"+v.Example)
				if err != nil {
					t.Fatal(err)
				}
				pinned := 0
				for i, rs := range cfg.Resources {
					res, err := r.Resolve(ctx, rs.Type)
					if err == nil && res.Template == tmpl {
						cfg.Resources[i].Type = v.Ref + "@" + v.Digest
						pinned++
					}
				}
				if pinned == 0 {
					t.Fatalf("example.yaml has no resource of template %s", tmpl.Path)
				}
				pinnedData, err := json.Marshal(cfg)
				if err != nil {
					t.Fatal(err)
				}
				for _, in := range [][]byte{data, pinnedData} {
					if _, err := x.Expand(ctx, Request{Config: in, ConfigName: path.Join(v.Path, v.Example), Deployment: "example", Namespace: "default"}); err != nil {
						t.Fatalf("expand: %v", err)
					}
				}
				res, err := x.Expand(ctx, Request{Config: pinnedData, ConfigName: path.Join(v.Path, v.Example), Deployment: "example", Namespace: "default"})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Config.Resources) == 0 {
					t.Fatalf("no primitives")
				}
				if !slices.ContainsFunc(res.References, func(rf Reference) bool { return rf.Resolved == v.Ref && rf.Digest == v.Digest }) {
					t.Errorf("expansion does not use %s (references: %+v)", v.Ref, res.References)
				}
				for _, p := range res.Config.Resources {
					// A Kubernetes object, or a Deployment Manager Google
					// Cloud type (compute.v1.instance), which
					// internal/manifest turns into a Config Connector
					// object.
					gcpType := strings.HasPrefix(p.Type, "gcp-types/") || strings.Count(p.Type, ".") >= 2 && !strings.Contains(p.Type, "/")
					if !gcpType && (p.Properties["kind"] == nil || p.Properties["apiVersion"] == nil) {
						t.Errorf("primitive %s lacks kind or apiVersion", p.Name)
					}
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("the example registry has no templates")
	}
}
