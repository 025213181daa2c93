package expand

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"

	"github.com/dmhq/dm/internal/expand/engine"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, in string
		want     int    // resources
		err      string // substring of the error
	}{
		{name: "yaml", in: "imports: [{path: a.jinja, name: a}]\nresources:\n- {name: x, type: a}\n", want: 1},
		{name: "json", in: `{"resources": [{"name": "x", "type": "Service", "properties": {"n": 1}}]}`, want: 1},
		{name: "dm outputs ignored", in: "resources: []\noutputs: [{name: o, value: v}]\n"},
		{name: "unknown field", in: "resources:\n- name: x\n  typ: Service\n", err: "config.yaml:3: field typ not found"},
		{name: "missing name", in: "resources:\n- type: Service\n", err: "resources[0]: missing name"},
		{name: "missing type", in: "resources:\n- name: x\n", err: "resources[0] (x): missing type"},
		{name: "properties not a mapping", in: "resources:\n- {name: x, type: S, properties: [1]}\n", err: "want a mapping, got a list"},
		{name: "duplicate key keeps the last", in: "resources: [{name: a, type: S}]\nresources: []\n"},
		{name: "syntax", in: "resources:\n  - name: x\n - type: y\n", err: "config.yaml:2"},
		{name: "json syntax", in: "{\"resources\": [\n}", err: "config.yaml:2"},
		{name: "import without path", in: "imports: [{name: a}]\nresources: []\n", err: "imports[0]: missing path"},
		// DM's formats (issue 7).
		{name: "string imports", in: "imports: [a.jinja, b.py]\nresources: []\n"},
		{name: "configVersion, metadata, accessControl", in: "configVersion: 2\nresources:\n- name: a\n  type: T\n  metadata: {dependsOn: [b]}\n  accessControl: {gcpIamPolicy: {}}\n", want: 1},
		{name: "import of a number", in: "imports: [1]\nresources: []\n", err: "imports[0] is a number"},
		{name: "metadata not a mapping", in: "resources:\n- {name: x, type: S, metadata: [1]}\n", err: "metadata: want a mapping"},
		{name: "n is a string key", in: "resources:\n- {name: x, type: S, properties: {n: 1}}\n", want: 1},
		{name: "unknown top-level field", in: "resource: []\n", err: "config.yaml:1: field resource not found in a configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.in), "config.yaml")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got error %v, want one containing %q", err, tt.err)
				}
				if !errors.Is(err, derrors.InvalidArgument) {
					t.Errorf("error does not wrap InvalidArgument: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Resources) != tt.want {
				t.Errorf("got %d resources, want %d", len(cfg.Resources), tt.want)
			}
		})
	}
}

func TestClassifyType(t *testing.T) {
	imports := map[string]string{"web.jinja": "web.jinja", "web": "web.jinja"}
	tests := []struct {
		typ  string
		want typeKind
	}{
		{"Service", primitiveType},
		{"v1/Service", primitiveType},
		{"apps/v1/Deployment", primitiveType},
		{"example.com/v1beta1/Widget", primitiveType},
		{"web.jinja", importType},
		{"web", importType},
		{"redis:v1", registryType},
		{"redis", primitiveType}, // no version: DM's types pass through
		{"redis@sha256:" + strings.Repeat("a", 64), registryType},
		{"compute.v1.instance", primitiveType},
		{"gcp-types/compute-v1:instances", primitiveType},
		{"project/provider:collection", primitiveType},
		{"github.com/acme/templates/redis", primitiveType},
		{"missing.jinja", registryType}, // a file that was not imported: an error later
		{"common/web:v1.2", registryType},
		{"github.com/acme/templates/redis:v1", registryType},
		{"https://raw.githubusercontent.com/a/b/main/t/v1/t.jinja", urlType},
		{"apps/Deployment", primitiveType},
	}
	for _, tt := range tests {
		if got, _ := classifyType(engine.Default(), tt.typ, imports); got != tt.want {
			t.Errorf("classifyType(%q) = %v, want %v", tt.typ, got, tt.want)
		}
	}
}

// FuzzParseConfig: the parser never panics, and what it accepts has named,
// typed resources.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"resources:\n- {name: a, type: Service, properties: {x: 1}}\n",
		`{"imports": [{"path": "a.jinja"}], "resources": [{"name": "a", "type": "a.jinja"}]}`,
		billionLaughs,
		"resources:\n- name: a\n  type: Service\n  properties: &p {a: 1}\n- name: b\n  type: Service\n  properties: *p\n",
		"configVersion: 2\nimports: [a.jinja, {path: ../b.py, name: b}]\nresources:\n- {name: a, type: a.jinja, metadata: {dependsOn: [b]}, accessControl: {}}\n",
		"resources:\n- name: a\n  type: compute.v1.instance\n  properties: {n: y, <<: {x: 0o17, t: 12:30:00}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, "config.yaml")
		if err != nil {
			return
		}
		for _, r := range cfg.Resources {
			if r.Name == "" || r.Type == "" {
				t.Fatalf("accepted a resource without name or type: %+v", r)
			}
		}
	})
}

// TestConfigValues checks values given with a configuration: keyed by
// resource name and merged into its properties.
func TestConfigValues(t *testing.T) {
	x := New(Options{})
	cfg := []byte("resources:\n- {name: alpha, type: ConfigMap, properties: {data: {p: '1', q: '2'}}}\n- {name: beta, type: ConfigMap}\n")
	res, err := x.Expand(context.Background(), Request{Config: cfg, Properties: map[string]any{
		"alpha": map[string]any{"data": map[string]any{"q": "3"}},
		"beta":  map[string]any{"data": map[string]any{"r": "4"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Config.Resources[0].Properties["data"]; !reflect.DeepEqual(got, map[string]any{"p": "1", "q": "3"}) {
		t.Errorf("alpha's data = %v", got)
	}
	if got := res.Config.Resources[1].Properties["data"]; !reflect.DeepEqual(got, map[string]any{"r": "4"}) {
		t.Errorf("beta's data = %v", got)
	}
	for _, tt := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"aplha": map[string]any{}}, `--properties "aplha": the configuration has no resource "aplha"; with a configuration, --properties and --values are keyed by resource name (--properties alpha.aplha=VALUE sets property aplha of resource alpha; resources: alpha, beta); did you mean alpha?`},
		{map[string]any{"replicas": 3}, `--properties "replicas": the configuration has no resource "replicas"; with a configuration, --properties and --values are keyed by resource name (--properties alpha.replicas=VALUE sets property replicas of resource alpha; resources: alpha, beta)`},
		{map[string]any{"alpha": 3}, `--properties "alpha": resource alpha takes a mapping of its properties, got a number (--properties alpha.KEY=VALUE)`},
	} {
		_, err := x.Expand(context.Background(), Request{Config: cfg, Properties: tt.values})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("values %v: %v, want %q", tt.values, err, tt.want)
		}
	}
}

// TestDuplicateKeys: a repeated mapping key in a configuration or a
// schema keeps the last value, as PyYAML did for DM, and is a warning
// naming the file and line.
func TestDuplicateKeys(t *testing.T) {
	tmpl := []byte("resources:\n- name: cm\n  type: ConfigMap\n  properties: {data: {size: '{{ properties.size }}', zone: '{{ properties.zone }}'}}\n")
	for _, tc := range []struct {
		name, config, schema string
		want                 map[string]any // the ConfigMap's data
		warnings             []string
	}{
		{name: "configuration",
			config:   "imports: [t.jinja]\nresources:\n- name: a\n  type: t.jinja\n  properties:\n    size: 1\n    zone: us-a\n    size: 2\n",
			want:     map[string]any{"size": "2", "zone": "us-a"},
			warnings: []string{`config.yaml:8: mapping key "size" is repeated; the last value is kept, as PyYAML does`}},
		{name: "schema, used twice",
			config: "imports: [t.jinja]\nresources:\n- {name: a, type: t.jinja}\n- {name: b, type: t.jinja}\n",
			schema: "properties:\n  size: {type: integer, default: 1}\n  zone: {type: string, default: us-a}\n  size: {type: integer, default: 3}\n",
			want:   map[string]any{"size": "3", "zone": "us-a"},
			warnings: []string{
				`a (t.jinja): t.jinja.schema:4: mapping key "size" is repeated; the last value is kept, as PyYAML does`,
				`b (t.jinja): t.jinja.schema:4: mapping key "size" is repeated; the last value is kept, as PyYAML does`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imports := map[string][]byte{"t.jinja": tmpl}
			if tc.schema != "" {
				imports["t.jinja.schema"] = []byte(tc.schema)
			}
			res, err := New(Options{}).Expand(context.Background(), Request{Config: []byte(tc.config), Imports: imports})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Config.Resources[0].Properties["data"]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("data = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(res.Warnings, tc.warnings) {
				t.Errorf("warnings:\n%q\nwant\n%q", res.Warnings, tc.warnings)
			}
		})
	}
}

// TestHelmResourceFields: a type: helm resource names its chart one way,
// and its fields belong to no other type.
func TestHelmResourceFields(t *testing.T) {
	tests := []struct {
		name, res string
		want      *HelmChart
		err       string
	}{
		{"registry", "type: helm\n  chart: web:v1", &HelmChart{Chart: "web:v1"}, ""},
		{"repo", "type: helm\n  repo: https://charts.example.com\n  chart: web\n  version: ^1.2\n  content: 'a: 1'", &HelmChart{Repo: "https://charts.example.com", Chart: "web", Version: "^1.2", Content: "a: 1"}, ""},
		{"url", "type: helm\n  url: https://example.com/web-1.0.0.tgz", &HelmChart{URL: "https://example.com/web-1.0.0.tgz"}, ""},
		{"oci", "type: helm\n  chart: oci://r.example.com/charts/web:1.0.0", &HelmChart{Chart: "oci://r.example.com/charts/web:1.0.0"}, ""},
		{"nothing", "type: helm", nil, "needs chart"},
		{"url and chart", "type: helm\n  url: https://x/y.tgz\n  chart: web", nil, "url names the chart alone"},
		{"repo without chart", "type: helm\n  repo: https://x\n  url: https://x/y.tgz", nil, "url names the chart alone"},
		{"version without repo", "type: helm\n  chart: web:v1\n  version: ^1", nil, "version is the constraint"},
		{"other type", "type: Service\n  chart: web", nil, "fields of type: helm resources"},
		{"not a string", "type: helm\n  chart: [web]", nil, "want a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte("resources:\n- name: r\n  "+tc.res+"\n"), "c.yaml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Resources[0].Helm; got == nil || *got != *tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestActionRefused: a Deployment Manager action (a resource with action:
// instead of type:) is refused by name, saying what to do instead.
// TestConfigOutputFields: a configuration's outputs with fields beside
// name and value (description) expand, with a warning naming each field,
// its output and its line, as Deployment Manager deployed them.
func TestConfigOutputFields(t *testing.T) {
	for _, c := range []struct {
		name, config string
		outputs      int
		warnings     []string
		err          string
	}{
		{"name and value", "resources: []\noutputs: [{name: a, value: 1}]\n", 1, nil, ""},
		{"description", "resources: []\noutputs:\n- name: ip\n  description: the address\n  value: 1\n", 1,
			[]string{"config.yaml: line 4: outputs[0] (ip): field description is ignored, as Deployment Manager ignored an output's fields beside name and value"}, ""},
		{"two outputs", "resources: []\noutputs:\n- {name: a, value: 1, description: x}\n- {name: b, value: 2, help: y, type: z}\n", 2,
			[]string{"config.yaml: line 3: outputs[0] (a): field description is ignored", "config.yaml: line 4: outputs[1] (b): fields help, type are ignored"}, ""},
		{"still unique", "resources: []\noutputs: [{name: a, value: 1, description: x}, {name: a, value: 2}]\n", 0, nil, `outputs[1]: two outputs named "a"`},
		{"still a mapping", "resources: []\noutputs: [a]\n", 0, nil, "outputs[0] is a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := New(Options{}).Expand(t.Context(), Request{Config: []byte(c.config), ConfigName: "config.yaml"})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != c.outputs {
				t.Errorf("%d outputs, want %d", len(res.Outputs), c.outputs)
			}
			if len(res.Warnings) != len(c.warnings) {
				t.Fatalf("warnings %q, want %q", res.Warnings, c.warnings)
			}
			for i, w := range c.warnings {
				if !strings.Contains(res.Warnings[i], w) {
					t.Errorf("warning %q, want %q", res.Warnings[i], w)
				}
			}
		})
	}
}

// TestResourceProject: a resource's project field, which Deployment
// Manager ignored, is left out with a warning naming it, in a
// configuration and in a template's output, as the reference expander
// (scripts/dmref) does.
func TestResourceProject(t *testing.T) {
	config := "imports: [{path: t.py}]\nresources:\n- {name: top, type: t.py, project: p1}\n- {name: ns, type: v1/Namespace, project: p2}\n"
	py := "def GenerateConfig(context):\n  return {'resources': [{'name': 'cm', 'type': 'v1/ConfigMap', 'project': 'p3', 'properties': {'data': {'a': 'b'}}}]}\n"
	res, err := New(Options{}).Expand(t.Context(), Request{Config: []byte(config), ConfigName: "config.yaml", Imports: map[string][]byte{"t.py": []byte(py)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Config.Resources) != 2 {
		t.Fatalf("%d resources, want 2", len(res.Config.Resources))
	}
	want := []string{"top: the resource's project field (p1) is ignored", "ns: the resource's project field (p2) is ignored", "top > cm: the resource's project field (p3) is ignored"}
	got := strings.Join(res.Warnings, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("warnings %q lack %q", res.Warnings, w)
		}
	}
}

func TestActionRefused(t *testing.T) {
	_, err := New(Options{}).Expand(t.Context(), Request{Config: []byte("resources:\n- name: bind\n  action: gcp-types/compute-v1:compute.routers.patch\n  properties: {router: r}\n")})
	if err == nil || !strings.Contains(err.Error(), "resources[0] (bind) is a Deployment Manager action (gcp-types/compute-v1:compute.routers.patch)") {
		t.Fatalf("error %v", err)
	}
}

// TestTemplateOutputFields: fields of a template's output beside resources
// and outputs are ignored with a warning, as Deployment Manager ignored
// them (deploymentmanager-samples' container_igm pastes a Pod manifest
// into a block scalar without indentation, so that its lines become
// fields); without resources they are an error (a misspelt resources).
func TestTemplateOutputFields(t *testing.T) {
	for _, c := range []struct {
		name, template string
		resources      int
		warning, err   string
	}{
		{"resources only", "resources:\n- {name: a, type: S}\n", 1, "", ""},
		{"outputs and imports", "resources: []\noutputs: [{name: o, value: 1}]\nimports: []\n", 0, "", ""},
		{"unindented block", "resources:\n- name: a\n  type: S\n  properties:\n    v: |\n      first line\napiVersion: v1\nkind: Pod\n", 1,
			"t.jinja): the template's output has fields beside resources and outputs (apiVersion, kind), which are ignored", ""},
		{"misspelt resources", "resource:\n- {name: a, type: S}\n", 0, "", `output has unknown field "resource"; want resources`},
		// An output's fields beside name and value: DM read the two.
		{"output resourceName", "resources: []\noutputs: [{name: ip, value: 1, resourceName: vm}]\n", 0,
			"t.jinja): outputs[0] (ip): field resourceName is ignored, as Deployment Manager ignored an output's fields beside name and value", ""},
		{"output fields", "resources: []\noutputs: [{name: a, value: 1}, {name: b, value: 2, type: string, description: d}]\n", 0,
			"outputs[1] (b): fields description, type are ignored", ""},
		{"output without value", "resources: []\noutputs: [{name: a, description: d}]\n", 0, "", "outputs[0] (a): missing value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := New(Options{}).Expand(t.Context(), Request{
				Config:  []byte("imports: [t.jinja]\nresources:\n- {name: t, type: t.jinja}\n"),
				Imports: map[string][]byte{"t.jinja": []byte(c.template)},
			})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Config.Resources) != c.resources {
				t.Errorf("%d resources, want %d", len(res.Config.Resources), c.resources)
			}
			warnings := strings.Join(res.Warnings, "\n")
			if c.warning == "" && warnings != "" || !strings.Contains(warnings, c.warning) {
				t.Errorf("warnings %q, want %q", warnings, c.warning)
			}
		})
	}
}
