package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
)

// The composite of expand's BenchmarkComposite (a Jinja template
// instantiating a Python-style template twice, four primitives, schemas),
// through a warm worker and in-process: the target is at most 1.5x.

func BenchmarkCompositeWorker(b *testing.B) {
	p := newPool(b, Options{Workers: 1})
	benchComposite(b, p)
}

func BenchmarkCompositeInProcess(b *testing.B) {
	benchComposite(b, api.NewService(exampleResolver(b), expand.Options{}))
}

func benchComposite(b *testing.B, x api.Expander) {
	req := &api.ExpandRequest{Config: composite, Deployment: "d", Namespace: "ns"}
	res, err := x.Expand(b.Context(), req)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Config.Resources) != 4 {
		b.Fatalf("got %d primitives, want 4", len(res.Config.Resources))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := x.Expand(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// The same as registryd answers POST /v1/expand: the expansion encoded as
// JSON. A worker's answer is JSON already; registryd only checks it.

func BenchmarkCompositeWorkerAnswer(b *testing.B) {
	p := newPool(b, Options{Workers: 1})
	req := &api.ExpandRequest{Config: composite, Deployment: "d", Namespace: "ns"}
	benchAnswer(b, func() (any, error) { return p.ExpandJSON(b.Context(), req) })
}

func BenchmarkCompositeInProcessAnswer(b *testing.B) {
	svc := api.NewService(exampleResolver(b), expand.Options{})
	req := &api.ExpandRequest{Config: composite, Deployment: "d", Namespace: "ns"}
	benchAnswer(b, func() (any, error) { return svc.Expand(b.Context(), req) })
}

func benchAnswer(b *testing.B, expand func() (any, error)) {
	b.ReportAllocs()
	for b.Loop() {
		v, err := expand()
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := v.(json.RawMessage); ok {
			continue // registryd writes a worker's answer as it is
		}
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip is the floor under every job: a Template with no
// objects processed by a warm worker, nearly all of it the two frames
// and the two process wake-ups.
func BenchmarkRoundTrip(b *testing.B) {
	p := newPool(b, Options{Workers: 1})
	body := []byte(`{"kind":"Template","apiVersion":"v1","metadata":{"name":"x"},"objects":[]}`)
	if _, err := p.ProcessTemplate(b.Context(), body); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := p.ProcessTemplate(b.Context(), body); err != nil {
			b.Fatal(err)
		}
	}
}
