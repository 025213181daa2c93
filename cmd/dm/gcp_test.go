package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/gcp"
)

// dmConfig is a Deployment Manager configuration: a Jinja template with
// an import, a Kubernetes object beside the Google Cloud resources.
var dmConfig = map[string]string{
	"config.yaml": `imports: [{path: net.jinja}]
resources:
- name: net
  type: net.jinja
  properties: {region: us-central1}
- name: settings
  type: ConfigMap
  properties: {data: {project: "{{PROJECT}}"}}
`,
	"net.jinja": `resources:
- name: {{ env["name"] }}-vpc
  type: compute.v1.network
  properties: {autoCreateSubnetworks: false}
- name: {{ env["name"] }}-sub
  type: compute.v1.subnetwork
  properties:
    region: {{ properties["region"] }}
    network: $(ref.{{ env["name"] }}-vpc.selfLink)
    ipCidrRange: 10.0.0.0/16
    description: in {{ env["project"] }}
`,
}

// TestConvert: dm convert's interface contract, in-process.
func TestConvert(t *testing.T) {
	dir := writeTree(t, dmConfig)
	cfg := filepath.Join(dir, "config.yaml")

	r := dmRun(t, nil, "convert", cfg, "--project", "acme-prod")
	if r.code != 0 {
		t.Fatalf("dm convert: exit %d\n%s", r.code, r.stderr)
	}
	var objs []map[string]any
	for _, doc := range strings.Split(r.stdout, "---\n")[1:] {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o["kind"].(string))
		md := o["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if o["kind"] == "ConfigMap" {
			continue
		}
		if ann[gcp.ProjectAnnotation] != "acme-prod" || ann[gcp.DeletionPolicyAnnotation] != "abandon" {
			t.Errorf("%s %s: annotations %v, want the project and abandon", o["kind"], md["name"], ann)
		}
	}
	if want := []string{"ComputeNetwork", "ComputeSubnetwork", "ConfigMap"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if !strings.Contains(r.stdout, "description: in acme-prod") || !strings.Contains(r.stdout, "networkRef:\n    name: net-vpc") {
		t.Errorf("env.project or the reference not converted:\n%s", r.stdout)
	}

	// -o DIR: one file per object; --deletion-policy delete.
	out := filepath.Join(t.TempDir(), "kcc")
	if r := dmRun(t, nil, "convert", cfg, "--project", "p", "--deletion-policy", "delete", "-o", out); r.code != 0 {
		t.Fatalf("dm convert -o: exit %d\n%s", r.code, r.stderr)
	}
	files, _ := os.ReadDir(out)
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if want := []string{"computenetwork-net-vpc.yaml", "computesubnetwork-net-sub.yaml", "configmap-settings.yaml"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "computenetwork-net-vpc.yaml")); strings.Contains(string(b), "deletion-policy") {
		t.Errorf("--deletion-policy delete wrote an annotation:\n%s", b)
	}

	// --list-types: one line per spelling.
	r = dmRun(t, nil, "convert", "--list-types")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != len(gcp.Types()) || !strings.Contains(r.stdout, "compute.v1.instance ") || !strings.Contains(r.stdout, "ComputeInstance") {
		t.Errorf("--list-types: exit %d, %d lines (want %d)", r.code, len(lines), len(gcp.Types()))
	}

	// Failures name type, resource and layout path.
	bad := writeTree(t, map[string]string{
		"config.yaml": dmConfig["config.yaml"],
		"net.jinja":   strings.Replace(dmConfig["net.jinja"], "compute.v1.subnetwork", "compute.v1.subnetworkz", 1),
	})
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"convert", filepath.Join(bad, "config.yaml"), "--project", "p"}, 1, []string{"type compute.v1.subnetworkz", "resource net-sub (net > net-sub)", "did you mean compute.v1.subnetwork"}},
		{[]string{"convert", cfg}, 1, []string{"no project", "--project"}},
		{[]string{"convert", cfg, "--deletion-policy", "keep"}, 2, []string{`--deletion-policy "keep"`}},
		{[]string{"convert"}, 2, []string{"convert needs CONFIG.yaml|REF"}},
		{[]string{"convert", cfg, "--list-types"}, 2, []string{"convert takes no arguments"}},
	} {
		r := dmRun(t, nil, tc.args...)
		if r.code != tc.code {
			t.Errorf("dm %v: exit %d, want %d\n%s", tc.args, r.code, tc.code, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("dm %v: stderr lacks %q:\n%s", tc.args, w, r.stderr)
			}
		}
	}

	// Without --project, gcloud's: CLOUDSDK_CORE_PROJECT, else its
	// active configuration's core/project; --project and env project=
	// come first.
	home := writeTree(t, map[string]string{
		".config/gcloud/active_config":              "work\n",
		".config/gcloud/configurations/config_work": "[compute]\nzone = us-central1-a\n[core]\naccount = me@example.com\nproject = from-gcloud\n",
	})
	for _, tc := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{map[string]string{"HOME": home}, nil, "from-gcloud"},
		{map[string]string{"HOME": home, "CLOUDSDK_CORE_PROJECT": "from-env"}, nil, "from-env"},
		{map[string]string{"HOME": home, "CLOUDSDK_ACTIVE_CONFIG_NAME": "none"}, nil, ""},
		{map[string]string{"HOME": home}, []string{"--project", "flag"}, "flag"},
		{map[string]string{"HOME": home}, []string{"--env", "project=env"}, "env"},
	} {
		r := dmRun(t, tc.vars, append([]string{"convert", cfg}, tc.args...)...)
		switch {
		case tc.want == "" && (r.code != 1 || !strings.Contains(r.stderr, "no project")):
			t.Errorf("%v %v: exit %d, want the error naming --project\n%s", tc.vars, tc.args, r.code, r.stderr)
		case tc.want != "" && (r.code != 0 || !strings.Contains(r.stdout, gcp.ProjectAnnotation+": "+tc.want) || !strings.Contains(r.stdout, "description: in "+tc.want)):
			t.Errorf("%v %v: exit %d, want project %s\n%s%s", tc.vars, tc.args, r.code, tc.want, r.stdout, r.stderr)
		}
	}

	// dm expand keeps the types as written; -o manifest converts.
	r = dmRun(t, nil, "expand", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "type: compute.v1.subnetwork") {
		t.Errorf("dm expand: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = dmRun(t, nil, "expand", cfg, "-o", "manifest", "--project", "p")
	if r.code != 0 || !strings.Contains(r.stdout, "kind: ComputeSubnetwork") || strings.Contains(r.stdout, "deletion-policy") {
		t.Errorf("dm expand -o manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
