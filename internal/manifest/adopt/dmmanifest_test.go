package adopt

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/gcp"
)

// testdata is the configuration and the manifest of its deployment, as
// gcloud printed it.
var testdata = filepath.Join("..", "..", "..", "testdata", "gcp", "adopt")

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// expandTestdata expands testdata's configuration as deployment d.
func expandTestdata(t *testing.T, d string) *expand.Result {
	t.Helper()
	res, err := expand.New(expand.Options{}).Expand(t.Context(), expand.Request{
		Config: []byte(readTestdata(t, "config.yaml")), ConfigName: "config.yaml", Deployment: d,
		Imports: map[string][]byte{"web.jinja": []byte(readTestdata(t, "web.jinja"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(readTestdata(t, "manifest-my-web.yaml")), "manifest-my-web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "manifest-1730823267318" || m.Deployment != "my-web" || m.Project != "acme-prod" || len(m.Resources) != 3 {
		t.Fatalf("manifest %+v", m)
	}
	if r := m.Resources[1]; r.Name != "my-web-vm" || r.Type != "compute.v1.instance" || r.Properties["zone"] != "us-central1-a" {
		t.Errorf("resources[1] %+v", r)
	}
	// gcloud's --format json is read the same.
	var doc any
	yaml3.Unmarshal([]byte(readTestdata(t, "manifest-my-web.yaml")), &doc)
	js, _ := json.Marshal(doc)
	if mj, err := ParseManifest(js, "m.json"); err != nil || len(mj.Resources) != 3 || mj.Deployment != "my-web" {
		t.Errorf("the JSON form: %+v %v", mj, err)
	}

	for _, tc := range []struct{ name, in, want string }{
		{"not YAML", "a: [", "m.yaml: "},
		{"a list", "- a\n", "the file is a list, not a manifest"},
		{"no expandedConfig", "name: manifest-1\n", "it has no expandedConfig"},
		{"a deployment", "name: my-web\nmanifest: https://www.googleapis.com/deploymentmanager/v2/projects/p/global/deployments/my-web/manifests/manifest-1\n", "this is a deployment (gcloud deployment-manager deployments describe), not its manifest"},
		{"expandedConfig a mapping", "expandedConfig: {resources: []}\n", "expandedConfig is a mapping, not the expanded configuration's text"},
		{"expandedConfig not YAML", "expandedConfig: 'resources: ['\n", "m.yaml: expandedConfig: "},
		{"resources not a list", "expandedConfig: 'resources: 3'\n", "resources is a number, not a list"},
		{"no name", "expandedConfig: |\n  resources:\n  - {type: compute.v1.network}\n", "resources[0] has no name"},
		{"no type", "expandedConfig: |\n  resources:\n  - {name: n}\n", "resources[0] (n) has no type"},
		{"twice", "expandedConfig: |\n  resources:\n  - {name: n, type: compute.v1.network}\n  - {name: n, type: compute.v1.network}\n", "two resources are named n"},
		{"properties a list", "expandedConfig: |\n  resources:\n  - {name: n, type: compute.v1.network, properties: [1]}\n", "properties is a list, not a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.in), "m.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "gcloud deployment-manager manifests describe --deployment NAME --format yaml") {
				t.Errorf("the error does not say what the file should be: %v", err)
			}
		})
	}
	if _, err := ParseManifest(make([]byte, MaxManifestBytes+1), "big.yaml"); !errors.Is(err, derrors.LimitExceeded) {
		t.Errorf("a manifest over the limit: %v", err)
	}
}

// TestCompare: the resources a configuration makes against a deployment's
// manifest, by kind, Google Cloud name, project and location; the
// manifest's expandedConfig is edited into each case.
func TestCompare(t *testing.T) {
	text := readTestdata(t, "manifest-my-web.yaml")
	vm := "  - name: my-web-vm\n"
	logs := "  - name: my-web-logs\n    properties:\n      location: US\n    type: gcp-types/storage-v1:buckets\n"
	if !strings.Contains(text, vm) || !strings.Contains(text, logs) {
		t.Fatal("the manifest's expandedConfig is not as the cases expect")
	}
	for _, tc := range []struct {
		name       string
		deployment string // dm's (default my-web)
		edit       func(string) string
		want       []string
	}{
		{"the same", "", nil, nil},
		{"another deployment name", "config", nil, []string{
			"DM only: compute.v1.address my-web-ip (resource my-web-ip): dm makes no object of that name and type, so Config Connector would not adopt it",
			"DM only: compute.v1.instance my-web-vm (resource my-web-vm): dm makes no object",
			"DM only: gcp-types/storage-v1:buckets my-web-logs (resource my-web-logs): dm makes no object",
			"dm only: compute.v1.address config-ip (layout path web/config-ip): Deployment Manager's deployment did not have it, so Config Connector would create it",
			"dm only: compute.v1.instance config-vm (layout path web/config-vm)",
			"dm only: gcp-types/storage-v1:buckets config-logs (layout path web/config-logs)",
		}},
		{"DM had one more", "", func(s string) string {
			return strings.Replace(s, logs, logs+"  - name: my-web-fw\n    properties:\n      allowed: [{IPProtocol: tcp}]\n      network: global/networks/default\n    type: compute.v1.firewall\n", 1)
		}, []string{"DM only: compute.v1.firewall my-web-fw (resource my-web-fw): dm makes no object of that name and type"}},
		{"dm makes one more", "", func(s string) string { return strings.Replace(s, logs, "", 1) }, []string{
			"dm only: gcp-types/storage-v1:buckets my-web-logs (layout path web/my-web-logs): Deployment Manager's deployment did not have it",
		}},
		{"spelt otherwise", "", func(s string) string {
			return strings.Replace(s, "type: compute.v1.address", "type: gcp-types/compute-v1:addresses", 1)
		}, nil},
		{"named by a property", "", func(s string) string {
			return strings.Replace(s, logs, "  - name: logs-bucket\n    properties:\n      location: US\n      name: my-web-logs\n    type: gcp-types/storage-v1:buckets\n", 1)
		}, nil},
		{"another zone", "", func(s string) string {
			return strings.Replace(s, "      zone: us-central1-a\n    type: compute.v1.instance", "      zone: us-central1-b\n    type: compute.v1.instance", 1)
		}, []string{"moved: compute.v1.instance my-web-vm: Deployment Manager's is in us-central1-b of project acme-prod, dm's in us-central1-a of project acme-prod, so Config Connector would create another"}},
		{"another project", "", func(s string) string {
			return strings.Replace(s, "      location: US\n    type: gcp-types/storage-v1:buckets", "      location: US\n      project: elsewhere\n    type: gcp-types/storage-v1:buckets", 1)
		}, []string{"moved: gcp-types/storage-v1:buckets my-web-logs: Deployment Manager's is in US of project elsewhere, dm's in US of project acme-prod"}},
		{"another kind", "", func(s string) string {
			return strings.Replace(s, logs, "  - name: my-web-logs\n    properties:\n      sizeGb: 10\n      zone: us-central1-a\n    type: compute.v1.disk\n", 1)
		}, []string{
			"DM only: compute.v1.disk my-web-logs (resource my-web-logs): dm makes my-web-logs as gcp-types/storage-v1:buckets (StorageBucket), another kind",
			"dm only: gcp-types/storage-v1:buckets my-web-logs (layout path web/my-web-logs)",
		}},
		{"a type dm has no kind for", "", func(s string) string {
			return strings.Replace(s, logs, logs+"  - name: my-web-config\n    properties:\n      config: my-web-config\n    type: runtimeconfig.v1beta1.config\n", 1)
		}, []string{"DM only: runtimeconfig.v1beta1.config my-web-config (resource my-web-config): type runtimeconfig.v1beta1.config has no Config Connector equivalent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := text
			if tc.edit != nil {
				s = tc.edit(s)
			}
			m, err := ParseManifest([]byte(s), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			d := tc.deployment
			if d == "" {
				d = "my-web"
			}
			got := Compare(m, expandTestdata(t, d), gcp.Options{Project: "acme-prod"})
			if len(got) != len(tc.want) {
				t.Fatalf("differences:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(tc.want), strings.Join(tc.want, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("difference %d:\n%s\nwant:\n%s", i, got[i], w)
				}
			}
		})
	}
}

func TestManifestError(t *testing.T) {
	e := &ManifestError{File: "m.yaml", Deployment: "my-web", Differences: []string{"a", "b"}}
	if e.Error() != "2 differences between the objects dm makes and deployment my-web's resources (m.yaml), by name and type" {
		t.Error(e.Error())
	}
}
