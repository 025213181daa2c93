package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"net/http/httptest"

	"sigs.k8s.io/yaml"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/server"
)

// expandJSON is the interface contract's shape of dm expand -o json.
type expandJSON struct {
	Config struct {
		Resources []struct {
			Name       string         `json:"name"`
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		} `json:"resources"`
	} `json:"config"`
	Layout struct {
		Resources []map[string]any `json:"resources"`
	} `json:"layout"`
	References []struct {
		Ref, Resolved, Version, Digest string
	} `json:"references"`
}

func decodeExpand(t *testing.T, s string) expandJSON {
	t.Helper()
	var out expandJSON
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return out
}

func serveExample(t *testing.T) string {
	t.Helper()
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(dm.ExampleRegistry())}
	if err := reg.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry(dm.ExampleRegistryPrefix)
	hs := httptest.NewServer(server.New(server.Options{Resolver: resolve.New(def, reg)}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestExpandRef(t *testing.T) {
	url := serveExample(t)
	for _, mode := range []struct {
		name string
		args []string
	}{{"in-process", nil}, {"server", []string{"--server", url}}} {
		t.Run(mode.name, func(t *testing.T) {
			args := append(append([]string{}, mode.args...), "expand", "redis:v1.1", "--properties", "replicas=3,port=7000", "-o", "json")
			r := dmRun(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			out := decodeExpand(t, r.stdout)
			if len(out.Config.Resources) == 0 || len(out.Layout.Resources) != 1 {
				t.Fatalf("config %d resources, layout %d", len(out.Config.Resources), len(out.Layout.Resources))
			}
			top := out.Layout.Resources[0]
			props, _ := top["properties"].(map[string]any)
			if top["name"] != "redis" || top["type"] != "redis:v1.1" || props["replicas"] != float64(3) || props["image"] == nil {
				t.Errorf("layout top = %v (schema defaults and typed properties expected)", top)
			}
			if len(out.References) != 1 || out.References[0].Resolved != "github.com/acme/templates/redis:v1.1.0" || !strings.HasPrefix(out.References[0].Digest, "sha256:") {
				t.Errorf("references = %+v", out.References)
			}
			if !strings.Contains(r.stdout, `"port": 7000`) {
				t.Errorf("port 7000 not rendered as a number:\n%s", r.stdout)
			}
		})
	}
}

func TestExpandConfigFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"app.yaml": `imports:
- path: helpers/cm.jinja
  name: cm
resources:
- name: settings
  type: cm
  properties: {mode: prod}
- name: cache
  type: redis:v1
`,
		"helpers/cm.jinja": `resources:
- name: {{ env["name"] }}-cm
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: {{ env["deployment"] }}-{{ env["name"] }}}
    data: {mode: {{ properties["mode"] }}}
`,
	}
	for p, c := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	r := dmRun(t, nil, "expand", filepath.Join(dir, "app.yaml"), "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := decodeExpand(t, r.stdout)
	first := out.Config.Resources[0]
	if first.Name != "settings-cm" || first.Type != "ConfigMap" {
		t.Fatalf("first resource = %+v", first)
	}
	if md := first.Properties["metadata"].(map[string]any); md["name"] != "app-settings" {
		t.Errorf("env.deployment/env.name not passed: %v", md)
	}
	// YAML by default: the config alone; with --layout the whole result.
	r = dmRun(t, nil, "expand", filepath.Join(dir, "app.yaml"))
	if r.code != 0 || !strings.HasPrefix(r.stdout, "resources:") || strings.Contains(r.stdout, "layout:") {
		t.Errorf("default output:\n%s\n%s", r.stdout, r.stderr)
	}
	r = dmRun(t, nil, "expand", filepath.Join(dir, "app.yaml"), "--layout")
	if r.code != 0 || !strings.Contains(r.stdout, "layout:") || !strings.Contains(r.stdout, "references:") {
		t.Errorf("--layout output:\n%s\n%s", r.stdout, r.stderr)
	}
	// An import outside the import root (here: the configuration's
	// directory, no git work tree above it) is refused.
	os.WriteFile(filepath.Join(filepath.Dir(dir), "x.jinja"), []byte("resources: []\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("imports: [{path: ../x.jinja}]\nresources: []\n"), 0o644)
	r = dmRun(t, nil, "expand", filepath.Join(dir, "bad.yaml"))
	if r.code == 0 || !strings.Contains(r.stderr, "outside the import root") {
		t.Errorf("escaping import: %d %s", r.code, r.stderr)
	}
}

// TestExpandDMImports: DM's import model on the command line (issue 7):
// string imports, ../ inside the import root (the git work tree or
// --import-root), a template's schema and the schema's own imports,
// recursively, looked up by name; symlinks may not leave the root; --env.
func TestExpandDMImports(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		".git/HEAD": "ref: refs/heads/main\n",
		"deploy/app.yaml": `imports:
- ../lib/web.jinja
- path: ../lib/net.py
  name: net
resources:
- name: site
  type: ../lib/web.jinja
  properties: {n: 2}
- name: vpc
  type: net
- name: disk
  type: compute.v1.disk
  properties: {sizeGb: 10}
`,
		"lib/web.jinja": `{% import 'macros' as m %}
resources:
- name: {{ env["name"] }}
  type: ConfigMap
  properties:
    data: {label: "{{ m.label(env['project']) }}", n: "{{ properties['n'] }}", user: "{{ env['team'] }}", y: "{{ properties['y'] }}"}
`,
		"lib/web.jinja.schema": `info: {title: Web, author: someone, version: 1.0}
imports:
- path: helpers/macros.jinja
  name: macros
properties:
  n: {type: integer}
  y: {type: string, default: yes-string}
`,
		"lib/helpers/macros.jinja": `{% macro label(p) %}p-{{ p }}{% endmacro %}`,
		"lib/net.py": `def GenerateConfig(context):
  return {"resources": [{"name": "net", "type": "compute.v1.network", "properties": {"project": context.env["project"]}}]}
`,
		"outside.jinja": "resources: []\n",
	}
	for p, c := range files {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(c), 0o644)
	}
	cfg := filepath.Join(root, "deploy", "app.yaml")
	r := dmRun(t, nil, "expand", cfg, "-o", "json", "--deployment", "d", "--env", "project=acme", "--env", "team=core")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := decodeExpand(t, r.stdout)
	got := map[string]any{}
	for _, res := range out.Config.Resources {
		got[res.Name] = res.Properties
	}
	want := map[string]any{
		"site": map[string]any{"data": map[string]any{"label": "p-acme", "n": "2", "user": "core", "y": "yes-string"}},
		"net":  map[string]any{"project": "acme"},
		"disk": map[string]any{"sizeGb": int64(10)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) { // numbers decode as the client's type
		t.Errorf("got %v\nwant %v", got, want)
	}

	tests := []struct {
		name string
		args []string
		link [2]string // symlink to make: target (relative to root), link
		want string
	}{
		{name: "import root narrower than the tree", args: []string{"--import-root", filepath.Join(root, "deploy")}, want: "outside the import root"},
		{name: "symlink leaving the root", args: []string{"--import-root", filepath.Join(root, "lib")}, link: [2]string{"outside.jinja", "lib/link.jinja"}, want: "outside the import root"},
		{name: "bad --env", args: []string{"--env", "novalue"}, want: "want KEY=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			if tt.link[0] != "" {
				os.Symlink(filepath.Join(root, tt.link[0]), filepath.Join(root, tt.link[1]))
				c = filepath.Join(root, "lib", "cfg.yaml")
				os.WriteFile(c, []byte("imports: [link.jinja]\nresources: [{name: a, type: link.jinja}]\n"), 0o644)
			}
			r := dmRun(t, nil, append([]string{"expand", c}, tt.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	cli := filepath.Join(t.TempDir(), "cli.yaml")
	if err := os.WriteFile(cli, []byte("resources:\n- name: cli\n  type: common/web:v1.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"expand", "redis:v1.3"}, "v1.3 not found; available:"},
		{[]string{"expand", "redis:v1", "--properties", "port=x"}, "properties.port: expected integer, got string"},
		// Without a terminal the missing required properties are listed
		// with their descriptions (TestPrompt has the terminal).
		{[]string{"expand", "apps/gitea:v1"}, "1 required property without a value (give them with --properties KEY=VALUE or --values FILE, or run on a terminal to be asked):\n  domain (string): Host name Gitea is served at"},
		{[]string{"expand", "redis:v1", "--properties", "nokey"}, "want KEY=VALUE"},
		{[]string{"expand", "redis:v1", "--properties", "zone:europe-west1-b"}, `"zone:europe-west1-b": want KEY=VALUE: dm takes zone=europe-west1-b where gcloud took zone:europe-west1-b`},
		// A configuration's properties are keyed by resource: a key that
		// names none is the mistake, not the property left without one.
		{[]string{"expand", cli, "--properties", "image=busybox"}, `--properties "image": the configuration has no resource "image"; with a configuration, --properties and --values are keyed by resource name (--properties cli.image=VALUE sets property image of resource cli; resources: cli)`},
		{[]string{"--github-api", "http://127.0.0.1:1/", "expand", "github.com/acme/templatez/redis:v1"}, "did you mean github.com/acme/templates/redis:v1, of a configured registry?"},
		{[]string{"expand", "commn/web:v1.2"}, `has no collection "commn" (collections: (root), apps, charts, common, gcp); did you mean github.com/acme/templates/common/web:v1.2?`},
		{[]string{"expand", "redis:v1", "--values", "/nonexistent.yaml"}, "--values"},
	}
	for _, tt := range tests {
		r := dmRun(t, nil, tt.args...)
		if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", tt.args, r.code, r.stdout, r.stderr, tt.want)
		}
	}
}

func TestProcess(t *testing.T) {
	tmpl := filepath.Join("..", "..", "registry-example", "postgres", "v1.1.0", "postgres.yaml")
	r := dmRun(t, nil, "process", "-f", tmpl, "-p", "DATABASE_SERVICE_NAME=db", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Kind != "List" || len(list.Items) == 0 {
		t.Fatalf("not a List: %v\n%s", err, r.stdout)
	}
	if name := list.Items[0]["metadata"].(map[string]any)["name"]; name != "db" {
		t.Errorf("parameter not substituted: name = %v", name)
	}
	// JSON is the default, as with oc process.
	if r := dmRun(t, nil, "process", "-f", tmpl); r.code != 0 || !strings.HasPrefix(r.stdout, "{") {
		t.Errorf("default output: %s %s", r.stdout, r.stderr)
	}
	if r := dmRun(t, nil, "process", "-f", tmpl, "--raw-template", "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "kind: Template") {
		t.Errorf("--raw-template: %s %s", r.stdout, r.stderr)
	}
	pf := filepath.Join(t.TempDir(), "params")
	os.WriteFile(pf, []byte("DATABASE_SERVICE_NAME=fromfile\n"), 0o644)
	if r := dmRun(t, nil, "process", "-f", tmpl, "--param-file", pf); r.code != 0 || !strings.Contains(r.stdout, `"fromfile"`) {
		t.Errorf("--param-file: %s %s", r.stdout, r.stderr)
	}
	r = dmRun(t, nil, "process", "-f", tmpl, "-p", "NOPE=1", "-p", "ALSO=2")
	if r.code == 0 || !strings.Contains(r.stderr, "unknown parameters: ALSO, NOPE") {
		t.Errorf("unknown parameters: %d %s", r.code, r.stderr)
	}
	if r := dmRun(t, nil, "process"); r.code != 2 {
		t.Errorf("no -f: exit %d, want 2 (usage)", r.code)
	}
}

var _ api.Expander = (*api.Client)(nil)

// References reach only the hosts a registry is configured for: dm never
// reads another host's reference from GitHub.
func TestForeignHostsNotFetched(t *testing.T) {
	r := dmRun(t, nil, "--github-api", "http://127.0.0.1:1/", "resolve", "evil.example/a/b/t:v1")
	if r.code == 0 || !strings.Contains(r.stderr, "registry evil.example/a/b is not configured") {
		t.Errorf("foreign host: exit %d, %s", r.code, r.stderr)
	}
	r = dmRun(t, nil, "--registry", "ghe.example/a/b", "resolve", "t:v1")
	if r.code == 0 || !strings.Contains(r.stderr, "give its API with --github-api") {
		t.Errorf("--registry on another host: exit %d, %s", r.code, r.stderr)
	}
}

func TestExpandURLTypes(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte("resources:\n- name: cache\n  type: https://raw.githubusercontent.com/acme/templates/main/redis/v1/redis.jinja\n"), 0o644)
	r := dmRun(t, nil, "expand", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "--allow-urls") {
		t.Errorf("URL type without --allow-urls: exit %d, %s", r.code, r.stderr)
	}
	r = dmRun(t, nil, "expand", cfg, "--allow-urls", "-o", "json")
	if r.code != 0 {
		t.Fatalf("--allow-urls: exit %d, %s", r.code, r.stderr)
	}
	if out := decodeExpand(t, r.stdout); len(out.References) != 1 || out.References[0].Resolved != "github.com/acme/templates/redis:v1.0.2" {
		t.Errorf("references = %+v", out.References)
	}
}

func TestLintContent(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"badschema/v1/badschema.jinja":        "resources: []\n",
		"badschema/v1/badschema.jinja.schema": "properties:\n  a: {type: integr}\n",
		"badschema/v1/example.yaml":           "resources: []\n",
		"notatemplate/v1/notatemplate.yaml":   "kind: ConfigMap\napiVersion: v1\n",
		"notatemplate/v1/example.yaml":        "resources: []\n",
		"badexample/v1/badexample.jinja":      "resources: []\n",
		"badexample/v1/example.yaml":          "resources: {not: a list}\n",
		"broken/v1/broken.jinja":              "resources:\n- name: x\n  type: {{ nosuch() }}\n",
		"broken/v1/example.yaml":              "resources:\n- name: b\n  type: broken:v1\n",
		"good/v1/good.jinja":                  "resources:\n- name: {{ env['name'] }}\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n",
		"good/v1/example.yaml":                "resources:\n- name: g\n  type: good:v1\n",
		"dupkeys/v1/dupkeys.jinja":            "resources: []\n",
		"dupkeys/v1/dupkeys.jinja.schema":     "properties:\n  a: {type: string}\n  a: {type: integer}\n",
		"dupkeys/v1/example.yaml":             "resources: []\nresources: []\n",
	})
	r := dmRun(t, nil, "lint", dir)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"badschema/v1: error: badschema.jinja.schema",
		"notatemplate/v1: error: notatemplate.yaml is not a kind: Template",
		"badexample/v1: error: example.yaml",
		`dupkeys/v1: warning: dupkeys.jinja.schema:3: mapping key "a" is repeated; the last value is kept, as PyYAML does`,
		`dupkeys/v1: warning: example.yaml:2: mapping key "resources" is repeated`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("lint output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "broken/v1") || strings.Contains(r.stdout, "good/v1") {
		t.Errorf("without --expand, examples are only parsed:\n%s", r.stdout)
	}
	r = dmRun(t, nil, "lint", "--expand", dir)
	if !strings.Contains(r.stdout, "broken/v1: error: example.yaml does not expand") || strings.Contains(r.stdout, "good/v1") {
		t.Errorf("--expand output:\n%s", r.stdout)
	}
}

// An OpenShift template without a schema is described by its parameters.
func TestDescribeOpenShiftParameters(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"db/v1/db.yaml": `kind: Template
apiVersion: v1
metadata: {name: db, annotations: {description: A database.}}
parameters:
- {name: NAME, description: Service name., value: db, required: true}
- {name: PASSWORD, generate: expression, from: '[a-z]{8}'}
- {name: PORT, type: int, value: "5432"}
objects: []
`,
		"db/v1/example.yaml": "resources: []\n",
	})
	r := dmRun(t, nil, "--registry-dir", "github.com/x/y="+dir, "describe", "db:v1", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var tv api.TemplateVersion
	if err := json.Unmarshal([]byte(r.stdout), &tv); err != nil {
		t.Fatal(err)
	}
	if tv.Title != "db" || tv.Description != "A database." || len(tv.Properties) != 3 {
		t.Fatalf("described as %+v", tv)
	}
	want := []api.Property{
		{Name: "NAME", Type: "string", Default: "db", Description: "Service name.", Required: true},
		{Name: "PASSWORD", Type: "string", Default: "generated: [a-z]{8}"},
		{Name: "PORT", Type: "int", Default: "5432"},
	}
	for i, p := range want {
		if tv.Properties[i] != p {
			t.Errorf("property %d = %+v, want %+v", i, tv.Properties[i], p)
		}
	}
}

// TestExpandManifest checks the kubectl-ready outputs: a "---" stream of
// objects in dependency order, and a kind: List.
func TestExpandManifest(t *testing.T) {
	r := dmRun(t, nil, "expand", "redis:v1", "-o", "manifest")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var kinds []string
	for _, doc := range strings.Split(r.stdout, "---\n")[1:] {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("document %q: %v", doc, err)
		}
		md, _ := o["metadata"].(map[string]any)
		if o["apiVersion"] == nil || md["name"] == nil {
			t.Errorf("document without apiVersion or name: %v", o)
		}
		kinds = append(kinds, o["kind"].(string))
	}
	if len(kinds) < 2 || !strings.HasPrefix(r.stdout, "---\n") {
		t.Fatalf("manifest kinds %v; output:\n%s", kinds, r.stdout)
	}

	r = dmRun(t, nil, "expand", "redis:v1", "-o", "list")
	var list struct {
		Kind  string
		Items []map[string]any
	}
	if err := yaml.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil || list.Kind != "List" || len(list.Items) != len(kinds) {
		t.Fatalf("-o list = %d %v %+v, want a List of %d items", r.code, err, list, len(kinds))
	}

	if r := dmRun(t, nil, "templates", "-o", "manifest"); r.code != 2 || !strings.Contains(r.stderr, "for dm expand") {
		t.Errorf("dm templates -o manifest = %d %q, want a usage error", r.code, r.stderr)
	}

	// A primitive that is not a Kubernetes object cannot be in a manifest.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("resources:\n- {name: vm, type: Widget, properties: {zone: z}}\n"), 0o644)
	if r := dmRun(t, nil, "expand", cfg, "-o", "manifest"); r.code != 1 || !strings.Contains(r.stderr, `vm: type "Widget" is not a Kubernetes kind`) {
		t.Errorf("manifest of a DM primitive = %d %q, want the resource named", r.code, r.stderr)
	}
}

// TestInitScaffoldsLintClean scaffolds a template in every language and
// checks that dm lint --expand passes and each example makes two objects.
func TestInitScaffoldsLintClean(t *testing.T) {
	dir := t.TempDir()
	for _, lang := range []string{"jinja", "py", "gotmpl", "openshift"} {
		if r := dmRun(t, nil, "init", "--dir", dir, "--lang", lang, "app-"+lang); r.code != 0 {
			t.Fatalf("dm init --lang %s: exit %d: %s", lang, r.code, r.stderr)
		}
	}
	if r := dmRun(t, nil, "init", "--dir", dir, "common/web"); r.code != 0 {
		t.Fatalf("dm init common/web: exit %d: %s", r.code, r.stderr)
	}
	if r := dmRun(t, nil, "lint", "--expand", dir); r.code != 0 {
		t.Fatalf("dm lint --expand of the scaffolds: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, ex := range []string{"app-jinja", "app-py", "app-gotmpl", "app-openshift", "common/web"} {
		r := dmRun(t, nil, "--registry-dir", "github.com/x/y="+dir, "expand", filepath.Join(dir, ex, "v0.1.0", "example.yaml"), "-o", "manifest")
		if r.code != 0 || strings.Count(r.stdout, "\nkind: ") != 2 {
			t.Errorf("%s example: exit %d, want a Deployment and a Service:\n%s%s", ex, r.code, r.stdout, r.stderr)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"init", "--dir", dir, "app-py"}, 1, "exists already"},
		{[]string{"init", "--dir", dir, "--lang", "ruby", "x"}, 2, "--lang"},
		{[]string{"init", "--dir", dir, "Bad_Name"}, 2, "not a valid name"},
		{[]string{"init", "--dir", dir, "a/b/c"}, 2, "COLLECTION/TEMPLATE"},
		{[]string{"init"}, 2, "init needs [COLLECTION/]TEMPLATE (usage: dm init [COLLECTION/]TEMPLATE)"},
	} {
		if r := dmRun(t, nil, tt.args...); r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("dm %v = %d %q, want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}

func TestShow(t *testing.T) {
	url := serveExample(t)
	for _, mode := range [][]string{nil, {"--server", url}} {
		r := dmRun(t, nil, append(mode, "show", "redis:v1")...)
		if r.code != 0 || !strings.Contains(r.stdout, "resources:") {
			t.Errorf("dm %v show redis:v1 = %d %q %q, want the template file", mode, r.code, r.stdout, r.stderr)
		}
		r = dmRun(t, nil, append(mode, "show", "redis:v1", "example.yaml")...)
		if r.code != 0 || !strings.Contains(r.stdout, "type: redis:v1") {
			t.Errorf("dm %v show redis:v1 example.yaml = %d %q %q", mode, r.code, r.stdout, r.stderr)
		}
		// An older patch pinned by digest shows its own file, not the
		// highest patch's.
		r = dmRun(t, nil, append(mode, "show", "redis:v1.0.1@sha256:8d7d86261d97828796c37dab90a855ba77554c1f504795913b741e91365022c2")...)
		if r.code != 0 || !strings.Contains(r.stdout, "redis v1.0.1:") {
			t.Errorf("dm %v show of redis v1.0.1 pinned = %d %q %q, want v1.0.1's template", mode, r.code, r.stdout, r.stderr)
		}
		r = dmRun(t, nil, append(mode, "show", "redis:v1", "nope.txt")...)
		if r.code != 1 || !strings.Contains(r.stderr, `no file "nope.txt"`) {
			t.Errorf("dm %v show of a missing file = %d %q", mode, r.code, r.stderr)
		}
	}
}

// TestProcessLikeOC checks oc process's conventions: positional
// NAME=VALUE, a registry reference instead of -f, --parameters, -l and
// --ignore-unknown-parameters.
func TestProcessLikeOC(t *testing.T) {
	tmpl := filepath.Join("..", "..", "registry-example", "postgres", "v1.1.0", "postgres.yaml")
	items := func(t *testing.T, r result) []map[string]any {
		t.Helper()
		var list struct{ Items []map[string]any }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Items) == 0 {
			t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
		return list.Items
	}
	labels := func(o map[string]any) map[string]any {
		return o["metadata"].(map[string]any)["labels"].(map[string]any)
	}

	for _, args := range [][]string{
		{"process", "-f", tmpl, "DATABASE_SERVICE_NAME=db"},
		{"process", "postgres:v1.1", "DATABASE_SERVICE_NAME=db"},
		{"process", "postgres:v1.1", "-p", "DATABASE_SERVICE_NAME=db"},
	} {
		if name := items(t, dmRun(t, nil, args...))[0]["metadata"].(map[string]any)["name"]; name != "db" {
			t.Errorf("dm %v: name = %v, want db", args, name)
		}
	}
	for _, o := range items(t, dmRun(t, nil, "process", "postgres:v1.1", "-l", "team=a,tier=db", "-l", "env=prod")) {
		if l := labels(o); l["team"] != "a" || l["tier"] != "db" || l["env"] != "prod" {
			t.Errorf("labels %v, want team, tier and env", l)
		}
	}
	items(t, dmRun(t, nil, "process", "-f", tmpl, "NOPE=1", "--ignore-unknown-parameters"))

	r := dmRun(t, nil, "process", "postgres:v1.1", "--parameters")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "NAME") || !strings.Contains(r.stdout, "POSTGRESQL_PASSWORD") || !strings.Contains(r.stdout, "expression") {
		t.Errorf("--parameters: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"process", "redis:v1"}, 1, "is a jinja template; dm process takes kind: Template files"},
		{[]string{"process", "postgres:v1", "-f", tmpl}, 2, "not both"},
		{[]string{"process", "-f", tmpl, "-l", "bad"}, 2, `-l "bad": want KEY=VALUE`},
		{[]string{"process", "nope:v1"}, 1, `no template "nope"`},
	} {
		if r := dmRun(t, nil, tt.args...); r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("dm %v = %d %q, want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}

// TestUnknownProperties checks that a property the schema does not define
// is a warning naming the nearest one, and an error with --strict.
func TestUnknownProperties(t *testing.T) {
	url := serveExample(t)
	for _, mode := range [][]string{nil, {"--server", url}} {
		r := dmRun(t, nil, append(mode, "expand", "redis:v1", "--properties", "replcas=3")...)
		want := `dm: warning: redis (github.com/acme/templates/redis:v1.0.2): redis.jinja.schema: unknown property "replcas" (did you mean replicas?)`
		if r.code != 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d, stderr %q; want a warning %q", mode, r.code, r.stderr, want)
		}
		r = dmRun(t, nil, append(mode, "expand", "redis:v1", "--properties", "replcas=3", "--strict")...)
		if r.code != 1 || !strings.Contains(r.stderr, `unknown property "replcas" (did you mean replicas?) (--strict)`) {
			t.Errorf("%v --strict: exit %d, stderr %q; want an error", mode, r.code, r.stderr)
		}
		if r := dmRun(t, nil, append(mode, "expand", "redis:v1", "--properties", "replicas=3")...); r.stderr != "" {
			t.Errorf("%v: known properties warned: %q", mode, r.stderr)
		}
	}
}

// TestStringProperties checks that a value the schema types as a string
// keeps its text (image=1.10 is "1.10"), and --set-string.
func TestStringProperties(t *testing.T) {
	url := serveExample(t)
	for _, mode := range [][]string{nil, {"--server", url}} {
		for _, flag := range []string{"--properties", "--set-string"} {
			r := dmRun(t, nil, append(mode, "expand", "redis:v1", flag, "image=1.10", "-o", "json")...)
			out := decodeExpand(t, r.stdout)
			if r.code != 0 || out.Layout.Resources[0]["properties"].(map[string]any)["image"] != "1.10" {
				t.Errorf("%v %s image=1.10: exit %d %s; want the string \"1.10\"", mode, flag, r.code, r.stderr)
			}
		}
		// A string for an integer property is the user's explicit choice, and the schema refuses it.
		if r := dmRun(t, nil, append(mode, "expand", "redis:v1", "--set-string", "replicas=3")...); r.code != 1 || !strings.Contains(r.stderr, "replicas") {
			t.Errorf("%v --set-string replicas=3: exit %d %q, want the schema's error", mode, r.code, r.stderr)
		}
	}
}

// TestLintParsesTemplates checks that dm lint, without --expand, reports
// syntax errors of every template file, helpers included, with file and
// line.
func TestLintParsesTemplates(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a/v1/a.jinja":           "{% for x in y %}\n{{ x }\n",
		"a/v1/example.yaml":      "resources: []\n",
		"b/v1/b.py":              "def GenerateConfig(ctx):\n  return {\n",
		"b/v1/helpers/h.py":      "def f(:\n",
		"b/v1/example.yaml":      "resources: []\n",
		"c/v1/c.gotmpl":          "{{ if .x }}\nfoo\n",
		"c/v1/example.yaml":      "resources: []\n",
		"ok/v1/ok.gotmpl":        "{{ include \"x\" . }}{{ required \"r\" .properties.a }}\n",
		"ok/v1/helpers/m.jinja":  "{% macro m() %}x{% endmacro %}\n",
		"ok/v1/ok.gotmpl.schema": "{}\n",
		"ok/v1/example.yaml":     "resources: []\n",
	})
	r := dmRun(t, nil, "lint", dir)
	for _, want := range []string{
		"a/v1: error: a.jinja:",
		"b/v1: error: b.py:3:",
		"b/v1: error: helpers/h.py:1:",
		"c/v1: error: c.gotmpl:3: unexpected EOF",
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("dm lint output lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if r.code != 1 || strings.Contains(r.stdout+r.stderr, "ok/v1: error") {
		t.Errorf("exit %d, want 1 and no error for ok/v1:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestExpandEmptyConfig: a configuration without resources (an empty file,
// comments only, resources absent, null or empty) expands to nothing, as
// DM did; --properties given with a configuration says how to key them.
func TestExpandEmptyConfig(t *testing.T) {
	dir := t.TempDir()
	for i, content := range []string{"", "# nothing yet\n", "resources:\n", "resources: []\n", "imports: []\n", "{}\n"} {
		p := filepath.Join(dir, fmt.Sprintf("empty%d.yaml", i))
		os.WriteFile(p, []byte(content), 0o644)
		r := dmRun(t, nil, "expand", p)
		if r.code != 0 || r.stdout != "resources: []\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want resources: []", content, r.code, r.stdout, r.stderr)
		}
	}
	p := filepath.Join(dir, "web.yaml")
	os.WriteFile(p, []byte("resources:\n- {name: web, type: ConfigMap, properties: {data: {a: '1'}}}\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--properties", "replicas=3"}, `--properties "replicas": the configuration has no resource "replicas"; with a configuration, --properties and --values are keyed by resource name (--properties web.replicas=VALUE`},
		{[]string{"--properties", "web=3"}, `--properties "web": resource web takes a mapping of its properties, got a number (--properties web.KEY=VALUE)`},
	} {
		r := dmRun(t, nil, append([]string{"expand", p}, tt.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	r := dmRun(t, nil, "expand", p, "--properties", "web.data.b=2")
	if r.code != 0 || !strings.Contains(r.stdout, "b: 2") {
		t.Errorf("keyed --properties: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestInitNextStep: dm init says what to run next, and that command
// works; the example's expand without --registry-dir, run in the version
// directory, says how to name the registry.
func TestInitNextStep(t *testing.T) {
	dir := t.TempDir()
	r := dmRun(t, nil, "init", "shop/web", "--dir", dir)
	if r.code != 0 {
		t.Fatalf("dm init: exit %d: %s", r.code, r.stderr)
	}
	example := filepath.Join(dir, "shop", "web", "v0.1.0", "example.yaml")
	next := "dm --registry-dir github.com/example/templates=" + dir + " expand " + example
	if !strings.Contains(r.stdout, "Next, expand the example and lint the registry:\n  "+next+"\n  dm lint --expand "+dir+"\n") {
		t.Fatalf("dm init printed %q, want the next commands", r.stdout)
	}
	if r := dmRun(t, nil, strings.Fields(next)[1:]...); r.code != 0 {
		t.Errorf("%s: exit %d: %s", next, r.code, r.stderr)
	}
	if r := dmRun(t, nil, "lint", "--expand", dir); r.code != 0 {
		t.Errorf("dm lint --expand: exit %d: %s", r.code, r.stderr)
	}
	r = dmRun(t, nil, "expand", example)
	root, _ := filepath.Rel(mustGetwd(), dir)
	if want := "is an example of the registry directory " + root + ": name it, and its templates resolve there: dm --registry-dir github.com/example/templates=" + root + " expand " + example; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("expand of the example without --registry-dir: exit %d, %q; want %q", r.code, r.stderr, want)
	}
}
