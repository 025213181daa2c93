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
			v := checkCRD(t, all, tc.name, tc.kind, tc.scope, false, []string{"Prefix", "Commit", "Ready", "Age"})
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties
			hasFields(t, "spec", spec, "github", "prefix", "defaultCollection", "tokenSecretRef", "webhookSecretRef", "refreshInterval", "suspend")
			hasFields(t, "spec.github", spec["github"].Properties, "owner", "repo", "branch", "apiURL")
			status := v.Schema.OpenAPIV3Schema.Properties["status"].Properties
			hasFields(t, "status", status, "conditions", "commit", "lastSuccessTime", "templates", "versions", "lint", "examples")
		})
	}
}

// checkCRD finds the CRD called name in all and checks its kind, scope,
// printer columns (with defaultOnly, those of priority 0 alone) and
// status subresource; it returns the CRD's first version.
func checkCRD(t *testing.T, all []*apiextensionsv1.CustomResourceDefinition, name, kind, scope string, defaultOnly bool, wantCols []string) apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	i := slices.IndexFunc(all, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no CRD %s", name)
	}
	c := all[i]
	if c.Spec.Names.Kind != kind || string(c.Spec.Scope) != scope {
		t.Errorf("kind %s scope %s, want %s %s", c.Spec.Names.Kind, c.Spec.Scope, kind, scope)
	}
	v := c.Spec.Versions[0]
	var cols []string
	for _, col := range v.AdditionalPrinterColumns {
		if !defaultOnly || col.Priority == 0 {
			cols = append(cols, col.Name)
		}
	}
	if !slices.Equal(cols, wantCols) {
		t.Errorf("printer columns %v, want %v", cols, wantCols)
	}
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource")
	}
	return v
}

// hasFields checks that the schema properties props, at path, hold every
// field of fields.
func hasFields(t *testing.T, path string, props map[string]apiextensionsv1.JSONSchemaProps, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if _, ok := props[f]; !ok {
			t.Errorf("%s has no field %s", path, f)
		}
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
			v := checkCRD(t, all, tc.name, tc.kind, tc.scope, true, []string{"Template", "Version", "Waves", "Paused", "Ready", "Age"})
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties
			hasFields(t, "spec", spec, "template", "waves", "failurePolicy", "paused")
			hasFields(t, "spec.waves[]", spec["waves"].Items.Schema.Properties, "name", "selector", "percent", "soakTime", "deadline")
			status := v.Schema.OpenAPIV3Schema.Properties["status"].Properties
			hasFields(t, "status", status, "version", "waves", "failedVersions", "conditions")
			states := status["waves"].Items.Schema.Properties["state"].Enum
			if len(states) != 7 {
				t.Errorf("wave states %d, want the 7 of the contract", len(states))
			}
		})
	}
}
