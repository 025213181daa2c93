package adopt

import (
	"errors"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/gcp"
)

func TestOtherName(t *testing.T) {
	for _, name := range []string{"config", "my-web", "prod2", "a", "z9", "Web_App.v1", "-", ""} {
		o := OtherName(name)
		if o == name {
			t.Errorf("OtherName(%q) = %q, the same", name, o)
		}
		if name != "" && name != "-" && len(o) != len(name) {
			t.Errorf("OtherName(%q) = %q, of another length", name, o)
		}
		for i := 0; i < len(name) && len(o) == len(name); i++ {
			a, b := name[i], o[i]
			isAlnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
			if isAlnum(a) == (a == b) {
				t.Errorf("OtherName(%q) = %q: position %d", name, o, i)
			}
		}
	}
	if OtherName("z") != "a" || OtherName("my-9") != "nz-0" {
		t.Errorf("OtherName: %q %q", OtherName("z"), OtherName("my-9"))
	}
}

// expandAs expands files' config.yaml as deployment d.
func expandAs(t *testing.T, files map[string]string) func(d string) (*expand.Result, error) {
	return func(d string) (*expand.Result, error) {
		imports := map[string][]byte{}
		for k, v := range files {
			if k != "config.yaml" {
				imports[k] = []byte(v)
			}
		}
		return expand.New(expand.Options{}).Expand(t.Context(), expand.Request{Config: []byte(files["config.yaml"]), ConfigName: "config.yaml", Deployment: d, Imports: imports})
	}
}

// TestCheckDeploymentName: whether a resource's Google Cloud name reads
// env["deployment"] (in Jinja, in Python, in a name property, in part, in
// a condition), found by expanding twice; Kubernetes objects and other
// properties reading it do not count.
func TestCheckDeploymentName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // resources named; nil: no error
	}{
		{"jinja resource name", map[string]string{
			"config.yaml": "imports: [vm.jinja]\nresources:\n- {name: vm, type: vm.jinja}\n",
			"vm.jinja":    "resources:\n- name: {{ env['deployment'] }}-ip\n  type: compute.v1.address\n  properties: {region: us-central1}\n- name: fixed\n  type: compute.v1.address\n  properties: {region: us-central1, description: 'of {{ env[\"deployment\"] }}'}\n",
		}, []string{"config-ip (compute.v1.address, layout path vm/config-ip)"}},
		{"python name property", map[string]string{
			"config.yaml": "imports: [b.py]\nresources:\n- {name: b, type: b.py}\n",
			"b.py":        "def GenerateConfig(ctx):\n  return {'resources': [{'name': 'bucket', 'type': 'gcp-types/storage-v1:buckets', 'properties': {'name': ctx.env['deployment'][:3] + '-logs'}}]}\n",
		}, []string{"con-logs (gcp-types/storage-v1:buckets, layout path b/bucket)"}},
		{"only under one name", map[string]string{
			"config.yaml": "imports: [c.jinja]\nresources:\n- {name: c, type: c.jinja}\n",
			"c.jinja":     "resources:\n{% if env['deployment'] == 'config' %}\n- {name: extra, type: compute.v1.network}\n{% endif %}\n- {name: net, type: compute.v1.network}\n",
		}, []string{"extra (compute.v1.network, layout path c/extra)"}},
		{"reads it elsewhere", map[string]string{
			"config.yaml": "imports: [d.jinja]\nresources:\n- {name: d, type: d.jinja}\n",
			"d.jinja":     "resources:\n- {name: net, type: compute.v1.network, properties: {description: '{{ env[\"deployment\"] }}'}}\n- {name: '{{ env[\"deployment\"] }}-cm', type: ConfigMap}\n",
		}, nil},
		{"no Google Cloud resources", map[string]string{
			"config.yaml": "resources:\n- {name: cm, type: ConfigMap}\n",
		}, nil},
		{"never spelt", map[string]string{
			"config.yaml": "imports: [f.jinja]\nresources:\n- {name: f, type: f.jinja}\n",
			"f.jinja":     "resources:\n- {name: '{{ env[\"name\"] }}-net', type: compute.v1.network}\n",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := expandAs(t, tc.files)
			res, err := ex("config")
			if err != nil {
				t.Fatal(err)
			}
			var sources []string
			for _, f := range tc.files {
				sources = append(sources, f)
			}
			probed := false
			again := func(d string) (*expand.Result, error) { probed = true; return ex(d) }
			// With the sources as without: the filter never hides a name.
			err = CheckDeploymentName(res, "config", "--deployment", gcp.Options{Project: "p"}, sources, again)
			if err2 := CheckDeploymentName(res, "config", "--deployment", gcp.Options{Project: "p"}, nil, ex); (err == nil) != (err2 == nil) {
				t.Errorf("with the sources: %v; without: %v", err, err2)
			}
			if mentions := strings.Contains(strings.Join(sources, ""), "deployment"); probed != (mentions && len(res.Config.Resources) > 0 && tc.name != "no Google Cloud resources") {
				t.Errorf("expanded again: %v; the sources mention deployment: %v", probed, mentions)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			var ne *NameError
			if !errors.As(err, &ne) || !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("error %v, want a NameError", err)
			}
			if strings.Join(ne.Resources, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("resources %q, want %q", ne.Resources, tc.want)
			}
			for _, w := range append([]string{"without --deployment is \"config\"", "give --deployment NAME"}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

// TestCheckDeploymentNameFails: an input that does not expand under
// another deployment name depends on it in a way that cannot be
// compared: the error says so and names the flag.
func TestCheckDeploymentNameFails(t *testing.T) {
	files := map[string]string{
		"config.yaml": "imports: [e.py]\nresources:\n- {name: e, type: e.py}\n",
		"e.py":        "def GenerateConfig(ctx):\n  if ctx.env['deployment'] != 'config':\n    raise Exception('only config')\n  return {'resources': [{'name': 'n', 'type': 'compute.v1.network'}]}\n",
	}
	ex := expandAs(t, files)
	res, err := ex("config")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckDeploymentName(res, "config", "--deployment", gcp.Options{Project: "p"}, nil, ex)
	if err == nil || !strings.Contains(err.Error(), `expanding again as deployment "dpogjh"`) || !strings.Contains(err.Error(), "give --deployment NAME") || !strings.Contains(err.Error(), "only config") {
		t.Fatalf("error %v", err)
	}
}

func TestNameErrorMany(t *testing.T) {
	e := &NameError{Name: "c", Flag: "--name", Resources: []string{"a", "b", "c", "d", "e", "f", "g"}}
	if msg := e.Error(); !strings.Contains(msg, "the names of 7 Google Cloud resources read") || !strings.Contains(msg, "a, b, c, d, e, and 2 more") || !strings.Contains(msg, "give --name NAME") {
		t.Error(msg)
	}
}
