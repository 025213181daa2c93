package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDepsLeaveOutHelm: linking Helm's renderer costs every dm command
// its package initialisation (chartutil builds client-go's scheme, the OCI
// client more), so dm renders and fetches charts in dm-helm and must not
// link them itself.
func TestDepsLeaveOutHelm(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := map[string]bool{
		"helm.sh/helm/v3/pkg/engine":                   true,
		"helm.sh/helm/v3/pkg/chartutil":                true,
		"helm.sh/helm/v3/pkg/registry":                 true,
		"github.com/dmhq/dm/internal/expand/helm":      true,
		"github.com/dmhq/dm/internal/fetch/charts":     true,
		"github.com/dmhq/dm/internal/expand/helmserve": true,
	}
	for _, dep := range strings.Fields(string(out)) {
		if forbidden[dep] {
			t.Errorf("dm depends on %s", dep)
		}
		// sigstore-go (and the Rekor, go-openapi and protobuf packages it
		// brings) cost every command about a hundred package inits: dm
		// verifies and signs in dm-sigstore.
		// dm impact reads instances as dm-controller does through the
		// leaf package controller/instance: the controller itself, and
		// controller-runtime's package inits, are not every command's.
		if strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime") || dep == "github.com/dmhq/dm/internal/controller" {
			t.Errorf("dm depends on %s: dm impact reads instances through internal/controller/instance", dep)
		}
		if strings.HasPrefix(dep, "github.com/sigstore/") || dep == "github.com/dmhq/dm/internal/signature/sigstore" {
			t.Errorf("dm depends on %s: signatures are dm-sigstore's (internal/signature/sigproxy)", dep)
		}
	}
	if !strings.Contains(string(out), "github.com/dmhq/dm/internal/signature/sigproxy\n") {
		t.Errorf("dm does not link sigproxy: the test checks nothing of signatures")
	}
	if !strings.Contains(string(out), "github.com/dmhq/dm/internal/expand/helmproxy\n") {
		t.Errorf("dm does not link helmproxy: the test checks nothing")
	}
}
