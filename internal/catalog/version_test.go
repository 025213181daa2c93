package catalog

import (
	"testing"
	"time"

	"github.com/dmhq/dm/internal/api"
)

func TestYAMLFlow(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{"ClusterIP", "ClusterIP"},
		{"", `""`},
		{"80", `"80"`},
		{"yes", `"yes"`},
		{"a: b", "'a: b'"},
		{"x, y", `"x, y"`},
		{"line\nbreak", `"line\nbreak"`},
		{int64(22), "22"},
		{1.5, "1.5"},
		{true, "true"},
		{nil, "null"},
		{[]any{int64(22), int64(80)}, "[22, 80]"},
		{[]any{}, "[]"},
		{map[string]any{}, "{}"},
		{map[string]any{"tier": "web", "app": []any{"a", "b c"}}, "{app: [a, b c], tier: web}"},
		{[]any{map[string]any{"name": "x", "value": "1"}}, `[{name: x, value: "1"}]`},
	}
	for _, tt := range tests {
		if got := yamlFlow(tt.v); got != tt.want {
			t.Errorf("yamlFlow(%#v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestDescribeFlat(t *testing.T) {
	// A chart's values by dotted path: parents get rows, and a property
	// with a default is not required of the caller.
	tv := &api.TemplateVersion{Properties: []api.Property{
		{Name: "image.repository", Type: "string", Default: "nginx", Required: true},
		{Name: "image.tag", Type: "string"},
		{Name: "name", Type: "string"},
		{Name: "a.b.c", Type: "integer"},
	}, Required: []string{"name"}}
	rows, fields := describe(tv)
	var got []string
	for _, r := range rows {
		req := ""
		if r.Required {
			req = " required"
		}
		got = append(got, r.Path+"@"+string(rune('0'+r.Depth))+req)
	}
	want := []string{"image@0", "image.repository@1", "image.tag@1", "name@0 required", "a@0", "a.b@1", "a.b.c@2"}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rows %v, want %v", got, want)
		}
	}
	if len(fields) != 4 {
		t.Errorf("%d form fields, want one per value (4)", len(fields))
	}
}

func TestDeployCommand(t *testing.T) {
	vp := &versionPage{Deploy: "dm deploy github.com/acme/templates/x:v1.0.0", Props: []propRow{
		{Path: "image", Required: true}, {Path: "replicas"}, {Path: "db.adminPassword", Required: true},
	}}
	v := versionView{versionPage: vp, Example: &ExampleResult{GCP: true}}
	want := "dm deploy github.com/acme/templates/x:v1.0.0 --project PROJECT_ID --properties image=IMAGE --properties db.adminPassword=ADMIN_PASSWORD"
	if got := v.DeployCommand(); got != want {
		t.Errorf("DeployCommand() = %q, want %q", got, want)
	}
	v.Example = nil
	vp.Props = nil
	if got := v.DeployCommand(); got != vp.Deploy {
		t.Errorf("DeployCommand() = %q, want %q", got, vp.Deploy)
	}
}

func TestSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{time.Second, "1 second ago"},
		{5 * time.Second, "5 seconds ago"},
		{90 * time.Second, "1 minute ago"},
		{3 * time.Hour, "3 hours ago"},
		{47 * time.Hour, "47 hours ago"},
		{72 * time.Hour, "3 days ago"},
		{90 * 24 * time.Hour, "on 2026-09-02"},
		{-time.Minute, "just now"},
	}
	for _, tt := range tests {
		if got := since(now.Add(-tt.ago), now); got != tt.want {
			t.Errorf("since(-%s) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := since(time.Time{}, now); got != "never" {
		t.Errorf("since(zero) = %q", got)
	}
}
