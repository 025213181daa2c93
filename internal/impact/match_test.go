package impact

import (
	"testing"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/resolve"
)

func TestTakes(t *testing.T) {
	def, err := resolve.ParseRegistry("acme/templates")
	if err != nil {
		t.Fatal(err)
	}
	m := matcher{name: "github.com/acme/templates/web", version: "v1.2.5", digest: "sha256:new", def: def}
	ti := func(tmpl string, policy v1alpha1.UpdatePolicy, resolved, digest string) *v1alpha1.TemplateInstance {
		return &v1alpha1.TemplateInstance{
			Spec:   v1alpha1.TemplateInstanceSpec{Template: tmpl, UpdatePolicy: policy},
			Status: v1alpha1.TemplateInstanceStatus{Resolved: resolved, Digest: digest},
		}
	}
	const running = "github.com/acme/templates/web:v1.2.4"
	for _, tc := range []struct {
		name string
		ti   *v1alpha1.TemplateInstance
		want bool
	}{
		{"short, same minor", ti("web:v1.2", "", running, "sha256:old"), true},
		{"full, Patch", ti("github.com/acme/templates/web:v1.2", v1alpha1.UpdatePatch, running, "sha256:old"), true},
		{"exact version: its patches from it", ti("web:v1.2.4", "", running, "sha256:old"), true},
		{"floor above the version", ti("web:v1.2.6", "", "", ""), false},
		{"major only: v1.0", ti("web:v1", "", "github.com/acme/templates/web:v1.0.3", "sha256:old"), false},
		{"no version: the highest", ti("web", "", running, "sha256:old"), true},
		{"no version, runs a higher", ti("web", "", "github.com/acme/templates/web:v2.0.0", "sha256:old"), false},
		{"never applied", ti("web:v1.2", "", "", ""), true},
		{"Manual", ti("web:v1.2", v1alpha1.UpdateManual, running, "sha256:old"), false},
		{"digest-pinned", ti("web:v1.2@sha256:"+sixtyFour, "", running, "sha256:old"), false},
		{"pre-release named", ti("web:v1.2.5-rc.1", "", running, "sha256:old"), false},
		{"another minor", ti("web:v1.1", "", "github.com/acme/templates/web:v1.1.9", "sha256:old"), false},
		{"another template", ti("api:v1.2", "", "github.com/acme/templates/api:v1.2.4", "sha256:old"), false},
		{"another registry", ti("github.com/other/templates/web:v1.2", "", "github.com/other/templates/web:v1.2.4", "sha256:old"), false},
		{"runs a newer patch", ti("web:v1.2", "", "github.com/acme/templates/web:v1.2.6", "sha256:old"), false},
		{"runs it", ti("web:v1.2", "", "github.com/acme/templates/web:v1.2.5", "sha256:new"), false},
		{"runs it with other content", ti("web:v1.2", "", "github.com/acme/templates/web:v1.2.5", "sha256:old"), true},
	} {
		if got := m.takes(tc.ti); got != tc.want {
			t.Errorf("%s: takes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
