package helm

import (
	"context"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// BenchmarkRender renders the 30-object chart through Render: values,
// engine, sorting into objects and hooks, and decoding every object.
func BenchmarkRender(b *testing.B) {
	c := loadDir(b, "testdata/charts/thirty")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := Render(ctx, c, nil, Options{ReleaseName: "bench"})
		if err != nil || len(res.Objects) != 30 {
			b.Fatalf("%v objects, %v", len(res.Objects), err)
		}
	}
}

// BenchmarkHelmEngine is Helm's engine alone on the same chart: the
// render values and engine.Render, the floor Render is measured against.
func BenchmarkHelmEngine(b *testing.B) {
	c := loadDir(b, "testdata/charts/thirty")
	caps := chartutil.DefaultCapabilities.Copy()
	b.ReportAllocs()
	for b.Loop() {
		vals, err := chartutil.ToRenderValues(c, map[string]any{}, chartutil.ReleaseOptions{Name: "bench", Namespace: "default", Revision: 1, IsInstall: true}, caps)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := engine.Render(c, vals); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHelmTemplatePath is what helm template does in-process on the
// same chart: render values, engine.Render and Helm's manifest sorting
// (which parses every rendered document), without printing.
func BenchmarkHelmTemplatePath(b *testing.B) {
	c := loadDir(b, "testdata/charts/thirty")
	caps := chartutil.DefaultCapabilities.Copy()
	b.ReportAllocs()
	for b.Loop() {
		vals, err := chartutil.ToRenderValues(c, map[string]any{}, chartutil.ReleaseOptions{Name: "bench", Namespace: "default", Revision: 1, IsInstall: true}, caps)
		if err != nil {
			b.Fatal(err)
		}
		files, err := engine.Render(c, vals)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder); err != nil {
			b.Fatal(err)
		}
	}
}
