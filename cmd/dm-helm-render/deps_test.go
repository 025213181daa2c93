package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDepsRenderOnly: dm-helm-render links Helm's engine but none of what
// only dm-helm needs (Helm's lint rules, the chart downloaders and Helm's
// OCI client, the cluster client), whose package initialisation its every
// start would pay.
func TestDepsRenderOnly(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	forbidden := map[string]bool{
		"helm.sh/helm/v3/pkg/lint":                         true,
		"helm.sh/helm/v3/pkg/registry":                     true,
		"helm.sh/helm/v3/pkg/getter":                       true,
		"github.com/asaskevich/govalidator":                true,
		"github.com/dmhq/dm/internal/expand/helm/helmlint": true,
		"github.com/dmhq/dm/internal/expand/helmserve":     true,
		"github.com/dmhq/dm/internal/fetch/charts":         true,
		"github.com/dmhq/dm/internal/deploy/chartlookup":   true,
		"k8s.io/client-go/tools/clientcmd":                 true,
		"github.com/santhosh-tekuri/jsonschema/v6":         true,
		"sigs.k8s.io/kustomize/api/krusty":                 true,
		"k8s.io/cli-runtime/pkg/genericclioptions":         true,
		"github.com/distribution/reference":                true,
	}
	for _, dep := range deps {
		if forbidden[dep] {
			t.Errorf("dm-helm-render depends on %s", dep)
		}
	}
	for _, want := range []string{"helm.sh/helm/v3/pkg/engine", "github.com/dmhq/dm/internal/expand/helmrender"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("dm-helm-render does not link %s: the test checks nothing", want)
		}
	}
}
