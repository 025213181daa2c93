package controller

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// countVersion counts the requests for the apiserver's /version, one per
// read of the capabilities.
type countVersion struct {
	rt http.RoundTripper
	n  *atomic.Int32
}

func (c countVersion) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/version" {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(r)
}

// TestCapabilitiesCached: the cluster's capabilities are read once, not
// per render, and again when invalidated (a CRD changed) or older than
// the refresh.
func TestCapabilitiesCached(t *testing.T) {
	env := kubetest.SharedWith(t, kubetest.Options{ControllerManager: true})
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int32
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countVersion{rt, &reads} })
	c := newCapabilities(cfg, slog.New(slog.DiscardHandler))
	get := func() {
		t.Helper()
		kv, apis, err := c.get()
		if err != nil || kv == "" || len(apis) == 0 {
			t.Fatalf("get = %q, %d API versions, %v", kv, len(apis), err)
		}
	}
	steps := []struct {
		name   string
		before func()
		reads  int32
	}{
		{"first render", nil, 1},
		{"the next renders", nil, 1},
		{"again", nil, 1},
		{"a CRD changed", c.invalidate, 2},
		{"then", nil, 2},
		{"past the refresh", func() { c.read = time.Now().Add(-DefaultCapabilitiesRefresh - time.Second) }, 3},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		get()
		if n := reads.Load(); n != s.reads {
			t.Errorf("%s: %d reads of the cluster's version, want %d", s.name, n, s.reads)
		}
	}
}
