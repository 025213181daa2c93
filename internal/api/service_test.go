package api

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/resolve"
)

// testService serves fsys as registry github.com/a/b.
func testService(t *testing.T, fsys fstest.MapFS) *Service {
	t.Helper()
	g, err := OpenRegistry(RegistrySpec{Prefix: "github.com/a/b", FS: fsys}, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return NewService(resolve.New(resolve.Registry{}, g), expand.Options{})
}

// TestLocalFileChanged checks that a local registry file deleted or edited
// after listing is answered from a new listing, never with a 500.
func TestLocalFileChanged(t *testing.T) {
	dir := t.TempDir()
	write := func(p, c string) {
		t.Helper()
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("web/v1/web.jinja", "resources: []\n")
	write("web/v1/example.yaml", "resources: [1]\n")
	write("web/v1/web.jinja.schema", "info: {title: Web}\n")
	write("db/v1/db.jinja", "resources: []\n")
	write("db/v1/db.jinja.schema", "info: {title: DB}\n")
	g, err := OpenRegistry(RegistrySpec{Prefix: "github.com/a/b", Dir: dir}, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry("github.com/a/b")
	s := NewService(resolve.New(def, g), expand.Options{})
	ctx := context.Background()

	write("web/v1/example.yaml", "resources: [2]\n")
	tv, err := s.Template(ctx, "web:v1", "")
	if err != nil || tv.ExampleContent != "resources: [2]\n" {
		t.Fatalf("after an edit: %v, example %q; want the new content", err, tv.ExampleContent)
	}
	// A deleted file whose content is cached is still served from the
	// listing (blobs are content-addressed) until the directory is listed
	// again, as registryd's watcher does at once.
	os.Remove(filepath.Join(dir, "web", "v1", "example.yaml"))
	if _, err = s.Template(ctx, "web:v1", ""); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	g.Refresh(ctx)
	if tv, err = s.Template(ctx, "web:v1", ""); err != nil || tv.ExampleContent != "" {
		t.Fatalf("after a delete and a listing: %v, example %q; want no example", err, tv.ExampleContent)
	}
	os.Remove(filepath.Join(dir, "db", "v1", "db.jinja.schema"))
	if tv, err = s.Template(ctx, "db:v1", ""); err != nil || tv.Title != "" || tv.Schema != "" {
		t.Fatalf("after an unread schema is deleted: %v, %+v; want no schema", err, tv)
	}
	write("web/v1/web.jinja", "resources: [{name: x, type: ConfigMap}]\n")
	res, err := s.Expand(ctx, &ExpandRequest{Ref: "web:v1"})
	if err != nil || len(res.Config.Resources) != 1 {
		t.Fatalf("expand after an edit: %v, %+v", err, res)
	}
	os.RemoveAll(filepath.Join(dir, "web"))
	g.Refresh(ctx)
	_, err = s.File(ctx, "web:v1", "", "web.jinja")
	if !errors.Is(err, derrors.NotFound) || derrors.HTTPStatus(err) != 404 {
		t.Fatalf("after the template is removed: %v, want 404", err)
	}
}
