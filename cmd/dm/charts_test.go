package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// chartRepo is a registry holding one chart, web v1.
var chartRepo = map[string]string{
	"web/v1/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
	"web/v1/values.yaml": "greeting: hello\nreplicas: 1\n",
	"web/v1/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  replicas: {{ .Values.replicas | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  {{- if .Values.strict }}
  must: {{ required "must is required when strict" .Values.must }}
  {{- end }}
`,
}

// TestChartSandboxed expands a chart of a GitHub registry, whose
// templates dm expands in a sandboxed worker: the worker cannot start
// dm-helm, so it forwards the chart to dm, which renders it in dm-helm.
// The result is the in-process one, and a chart's error keeps its file
// and line.
func TestChartSandboxed(t *testing.T) {
	helmBin, renderBin := chartPrograms.Paths(t)
	m := fstest.MapFS{}
	for name, content := range chartRepo {
		m[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	gh := githubtest.New(map[string]string{"acme/tpl": githubtest.NewRepoFS(t, m)})
	defer gh.Close()
	vars := map[string]string{"DM_HELM": helmBin, "DM_HELM_RENDER": renderBin}
	args := []string{"--registry", "acme/tpl", "--github-api", gh.URL, "--cache-dir", t.TempDir(), "expand", "web:v1", "-o", "manifest", "-n", "shop", "--properties", "replicas=3", "--kube-version", "v1.30.2"}
	sandboxed := dmRun(t, vars, args...)
	if sandboxed.code != 0 {
		t.Fatalf("%+v", sandboxed)
	}
	for _, want := range []string{"name: web-cm", "namespace: shop", "greeting: hello", `replicas: "3"`, "kube: v1.30.2"} {
		if !strings.Contains(sandboxed.stdout, want) {
			t.Errorf("no %q in\n%s", want, sandboxed.stdout)
		}
	}
	inProcess := dmRun(t, vars, append(args, "--no-sandbox")...)
	if inProcess.code != 0 || inProcess.stdout != sandboxed.stdout {
		t.Errorf("sandboxed and in-process differ:\n%s\n---\n%+v", sandboxed.stdout, inProcess)
	}
	// A configuration's type: helm resource naming the registry's chart,
	// its content's values over its properties.
	cfg := filepath.Join(t.TempDir(), "site.yaml")
	config := "resources:\n- name: site\n  type: helm\n  chart: web:v1\n  properties: {replicas: 2}\n  content: |\n    greeting: hi-{{ .env.name }}\n"
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	r := dmRun(t, vars, append(args[:6:6], "expand", cfg, "-o", "manifest")...)
	if r.code != 0 || !strings.Contains(r.stdout, "name: site-cm") || !strings.Contains(r.stdout, "greeting: hi-site") || !strings.Contains(r.stdout, `replicas: "2"`) {
		t.Errorf("a chart resource: %+v", r)
	}
	bad := dmRun(t, vars, append(args, "--properties", "strict=true")...)
	if bad.code != 1 || !strings.Contains(bad.stderr, "web/templates/cm.yaml:11") || !strings.Contains(bad.stderr, "must is required when strict") {
		t.Errorf("a chart's error: %+v", bad)
	}
}

// TestChartWithoutDMHelm: without dm-helm a chart is an error saying what
// to install, and commands that meet no chart do not need it.
func TestChartWithoutDMHelm(t *testing.T) {
	dir := writeTree(t, chartRepo)
	vars := map[string]string{"DM_HELM": filepath.Join(t.TempDir(), "dm-helm")}
	r := dmRun(t, vars, "--registry-dir", "github.com/acme/tpl="+dir, "expand", "web:v1", "-o", "manifest")
	if r.code != 1 || !strings.Contains(r.stderr, "go install github.com/dmhq/dm/cmd/dm-helm") {
		t.Errorf("%+v", r)
	}
	r = dmRun(t, vars, "--registry-dir", "github.com/acme/tpl="+dir, "describe", "web:v1")
	if r.code != 0 {
		t.Errorf("describe without dm-helm: %+v", r)
	}
}

// TestInitHelmChart: dm init --lang helm scaffolds a chart version that dm
// lint --expand passes and whose example makes a Deployment and a Service.
func TestInitHelmChart(t *testing.T) {
	helmBin, renderBin := chartPrograms.Paths(t)
	vars := map[string]string{"DM_HELM": helmBin, "DM_HELM_RENDER": renderBin}
	dir := t.TempDir()
	r := dmRun(t, vars, "init", "--dir", dir, "--lang", "helm", "app-helm")
	if r.code != 0 {
		t.Fatalf("dm init --lang helm: %+v", r)
	}
	for _, f := range []string{"Chart.yaml", "values.yaml", "values.schema.json", "templates/deployment.yaml", "templates/service.yaml", "example.yaml"} {
		if !strings.Contains(r.stdout, filepath.Join(dir, "app-helm", "v0.1.0", f)+"\n") {
			t.Errorf("dm init did not write %s:\n%s", f, r.stdout)
		}
	}
	if r := dmRun(t, vars, "lint", "--expand", dir); r.code != 0 {
		t.Fatalf("dm lint --expand: %+v", r)
	}
	r = dmRun(t, vars, "--registry-dir", "github.com/x/y="+dir, "expand", filepath.Join(dir, "app-helm", "v0.1.0", "example.yaml"), "-o", "manifest")
	if r.code != 0 || strings.Count(r.stdout, "\nkind: ") != 2 || !strings.Contains(r.stdout, "replicas: 2") || !strings.Contains(r.stdout, "name: app-helm\n") {
		t.Errorf("example: %+v", r)
	}
	// A schema violation is Helm's error, naming the value.
	r = dmRun(t, vars, "--registry-dir", "github.com/x/y="+dir, "expand", "app-helm:v0.1", "--properties", "replicas=-1")
	if r.code != 1 || !strings.Contains(r.stderr, "replicas") {
		t.Errorf("a schema violation: %+v", r)
	}
}

// TestDefaultKubeVersion: dm's --kube-version default is Helm's offline
// one, which dm cannot name itself without linking the renderer.
func TestDefaultKubeVersion(t *testing.T) {
	if defaultKubeVersion != helm.DefaultKubeVersion {
		t.Errorf("--kube-version defaults to %s, helm.DefaultKubeVersion is %s", defaultKubeVersion, helm.DefaultKubeVersion)
	}
}
