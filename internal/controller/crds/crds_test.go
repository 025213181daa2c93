package crds

import (
	"bytes"
	"io/fs"
	"path"
	"slices"
	"testing"

	"golang.org/x/mod/semver"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

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
	want := []string{"clusterregistries.dm.io", "registries.dm.io", "rolloutpolicies.dm.io", "templatedefinitions.dm.io", "templateinstances.dm.io", "templaterolloutpolicies.dm.io"}
	if !slices.Equal(names, want) {
		t.Fatalf("CRDs %v, want %v", names, want)
	}
	ti := all[4]
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

// The controller installs its own kinds only; registryd's template
// installs the registry kinds.
func TestControllerAndRegistry(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func() ([]*apiextensionsv1.CustomResourceDefinition, error)
		want []string
	}{
		{"Controller", Controller, []string{"rolloutpolicies.dm.io", "templatedefinitions.dm.io", "templateinstances.dm.io", "templaterolloutpolicies.dm.io"}},
		{"Registry", Registry, []string{"clusterregistries.dm.io", "registries.dm.io"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("%s() = %v, want %v", tc.name, names, tc.want)
			}
		})
	}
}

// TestRegistryCRDs checks the kinds, scopes and printer columns registryd's
// contract names (issue 16 §1).
func TestRegistryCRDs(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, kind, scope string }{
		{"registries.dm.io", "Registry", "Namespaced"},
		{"clusterregistries.dm.io", "ClusterRegistry", "Cluster"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			i := slices.IndexFunc(all, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == tc.name })
			if i < 0 {
				t.Fatalf("no CRD %s", tc.name)
			}
			c := all[i]
			if c.Spec.Names.Kind != tc.kind || string(c.Spec.Scope) != tc.scope {
				t.Errorf("kind %s scope %s, want %s %s", c.Spec.Names.Kind, c.Spec.Scope, tc.kind, tc.scope)
			}
			v := c.Spec.Versions[0]
			var cols []string
			for _, col := range v.AdditionalPrinterColumns {
				cols = append(cols, col.Name)
			}
			if want := []string{"Prefix", "Commit", "Ready", "Age"}; !slices.Equal(cols, want) {
				t.Errorf("printer columns %v, want %v", cols, want)
			}
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Error("no status subresource")
			}
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties
			for _, f := range []string{"github", "prefix", "defaultCollection", "tokenSecretRef", "webhookSecretRef", "refreshInterval", "suspend"} {
				if _, ok := spec[f]; !ok {
					t.Errorf("spec has no field %s", f)
				}
			}
			for _, f := range []string{"owner", "repo", "branch", "apiURL"} {
				if _, ok := spec["github"].Properties[f]; !ok {
					t.Errorf("spec.github has no field %s", f)
				}
			}
			status := v.Schema.OpenAPIV3Schema.Properties["status"].Properties
			for _, f := range []string{"conditions", "commit", "lastSuccessTime", "templates", "versions", "lint", "examples"} {
				if _, ok := status[f]; !ok {
					t.Errorf("status has no field %s", f)
				}
			}
		})
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
	names, err := ControllerFiles()
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

// The roll-out policies: one kind per scope, and kubectl get shows the
// patch rolling out, the waves' states and whether promotion is paused.
func TestRolloutCRDs(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, kind, scope string }{
		{"templaterolloutpolicies.dm.io", "TemplateRolloutPolicy", "Cluster"},
		{"rolloutpolicies.dm.io", "RolloutPolicy", "Namespaced"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			i := slices.IndexFunc(all, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == tc.name })
			if i < 0 {
				t.Fatalf("no CRD %s", tc.name)
			}
			c := all[i]
			if c.Spec.Names.Kind != tc.kind || string(c.Spec.Scope) != tc.scope {
				t.Errorf("kind %s scope %s, want %s %s", c.Spec.Names.Kind, c.Spec.Scope, tc.kind, tc.scope)
			}
			v := c.Spec.Versions[0]
			var cols []string
			for _, col := range v.AdditionalPrinterColumns {
				if col.Priority == 0 {
					cols = append(cols, col.Name)
				}
			}
			if want := []string{"Template", "Version", "Waves", "Paused", "Ready", "Age"}; !slices.Equal(cols, want) {
				t.Errorf("printer columns %v, want %v", cols, want)
			}
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Error("no status subresource")
			}
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties
			for _, f := range []string{"template", "waves", "failurePolicy", "paused"} {
				if _, ok := spec[f]; !ok {
					t.Errorf("spec has no field %s", f)
				}
			}
			for _, f := range []string{"name", "selector", "percent", "soakTime", "deadline"} {
				if _, ok := spec["waves"].Items.Schema.Properties[f]; !ok {
					t.Errorf("spec.waves[] has no field %s", f)
				}
			}
			status := v.Schema.OpenAPIV3Schema.Properties["status"].Properties
			for _, f := range []string{"version", "waves", "failedVersions", "conditions"} {
				if _, ok := status[f]; !ok {
					t.Errorf("status has no field %s", f)
				}
			}
			states := status["waves"].Items.Schema.Properties["state"].Enum
			if len(states) != 7 {
				t.Errorf("wave states %d, want the 7 of the contract", len(states))
			}
		})
	}
}
