package gcp_test

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/gcp"
)

// readConfig reads a flat DM configuration: its resources.
func readConfig(t *testing.T, file string) []gcp.Resource {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Resources []struct {
			Name, Type    string
			Properties    map[string]any
			Metadata      map[string]any
			AccessControl map[string]any `json:"accessControl"`
		}
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	var res []gcp.Resource
	for _, r := range cfg.Resources {
		res = append(res, gcp.Resource{Name: r.Name, Type: r.Type, Properties: r.Properties, Metadata: r.Metadata,
			AccessControl: r.AccessControl, Path: []string{r.Name}})
	}
	return res
}

// TestApplySamples converts a sample of every mapped type and applies the
// objects to an apiserver holding Config Connector's CRDs, with strict
// field validation.
func TestApplySamples(t *testing.T) {
	res := readConfig(t, "testdata/samples.yaml")
	r, err := gcp.Convert(res, gcp.Options{Project: "dm-samples", DeletionPolicy: "abandon"})
	if err != nil {
		t.Fatal(err)
	}
	fillDeferred(t, r)
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	for _, err := range applyObjects(t, env, ns, r.Objects, r.Sources) {
		t.Error(err)
	}
}
