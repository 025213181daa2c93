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
	if want := []string{".dm-convert.json", "computenetwork-net-vpc.yaml", "computesubnetwork-net-sub.yaml", "configmap-settings.yaml"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "computenetwork-net-vpc.yaml")); strings.Contains(string(b), "deletion-policy") {
		t.Errorf("--deletion-policy delete wrote an annotation:\n%s", b)
	}

	// The help names the default once.
	if r := dmRun(t, nil, "convert", "--help"); !strings.Contains(r.stdout, `or delete (default "abandon")`) || strings.Contains(r.stdout, "default abandon") {
		t.Errorf("dm convert --help's --deletion-policy:\n%s", r.stdout)
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

// TestConvertUnresolved: a reference only a live object can fill fails
// dm convert naming the object, field and reference, unless
// --allow-unresolved, which writes it as written with a warning.
func TestConvertUnresolved(t *testing.T) {
	dir := writeTree(t, map[string]string{"config.yaml": `resources:
- name: ip
  type: compute.v1.address
  properties: {region: us-central1}
- name: vm
  type: compute.v1.instance
  properties:
    zone: us-central1-a
    machineType: zones/us-central1-a/machineTypes/e2-small
    disks: [{boot: true, autoDelete: true, initializeParams: {sourceImage: projects/debian-cloud/global/images/family/debian-12}}]
    networkInterfaces: [{network: global/networks/default}]
    metadata: {items: [{key: startup-script, value: "echo $(ref.ip.address)"}]}
- name: cfg
  type: ConfigMap
  properties: {data: {ip: $(ref.ip.address)}}
`})
	cfg := filepath.Join(dir, "config.yaml")
	out := filepath.Join(t.TempDir(), "kcc")
	want := []string{
		"ComputeInstance vm: /spec/metadata/0/value holds $(ref.ip.address), which only the live ComputeAddress ip has (status.observedState.address)",
		"ConfigMap cfg: /data/ip holds $(ref.ip.address), which only the live ComputeAddress ip has (status.observedState.address)",
	}
	for _, args := range [][]string{{"convert", cfg, "--project", "p"}, {"convert", cfg, "--project", "p", "-o", out}} {
		r := dmRun(t, nil, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "2 references only live objects can fill") || !strings.Contains(r.stderr, "--allow-unresolved") {
			t.Errorf("dm %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("dm %v: stderr lacks %q:\n%s", args, w, r.stderr)
			}
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the refused dm convert -o created %s", out)
	}
	r := dmRun(t, nil, "convert", cfg, "--project", "p", "-o", out, "--allow-unresolved")
	if r.code != 0 || strings.Count(r.stderr, "dm: warning: ") != 2 || !strings.Contains(r.stderr, want[0]+": dm deploy fills it in") {
		t.Errorf("--allow-unresolved: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "configmap-cfg.yaml")); !strings.Contains(string(b), "$(ref.ip.address)") {
		t.Errorf("--allow-unresolved did not write the reference:\n%s", b)
	}
}

// TestConvertDir: dm convert -o DIR owns what it writes: a rerun removes
// the files of objects the configuration no longer makes, and says so,
// but never a file it did not write, nor one edited since.
func TestConvertDir(t *testing.T) {
	three := `resources:
- {name: a, type: compute.v1.network, properties: {autoCreateSubnetworks: false}}
- {name: b, type: gcp-types/storage-v1:buckets, properties: {location: US}}
- {name: c, type: ConfigMap, properties: {data: {k: v}}}
`
	dir := writeTree(t, map[string]string{"config.yaml": three})
	cfg := filepath.Join(dir, "config.yaml")
	out := filepath.Join(t.TempDir(), "kcc")
	convert := func() result {
		t.Helper()
		r := dmRun(t, nil, "convert", cfg, "--project", "p", "-o", out)
		if r.code != 0 {
			t.Fatalf("dm convert -o: exit %d\n%s", r.code, r.stderr)
		}
		return r
	}
	names := func() []string {
		ents, _ := os.ReadDir(out)
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}
	convert()
	writeFile(t, filepath.Join(out, "kustomization.yaml"), "resources: []\n") // the user's
	if want := []string{".dm-convert.json", "computenetwork-a.yaml", "configmap-c.yaml", "kustomization.yaml", "storagebucket-b.yaml"}; !slices.Equal(names(), want) {
		t.Fatalf("files %v, want %v", names(), want)
	}
	// b and c leave the configuration; c's file was edited.
	writeFile(t, cfg, "resources:\n- {name: a, type: compute.v1.network, properties: {autoCreateSubnetworks: false}}\n")
	writeFile(t, filepath.Join(out, "configmap-c.yaml"), "# mine now\n")
	r := convert()
	if !strings.Contains(r.stderr, "dm: removed "+filepath.Join(out, "storagebucket-b.yaml")+": the configuration no longer makes its object") ||
		!strings.Contains(r.stderr, "kept "+filepath.Join(out, "configmap-c.yaml")+": the configuration no longer makes its object, but the file was edited") {
		t.Errorf("rerun's stderr:\n%s", r.stderr)
	}
	if want := []string{".dm-convert.json", "computenetwork-a.yaml", "configmap-c.yaml", "kustomization.yaml"}; !slices.Equal(names(), want) {
		t.Errorf("after the rerun: files %v, want %v", names(), want)
	}
	// The edited file is named again until someone removes it.
	if r := convert(); !strings.Contains(r.stderr, "kept "+filepath.Join(out, "configmap-c.yaml")) {
		t.Errorf("second rerun's stderr:\n%s", r.stderr)
	}
	os.Remove(filepath.Join(out, "configmap-c.yaml"))
	if r := convert(); strings.Contains(r.stderr, "configmap-c") || strings.Contains(r.stderr, "removed") {
		t.Errorf("after removing the kept file:\n%s", r.stderr)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConvertDeploymentName: resources named after env["deployment"] need
// --deployment for dm convert and dm expand -o manifest|list (the
// default, the file's name, would make new resources beside DM's); dm
// expand's flat configuration, and configurations whose names do not read
// it, go on as before.
func TestConvertDeploymentName(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"config.yaml": "imports: [vm.jinja]\nresources:\n- {name: vm, type: vm.jinja}\n",
		"vm.jinja":    "resources:\n- name: {{ env['deployment'] }}-net\n  type: compute.v1.network\n  properties: {autoCreateSubnetworks: false}\n",
	})
	cfg := filepath.Join(dir, "config.yaml")
	for _, args := range [][]string{
		{"convert", cfg, "--project", "p"},
		{"convert", cfg, "--project", "p", "-o", filepath.Join(t.TempDir(), "out")},
		{"expand", cfg, "-o", "manifest", "--project", "p"},
		{"expand", cfg, "-o", "list", "--project", "p"},
	} {
		r := dmRun(t, nil, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "without --deployment is \"config\": config-net (compute.v1.network, layout path vm/config-net)") || !strings.Contains(r.stderr, "give --deployment NAME") {
			t.Errorf("dm %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"convert", cfg, "--project", "p", "--deployment", "my-web"},
		{"expand", cfg, "-o", "manifest", "--project", "p", "--deployment", "my-web"},
	} {
		if r := dmRun(t, nil, args...); r.code != 0 || !strings.Contains(r.stdout, "name: my-web-net") {
			t.Errorf("dm %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := dmRun(t, nil, "expand", cfg); r.code != 0 || !strings.Contains(r.stdout, "name: config-net") {
		t.Errorf("dm expand: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestConvertCheckManifest: --check-manifest FILE (gcloud's manifests
// describe output) exits 0 when the objects match DM's resources by name
// and type, and 1 with one line per difference on stdout otherwise; the
// manifest's project is the default one, and its deployment is named when
// --deployment is missing.
func TestConvertCheckManifest(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "gcp", "adopt")
	cfg, man := filepath.Join(src, "config.yaml"), filepath.Join(src, "manifest-my-web.yaml")
	r := dmRun(t, nil, "convert", cfg, "--deployment", "my-web", "--check-manifest", man)
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "project acme-prod (from the selfLink of "+man) || !strings.Contains(r.stderr, "the 3 resources of deployment my-web have objects of the same Google Cloud names and types") {
		t.Errorf("a matching manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = dmRun(t, nil, "convert", cfg, "--check-manifest", man)
	if r.code != 1 || !strings.Contains(r.stderr, "config-vm (compute.v1.instance, layout path web/config-vm)") || !strings.Contains(r.stderr, "is the manifest of deployment my-web: --deployment my-web") {
		t.Errorf("without --deployment: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = dmRun(t, nil, "convert", cfg, "--deployment", "my-web", "--project", "other", "--check-manifest", man)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 1 || len(lines) != 3 || !strings.HasPrefix(lines[1], "moved: compute.v1.instance my-web-vm: Deployment Manager's is in us-central1-a of project acme-prod, dm's in us-central1-a of project other") ||
		!strings.Contains(r.stderr, "3 differences between the objects dm makes and deployment my-web's resources") {
		t.Errorf("another project: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// With -o DIR: written only when it matches.
	out := filepath.Join(t.TempDir(), "kcc")
	if r := dmRun(t, nil, "convert", cfg, "--deployment", "my-web", "--project", "other", "--check-manifest", man, "-o", out, "--allow-unresolved"); r.code != 1 {
		t.Errorf("-o with differences: exit %d", r.code)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("-o wrote files although the manifest differs")
	}
	if r := dmRun(t, nil, "convert", cfg, "--deployment", "my-web", "--check-manifest", man, "-o", out, "--allow-unresolved"); r.code != 0 {
		t.Errorf("-o of a match: exit %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(out, "computeinstance-my-web-vm.yaml")); err != nil || !strings.Contains(string(b), "project-id: acme-prod") {
		t.Errorf("-o of a match: %v\n%s", err, b)
	}
	// A file that is not a manifest.
	if r := dmRun(t, nil, "convert", cfg, "--deployment", "my-web", "--check-manifest", cfg); r.code != 1 || !strings.Contains(r.stderr, "it has no expandedConfig (want what gcloud deployment-manager manifests describe") {
		t.Errorf("a configuration as the manifest: exit %d\n%s", r.code, r.stderr)
	}
	if r := dmRun(t, nil, "convert", cfg, "--check-manifest", filepath.Join(src, "missing.yaml")); r.code != 1 || !strings.Contains(r.stderr, "--check-manifest: open") {
		t.Errorf("a missing manifest: exit %d\n%s", r.code, r.stderr)
	}
}
