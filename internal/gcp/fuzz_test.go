package gcp

import (
	"encoding/json"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzConvert: the REST -> KCC mapper never panics, whatever the
// properties, access control and type of a resource beside a few others
// it may reference.
func FuzzConvert(f *testing.F) {
	b, err := os.ReadFile("testdata/samples.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var cfg struct{ Resources []Resource }
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		f.Fatal(err)
	}
	for _, r := range cfg.Resources {
		props, _ := json.Marshal(r.Properties)
		ac, _ := json.Marshal(r.AccessControl)
		i, _ := typeIndex(r.Type)
		f.Add(uint16(i), r.Name, props, ac, "")
	}
	f.Add(uint16(0), "vm", []byte(`{"zone":"z","disks":[{"boot":true,"initializeParams":{"diskName":"x"}}],"networkInterfaces":[{"network":"$(ref.net.selfLink)"}]}`), []byte(`{}`), "abandon")
	f.Fuzz(func(t *testing.T, typ uint16, name string, props, ac []byte, policy string) {
		var p, a map[string]any
		if json.Unmarshal(props, &p) != nil {
			p = nil
		}
		if json.Unmarshal(ac, &a) != nil {
			a = nil
		}
		res := []Resource{
			{Name: name, Type: dmTypes[int(typ)%len(dmTypes)].Type, Properties: p, AccessControl: a, Metadata: map[string]any{"dependsOn": []any{"net"}}},
			{Name: "net", Type: "compute.v1.network", Properties: map[string]any{"autoCreateSubnetworks": true}},
			{Name: "addr", Type: "compute.v1.address", Properties: map[string]any{"region": "r"}},
			{Name: "sa", Type: "iam.v1.serviceAccount", Properties: map[string]any{"accountId": "a"}},
		}
		r, err := Convert(res, Options{Project: "p", DeletionPolicy: policy})
		if err != nil {
			return
		}
		for _, d := range r.Deferred {
			if d.Object < 0 || d.Object >= len(r.Objects) {
				t.Fatalf("deferred %+v names no object", d)
			}
		}
		for _, ref := range []string{"$(ref.net.selfLink)", "$(ref." + name + ".name)", "$(ref.addr.address)"} {
			_, _, _, _ = r.Lookup(ref)
		}
	})
}

func typeIndex(t string) (int, bool) {
	for i, d := range dmTypes {
		if d.Type == t {
			return i, true
		}
	}
	return 0, false
}

// BenchmarkConvert converts the samples (about a hundred resources of
// every mapped kind) as one deployment.
func BenchmarkConvert(b *testing.B) {
	data, err := os.ReadFile("testdata/samples.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var cfg struct{ Resources []Resource }
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Convert(cfg.Resources, Options{Project: "p"}); err != nil {
			b.Fatal(err)
		}
	}
}
