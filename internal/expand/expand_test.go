package expand

import (
	"context"
	"os"
	"sync"
	"testing"
)

// TestConcurrent expands with one Expander from several goroutines: the
// caches and compiled templates are shared (run with -race).
func TestConcurrent(t *testing.T) {
	x := New(Options{Resolver: newResolver(t, os.DirFS("testdata/registry"))})
	reqs := []Request{
		{Config: []byte("resources:\n- {name: app, type: \"stack:v1\", properties: {image: nginx}}\n")},
		{Config: []byte("resources:\n- {name: cfg, type: \"single:v1\", properties: {app: shop}}\n")},
		{Config: []byte("resources:\n- {name: s, type: \"common/gt:v1\", properties: {password: pw}}\n")},
		{Config: []byte("resources:\n- {name: o, type: \"ostpl:v1\", properties: {NAME: db}}\n")},
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := x.Expand(context.Background(), reqs[(i+j)%len(reqs)]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestRequestErrors(t *testing.T) {
	x := New(Options{})
	for _, req := range []Request{
		{},
		{Config: []byte("resources: []"), Ref: "redis:v1"},
		{Config: []byte("resources: []"), Properties: map[string]any{"a": 1}},
		{Ref: "redis:v1"}, // no resolver
		{Config: []byte("imports: [{path: a.jinja}]\nresources: []\n")},
	} {
		if _, err := x.Expand(context.Background(), req); err == nil {
			t.Errorf("Expand(%+v) succeeded", req)
		} else {
			t.Log(err)
		}
	}
}
