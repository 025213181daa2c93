package api

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/derrors"
)

// listingFS is a registry with templates in the root collection and in
// collection apps, one with a prerelease above its stable versions.
func listingFS() fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, p := range []string{
		"web/v1.0.0/web.jinja", "web/v1.1.0/web.jinja", "web/v2.0.0-rc.1/web.jinja",
		"db/v1.0.0/db.jinja",
		"apps/shop/v1.0.0/shop.jinja", "apps/webshop/v1.0.0/webshop.jinja",
	} {
		fsys[p] = &fstest.MapFile{Data: []byte("resources: []\n")}
	}
	return fsys
}

func TestTemplates(t *testing.T) {
	s := testService(t, listingFS())
	tests := []struct {
		name    string
		q       TemplateQuery
		want    []string
		wantErr error
	}{
		{"everything", TemplateQuery{}, []string{"github.com/a/b/apps/shop", "github.com/a/b/apps/webshop", "github.com/a/b/db", "github.com/a/b/web"}, nil},
		{"name pattern", TemplateQuery{Q: "^web"}, []string{"github.com/a/b/apps/webshop", "github.com/a/b/web"}, nil},
		{"qualified pattern", TemplateQuery{Q: "^apps/w"}, []string{"github.com/a/b/apps/webshop"}, nil},
		{"collection of the registry name", TemplateQuery{Registry: "a/b/apps"}, []string{"github.com/a/b/apps/shop", "github.com/a/b/apps/webshop"}, nil},
		{"root collection", TemplateQuery{Registry: "a/b", Collection: "/"}, []string{"github.com/a/b/db", "github.com/a/b/web"}, nil},
		{"bad pattern", TemplateQuery{Q: "("}, nil, derrors.InvalidArgument},
		{"missing collection", TemplateQuery{Collection: "nope"}, nil, derrors.NotFound},
		{"unconfigured registry", TemplateQuery{Registry: "x/y"}, nil, derrors.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Templates(context.Background(), tt.q)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var refs []string
			for _, tm := range got.Templates {
				refs = append(refs, tm.Ref)
			}
			slices.Sort(refs)
			if !slices.Equal(refs, tt.want) {
				t.Errorf("got %q, want %q", refs, tt.want)
			}
		})
	}
}

func TestVersions(t *testing.T) {
	s := testService(t, listingFS())
	tm, err := s.Versions(context.Background(), "github.com/a/b/web", "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range tm.Versions {
		names = append(names, v.Version)
	}
	if want := []string{"v1.0.0", "v1.1.0", "v2.0.0-rc.1"}; !slices.Equal(names, want) || tm.Latest != "v1.1.0" {
		t.Errorf("versions %q latest %q; want %q, latest v1.1.0 (a prerelease is never latest)", names, tm.Latest, want)
	}
	if !tm.Versions[2].Prerelease {
		t.Errorf("v2.0.0-rc.1 is not marked a prerelease: %+v", tm.Versions[2])
	}
	if _, err := s.Versions(context.Background(), "web", "a/b"); err != nil {
		t.Errorf("short name against a/b: %v", err)
	}
	if _, err := s.Versions(context.Background(), "github.com/a/b/web:v1", ""); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("a reference with a version: %v, want InvalidArgument", err)
	}
}

func TestRegistriesAndCollections(t *testing.T) {
	s := testService(t, listingFS())
	ctx := context.Background()
	list, err := s.Registries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Registries) != 1 {
		t.Fatalf("registries: %+v", list.Registries)
	}
	r := list.Registries[0]
	if r.Name != "github.com/a/b" || r.Kind != KindEmbedded || r.Status != StatusOK || !r.Ready || r.Templates != 4 || r.Versions != 6 || r.Default {
		t.Errorf("registry %+v", r)
	}
	if _, err := s.Registry(ctx, "a/b"); err != nil {
		t.Errorf("Registry by short name: %v", err)
	}
	if _, err := s.Registry(ctx, "x/y"); !errors.Is(err, derrors.NotFound) {
		t.Errorf("Registry x/y: %v, want NotFound", err)
	}
	colls, err := s.Collections(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range colls.Collections {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"", "apps"}) {
		t.Errorf("collections %q, want the root and apps", names)
	}
}

func TestQualified(t *testing.T) {
	for _, tt := range []struct{ coll, name, want string }{
		{"", "web", "web"},
		{"apps", "shop", "apps/shop"},
		{"a/b", "c", "a/b/c"},
	} {
		if got := Qualified(tt.coll, tt.name); got != tt.want {
			t.Errorf("Qualified(%q, %q) = %q, want %q", tt.coll, tt.name, got, tt.want)
		}
	}
}
