package dm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/expand/helm/helmtest"
)

// buildDMHelm returns dm, built with dm-helm beside it as make install
// puts them.
func buildDMHelm(t testing.TB) string {
	t.Helper()
	_, dm := buildBinaries(t)
	return dm
}

// TestChartParityDM is issue 15's contract: dm --registry-dir PREFIX=DIR
// expand REF -o manifest renders a chart version directory as helm
// template does, on helmtest's corpus. Helm template prints every hook; dm
// expands a chart as a first install, so its install hooks (pre-install,
// post-install) are among the objects and hooks of other events and test
// hooks are not: the test compares with helm template --skip-tests less
// the hooks of no install event. Objects compare as canonical JSON, order
// aside. A chart helm refuses, dm refuses too.
func TestChartParityDM(t *testing.T) {
	helm := helmtest.Bin(t)
	dm := buildDMHelm(t)
	env := helmtest.Env(t)
	reg := t.TempDir()
	helmtest.CheckCorpus(t)
	for _, c := range helmtest.Cases {
		copyTree(t, filepath.Join("internal/expand/helm/testdata", c.Dir), filepath.Join(reg, c.Release, "v1"))
	}
	for _, c := range helmtest.Cases {
		t.Run(c.Release, func(t *testing.T) {
			src := filepath.Join("internal/expand/helm/testdata", c.Dir)
			dargs := []string{"--registry-dir", "example.com/helm/parity=" + reg, "expand", c.Release + ":v1", "-o", "manifest"}
			if c.Name != "" {
				dargs = append(dargs, "--name", c.Name)
			}
			dargs = append(dargs, c.Flags(src, helmtest.FlagNames{Namespace: "-n", Values: "--values", Set: "--properties"})...)
			hout, herr := run(t, env, helm, helmtest.TemplateArgs(c, src)...)
			dout, derr := run(t, env, dm, dargs...)
			if c.DMRefuses != "" {
				if herr != "" || !strings.Contains(derr, c.DMRefuses) {
					t.Fatalf("want helm to render and dm to refuse with %q; helm: %q, dm: %q", c.DMRefuses, herr, derr)
				}
				return
			}
			if herr != "" {
				if derr == "" {
					t.Fatalf("helm refuses (%s) but dm does not", herr)
				}
				t.Logf("both refuse: helm: %s; dm: %s", herr, derr)
				return
			}
			if derr != "" {
				t.Fatalf("dm: %s (helm template succeeded)", derr)
			}
			var want, got []string
			for _, o := range helmtest.Objects(t, hout) {
				if o.Hook == "" || strings.Contains(o.Hook, "-install") {
					want = append(want, o.JSON)
				}
			}
			for _, o := range helmtest.Objects(t, dout) {
				got = append(got, o.JSON)
			}
			helmtest.Compare(t, c, "dm expand", want, got)
		})
	}
}

// run runs a program and returns its stdout, and its stderr when it failed.
func run(t *testing.T, env []string, prog string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), strings.TrimSpace(err.Error() + ": " + stderr.String())
	}
	return stdout.String(), ""
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// chartRepository packs the basic chart as web 1.2.0 and 1.3.0 with the
// helm command, indexes them, and serves the repository on loopback.
func chartRepository(t *testing.T, helm string, env []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []string{"1.2.0", "1.3.0"} {
		src := filepath.Join(t.TempDir(), "web")
		copyTree(t, "internal/expand/helm/testdata/charts/basic", src)
		chart := "apiVersion: v2\nname: web\nversion: " + v + "\n"
		if err := os.WriteFile(filepath.Join(src, "Chart.yaml"), []byte(chart), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, e := run(t, env, helm, "package", src, "-d", dir); e != "" {
			t.Fatal(e)
		}
	}
	if _, e := run(t, env, helm, "repo", "index", dir); e != "" {
		t.Fatal(e)
	}
	hs := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestChartResourceDM is issue 15's second contract: dm expand
// CONFIG.yaml --chart-repo URL with a type: helm resource naming repo,
// chart and version renders the highest version the constraint allows,
// its content template's values over its properties; the layout records
// the chart resource with its objects as children. A Jinja and a Python
// template may make chart resources too, and a host not given with
// --chart-repo is not reached.
func TestChartResourceDM(t *testing.T) {
	helm := helmtest.Bin(t)
	dm := buildDMHelm(t)
	env := helmtest.Env(t)
	repo := chartRepository(t, helm, env)
	dir := t.TempDir()
	files := map[string]string{
		"config.yaml": `resources:
- name: site
  type: helm
  repo: ` + repo + `
  chart: web
  version: ~1.2.0
  properties:
    replicaCount: 3
    image: {repository: nginx, tag: "1.0"}
  content: |
    image:
      tag: {{ .properties.image.tag }}-{{ .env.name }}
`,
		"jinja.yaml": "imports:\n- path: site.jinja\nresources:\n- name: j\n  type: site.jinja\n  properties: {repo: \"" + repo + "\"}\n",
		"site.jinja": `resources:
- name: {{ env['name'] }}-chart
  type: helm
  repo: {{ properties['repo'] }}
  chart: web
  version: ">=1.0"
  properties:
    replicaCount: 4
`,
		"python.yaml": "imports:\n- path: site.py\nresources:\n- name: p\n  type: site.py\n  properties: {repo: \"" + repo + "\"}\n",
		"site.py": `def GenerateConfig(context):
    return {"resources": [{
        "name": context.env["name"] + "-chart",
        "type": "helm",
        "repo": context.properties["repo"],
        "chart": "web",
        "version": "1.2.0",
        "properties": {"replicaCount": 5},
    }]}
`,
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "config.yaml")
	out, e := run(t, env, dm, "expand", cfg, "--chart-repo", repo, "-o", "manifest")
	if e != "" {
		t.Fatal(e)
	}
	for _, want := range []string{"name: site-web", "replicas: 3", "image: nginx:1.0-site", "helm.sh/chart: web-1.2.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	out, e = run(t, env, dm, "expand", cfg, "--chart-repo", repo, "-o", "json")
	if e != "" {
		t.Fatal(e)
	}
	var res struct {
		Layout struct {
			Resources []struct {
				Name, Type string
				Resources  []struct{ Name, Type string }
			}
		}
		References []struct{ Ref, Resolved, Version string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if l := res.Layout.Resources; len(l) != 1 || l[0].Name != "site" || l[0].Type != "helm" || len(l[0].Resources) != 3 {
		t.Errorf("layout: %+v", res.Layout)
	}
	if r := res.References; len(r) != 1 || r[0].Version != "1.2.0" || !strings.HasSuffix(r[0].Resolved, "/web-1.2.0.tgz") {
		t.Errorf("references: %+v", r)
	}
	for cfg, want := range map[string]string{"jinja.yaml": "replicas: 4", "python.yaml": "replicas: 5"} {
		out, e := run(t, env, dm, "expand", filepath.Join(dir, cfg), "--chart-repo", repo, "-o", "manifest")
		if e != "" || !strings.Contains(out, want) || !strings.Contains(out, "-chart-web") {
			t.Errorf("%s: want %q\n%s%s", cfg, want, out, e)
		}
	}
	// The same chart from an OCI registry on loopback (go-containerregistry's
	// implementation of the distribution API), pushed by helm; an http://
	// --chart-repo of its host reaches it over plain HTTP.
	reg := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	pkgDir := t.TempDir()
	if _, e := run(t, env, helm, "pull", "web", "--repo", repo, "--version", "1.3.0", "-d", pkgDir); e != "" {
		t.Fatal(e)
	}
	if _, e := run(t, env, helm, "push", filepath.Join(pkgDir, "web-1.3.0.tgz"), "oci://"+host+"/charts", "--plain-http"); e != "" {
		t.Fatal(e)
	}
	ociCfg := filepath.Join(dir, "oci.yaml")
	if err := os.WriteFile(ociCfg, []byte("resources:\n- name: o\n  type: helm\n  url: oci://"+host+"/charts/web:1.3.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, e = run(t, env, dm, "expand", ociCfg, "--chart-repo", reg.URL, "-o", "manifest")
	if e != "" || !strings.Contains(out, "helm.sh/chart: web-1.3.0") || !strings.Contains(out, "name: o-web") {
		t.Errorf("oci: %s%s", out, e)
	}
	// Without --chart-repo the repository's host is not reached.
	_, e = run(t, env, dm, "expand", cfg, "-o", "manifest")
	if !strings.Contains(e, "is not among the allowed chart hosts") {
		t.Errorf("without --chart-repo: %s", e)
	}
}

// TestChartDeployReadsCluster: a chart deployed by dm sees the cluster it
// is deployed to, as under helm install: .Capabilities.KubeVersion is the
// apiserver's version (not the offline default dm expand uses),
// .Capabilities.APIVersions the cluster's, and lookup reads a live object
// with the user's credentials (dm-helm, given dm's kubeconfig).
func TestChartDeployReadsCluster(t *testing.T) {
	t.Parallel()
	dm := buildDMHelm(t)
	env := kubetest.Shared(t)
	ctx := t.Context()
	d := &dmRun{t: t, bin: dm, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, "/api/v1/namespaces/"+d.ns+"/configmaps",
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "existing"}, "data": map[string]any{"color": "blue"}})
	if err != nil || code != http.StatusCreated {
		t.Fatalf("creating the ConfigMap to look up: %d %s %v", code, body, err)
	}
	_, body, err = env.Do(ctx, env.AdminToken, http.MethodGet, "/version", nil)
	if err != nil {
		t.Fatal(err)
	}
	var version struct{ GitVersion string }
	if err := json.Unmarshal(body, &version); err != nil || version.GitVersion == "" {
		t.Fatalf("/version: %s %v", body, err)
	}

	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, "charts", "probe", "v1.0.0", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: probe\nversion: 1.0.0\n")
	write("templates/cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-probe
data:
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  made-up: {{ .Capabilities.APIVersions.Has "example.com/v9" | quote }}
  {{- $cm := lookup "v1" "ConfigMap" .Release.Namespace "existing" }}
  looked-up: {{ if $cm }}{{ $cm.data.color | quote }}{{ else }}"nothing"{{ end }}
`)
	reg := "--registry-dir=github.com/acme/probe=" + dir
	out := d.ok(reg, "expand", "charts/probe:v1", "-o", "manifest")
	if !strings.Contains(out, "kubeVersion: v1.31.0") || !strings.Contains(out, "looked-up: nothing") {
		t.Errorf("dm expand renders offline (Helm's default version, lookup empty):\n%s", out)
	}
	d.ok(reg, "deploy", "charts/probe:v1", "--name", "p")
	code, body, err = env.Do(ctx, env.AdminToken, http.MethodGet, "/api/v1/namespaces/"+d.ns+"/configmaps/p-probe", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("the chart's ConfigMap: %d %s %v", code, body, err)
	}
	var cm struct{ Data map[string]string }
	if err := json.Unmarshal(body, &cm); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kubeVersion": version.GitVersion, "apps": "true", "made-up": "false", "looked-up": "blue"}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("data %s = %q, want %q (all: %v)", k, cm.Data[k], v, cm.Data)
		}
	}
}

// TestChartResourceRegistryd: registryd expands a configuration with a
// type: helm resource (in its sandbox workers, which ask registryd for the
// chart) from a chart repository its --chart-repo names, and refuses one
// from a host it was not given, naming the flag.
func TestChartResourceRegistryd(t *testing.T) {
	helm := helmtest.Bin(t)
	registryd, _ := buildBinaries(t)
	env := helmtest.Env(t)
	repo := chartRepository(t, helm, env)
	config := "resources:\n- name: site\n  type: helm\n  repo: " + repo + "\n  chart: web\n  version: ~1.2.0\n  properties: {replicaCount: 3}\n"
	expand := func(url string) (int, string) {
		body, _ := json.Marshal(map[string]any{"config": config, "deployment": "d", "namespace": "ns"})
		resp, err := http.Post(url+"/v1/expand", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	allowed := startRegistryd(t, registryd, nil, "--registry-dir", "github.com/acme/templates=registry-example", "--chart-repo", repo)
	code, body := expand(allowed)
	if code != http.StatusOK || !strings.Contains(body, `"replicas":3`) || !strings.Contains(body, `1.2.0`) {
		t.Errorf("registryd --chart-repo: %d %s", code, body)
	}
	refused := startRegistryd(t, registryd, nil, "--registry-dir", "github.com/acme/templates=registry-example")
	code, body = expand(refused)
	if code < 400 || code >= 500 || !strings.Contains(body, "chart") {
		t.Errorf("registryd without --chart-repo: %d %s, want a 4xx naming the chart", code, body)
	}
}
