package instance

import (
	"errors"
	"testing"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

func TestUser(t *testing.T) {
	ti := func(sa string) *v1alpha1.TemplateInstance {
		ti := &v1alpha1.TemplateInstance{}
		ti.Namespace, ti.Spec.ServiceAccountName = "shop", sa
		return ti
	}
	for _, tc := range []struct {
		sa, def, want string
		err           error
	}{
		{"deployer", "", "system:serviceaccount:shop:deployer", nil},
		{"deployer", "dm", "system:serviceaccount:shop:deployer", nil},
		{"", "dm", "system:serviceaccount:shop:dm", nil},
		{"", "", "", ErrNoAccount},
	} {
		got, err := User(ti(tc.sa), tc.def)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("User(%q, %q) = %q, %v; want %q, %v", tc.sa, tc.def, got, err, tc.want, tc.err)
		}
	}
}

func TestSource(t *testing.T) {
	ti := &v1alpha1.TemplateInstance{Spec: v1alpha1.TemplateInstanceSpec{Template: "web:v1.2", Env: map[string]string{"tier": "prod"},
		GCP: &v1alpha1.GCPSpec{Project: "acme", DeletionPolicy: v1alpha1.GCPAbandon}}}
	src := Source(ti, map[string]any{"size": "small"}, "acme/templates", "https://registryd")
	if src.Input.Ref != "web:v1.2" || src.Input.Registry != "acme/templates" || src.Input.Server != "https://registryd" ||
		src.Properties["size"] != "small" || src.Env["tier"] != "prod" || src.Project != "acme" || src.DeletionPolicy != "abandon" {
		t.Errorf("Source: %+v", src)
	}
	if p := GCPDeletionPolicy(&v1alpha1.TemplateInstance{}); p != "delete" {
		t.Errorf("default deletion policy %q, want delete", p)
	}
}
