package crds

import (
	"bytes"
	"io/fs"
	"path"
	"slices"
	"testing"

	"golang.org/x/mod/semver"

	"github.com/dmhq/dm"
)

func TestAll(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	want := []string{"templatedefinitions.dm.io", "templateinstances.dm.io"}
	if !slices.Equal(names, want) {
		t.Fatalf("CRDs %v, want %v", names, want)
	}
	ti := all[1]
	var cols []string
	for _, c := range ti.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if want := []string{"Template", "Resolved", "Ready", "Age"}; !slices.Equal(cols, want) {
		t.Errorf("printer columns %v, want %v", cols, want)
	}
	if ti.Spec.Versions[0].Subresources == nil || ti.Spec.Versions[0].Subresources.Status == nil {
		t.Error("TemplateInstance has no status subresource")
	}
}

// registry-example publishes dm-controller as a template (dogfood) with
// these very CRDs: its latest version's crds/ holds the same files,
// byte for byte, so that dm deploy dm-controller:v1 installs what the
// binary would. After make generate changes them, publish a new version
// of the template with the new files.
func TestDogfoodTemplateCRDs(t *testing.T) {
	reg := dm.ExampleRegistry()
	dirs, err := fs.Glob(reg, "dm-controller/v*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no dm-controller version in registry-example: %v", err)
	}
	latest := slices.MaxFunc(dirs, func(a, b string) int { return semver.Compare(path.Base(a), path.Base(b)) })
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	published, err := fs.Glob(reg, latest+"/crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(published) != len(names) {
		t.Errorf("%s/crds holds %v, want the %d files %v", latest, published, len(names), names)
	}
	for _, n := range names {
		want, err := files.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(reg, latest+"/crds/"+n)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("registry-example/%s/crds/%s differs from internal/controller/crds/%s (%v): publish a new dm-controller version with the generated CRDs", latest, n, n, err)
		}
	}
}
