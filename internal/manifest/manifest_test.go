package manifest

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/gcp"
)

// TestMain lets tests start the shared test apiserver (kubetest).
func TestMain(m *testing.M) { kubetest.Main(m) }

// expanded expands a configuration with its imports.
func expanded(t *testing.T, cfg string, imports map[string]string) *expand.Result {
	t.Helper()
	files := map[string][]byte{}
	for k, v := range imports {
		files[k] = []byte(v)
	}
	res, err := expand.New(expand.Options{}).Expand(t.Context(), expand.Request{Config: []byte(cfg), Imports: files, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// index finds the object of kind and name.
func index(t *testing.T, m *Manifest, kind, name string) int {
	t.Helper()
	i := slices.IndexFunc(m.Objects, func(o Object) bool {
		return o.Object["kind"] == kind && o.Object["metadata"].(map[string]any)["name"] == name
	})
	if i < 0 {
		t.Fatalf("no %s %s among %d objects", kind, name, len(m.Objects))
	}
	return i
}

// TestMixed: Kubernetes objects and Google Cloud resources in one
// configuration; references across them are read from the right object
// and field, dependsOn orders, outputs read live fields.
func TestMixed(t *testing.T) {
	vm := `resources:
- name: {{ env["name"] }}
  type: compute.v1.instance
  properties:
    zone: {{ properties["zone"] }}
    machineType: zones/{{ properties["zone"] }}/machineTypes/e2-small
    disks: [{boot: true, autoDelete: true, initializeParams: {sourceImage: projects/debian-cloud/global/images/family/debian-12}}]
    networkInterfaces:
    - network: $(ref.net.selfLink)
      accessConfigs: [{name: External NAT, type: ONE_TO_ONE_NAT}]
    metadata:
      items:
      - {key: settings, value: "$(ref.settings.metadata.uid)"}
outputs:
- name: ip
  value: $(ref.{{ env["name"] }}.networkInterfaces[0].accessConfigs[0].natIP)
- name: internal
  value: $(ref.{{ env["name"] }}.networkInterfaces[0].networkIP)
`
	res := expanded(t, `imports: [vm.jinja]
resources:
- name: net
  type: compute.v1.network
  properties: {autoCreateSubnetworks: true}
- name: web
  type: vm.jinja
  properties: {zone: us-central1-a}
- name: settings
  type: ConfigMap
  properties:
    data:
      network: $(ref.net.selfLink)
      name: $(ref.net.name)
- name: bucket
  type: storage.v1.bucket
  metadata: {dependsOn: [settings]}
  properties: {location: US}
outputs:
- {name: address, value: "http://$(ref.web.ip)/"}
- {name: internal, value: $(ref.web.internal)}
- {name: network, value: $(ref.net.name)}
- {name: uid, value: $(ref.settings.metadata.uid)}
`, map[string]string{"vm.jinja": vm})
	m, err := Of(res, Options{Project: "proj", DeletionPolicy: "abandon"})
	if err != nil {
		t.Fatal(err)
	}
	net, web, cm, bucket := index(t, m, "ComputeNetwork", "net"), index(t, m, "ComputeInstance", "web"), index(t, m, "ConfigMap", "settings"), index(t, m, "StorageBucket", "bucket")
	for _, i := range []int{net, web, bucket} {
		o := m.Objects[i]
		ann := o.Object["metadata"].(map[string]any)["annotations"].(map[string]any)
		if !o.GCP || ann[gcp.ProjectAnnotation] != "proj" || ann[gcp.DeletionPolicyAnnotation] != "abandon" {
			t.Errorf("%s: GCP %v, annotations %v", o.Resource, o.GCP, ann)
		}
	}
	if m.Objects[cm].GCP || m.Objects[cm].Object["metadata"].(map[string]any)["annotations"] != nil {
		t.Errorf("the ConfigMap is a Config Connector object or annotated: %+v", m.Objects[cm])
	}
	// The ConfigMap reads the network's selfLink from its status; its name
	// is known now.
	data := m.Objects[cm].Object["data"].(map[string]any)
	if data["name"] != "net" {
		t.Errorf("$(ref.net.name) in a ConfigMap = %v, want net", data["name"])
	}
	if want := []Deferred{{Field: "/data/network", Ref: "$(ref.net.selfLink)", Target: net, Path: "status.selfLink", Ready: true}}; !reflect.DeepEqual(m.Objects[cm].Deferred, want) {
		t.Errorf("ConfigMap deferred %+v, want %+v", m.Objects[cm].Deferred, want)
	}
	// The instance reads the ConfigMap's uid (a Kubernetes object's field,
	// as written).
	if want := []Deferred{{Field: "/spec/metadata/0/value", Ref: "$(ref.settings.metadata.uid)", Target: cm, Path: "metadata.uid"}}; !reflect.DeepEqual(m.Objects[web].Deferred, want) {
		t.Errorf("instance deferred %+v, want %+v", m.Objects[web].Deferred, want)
	}
	if !(net < cm && cm < web && cm < bucket) {
		t.Errorf("order net %d, settings %d, web %d, bucket %d: each must come after what it reads or depends on", net, cm, web, bucket)
	}
	if !reflect.DeepEqual(m.Objects[bucket].After, []int{cm}) {
		t.Errorf("bucket After %v, want [%d]", m.Objects[bucket].After, cm)
	}
	want := []Output{
		{Name: "address", Value: "http://$(ref.web.networkInterfaces[0].accessConfigs[0].natIP)/", Deferred: []Deferred{
			{Field: "", Ref: "$(ref.web.networkInterfaces[0].accessConfigs[0].natIP)", Target: web, Path: "spec.networkInterface[0].accessConfig[0].natIpRef.external", Ready: true}}},
		{Name: "internal", Value: "$(ref.web.networkInterfaces[0].networkIP)", Deferred: []Deferred{
			{Field: "", Ref: "$(ref.web.networkInterfaces[0].networkIP)", Target: web, Path: "spec.networkInterface[0].networkIp", Ready: true}}},
		{Name: "network", Value: "net"},
		{Name: "uid", Value: "$(ref.settings.metadata.uid)", Deferred: []Deferred{{Field: "", Ref: "$(ref.settings.metadata.uid)", Target: cm, Path: "metadata.uid"}}},
	}
	if !reflect.DeepEqual(m.Outputs, want) {
		t.Errorf("outputs:\n%+v\nwant\n%+v", m.Outputs, want)
	}
	// The engine's result is left as it was.
	if got := res.Config.Resources[2].Properties["data"].(map[string]any)["name"]; got != "$(ref.net.name)" {
		t.Errorf("the expansion's ConfigMap changed: name %v", got)
	}
}

// TestKubernetesOnly: without Google Cloud resources nothing needs a
// project, and the objects are the engine's.
func TestKubernetesOnly(t *testing.T) {
	res := expanded(t, `resources:
- {name: svc, type: Service, properties: {spec: {ports: [{port: 80}]}}}
- {name: cm, type: ConfigMap, properties: {data: {ip: $(ref.svc.spec.clusterIP)}}}
`, nil)
	m, err := Of(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Objects) != 2 || m.Objects[0].Resource != "svc" || m.Objects[1].Object["kind"] != "ConfigMap" {
		t.Fatalf("objects %+v", m.Objects)
	}
	if want := []Deferred{{Field: "/data/ip", Ref: "$(ref.svc.spec.clusterIP)", Target: 0, Path: "spec.clusterIP"}}; !reflect.DeepEqual(m.Objects[1].Deferred, want) {
		t.Errorf("deferred %+v", m.Objects[1].Deferred)
	}
	if HasGCP(res) {
		t.Error("HasGCP of Kubernetes objects")
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		opts      Options
		want      []string
	}{
		{"not an object", "resources:\n- {name: vm, type: Widget}\n", Options{}, []string{`layout path vm: resource vm: type "Widget" is not a Kubernetes kind`}},
		{"no project", "resources:\n- {name: net, type: compute.v1.network}\n", Options{}, []string{"resource net, type compute.v1.network: no project", "--project"}},
		{"unsupported", "resources:\n- {name: x, type: compute.v1.instanceGroupManagerz, properties: {project: p}}\n", Options{}, []string{"type compute.v1.instanceGroupManagerz is not a supported Google Cloud type", "did you mean"}},
		{"both kinds fail", "resources:\n- {name: a, type: Widget}\n- {name: b, type: runtimeconfig.v1beta1.config, properties: {config: c}}\n", Options{Project: "p"},
			[]string{"resource a: type", "runtimeconfig.v1beta1.config has no Config Connector equivalent"}},
		{"dependsOn nothing", "resources:\n- {name: n, type: compute.v1.network, metadata: {dependsOn: [ghost]}}\n", Options{Project: "p"}, []string{"ghost"}},
		{"cycle", `resources:
- {name: a, type: ConfigMap, metadata: {dependsOn: [b]}}
- {name: b, type: ConfigMap, metadata: {dependsOn: [a]}}
`, Options{}, []string{"dependsOn cycle: a -> b -> a"}},
		{"bad deletion policy", "resources:\n- {name: n, type: compute.v1.network}\n", Options{Project: "p", DeletionPolicy: "keep"}, []string{`deletion policy "keep"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Of(expanded(t, tc.cfg, nil), tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestPointer(t *testing.T) {
	obj := map[string]any{"a": map[string]any{"b/c": []any{"x", "y"}}}
	if v, ok := PointerGet(obj, "/a/b~1c/1"); !ok || v != "y" {
		t.Fatalf("PointerGet = %v, %v", v, ok)
	}
	if !PointerSet(obj, "/a/b~1c/0", "z") {
		t.Fatal("PointerSet failed")
	}
	if v, _ := PointerGet(obj, "/a/b~1c/0"); v != "z" {
		t.Fatalf("after set: %v", v)
	}
	if PointerSet(obj, "/a/nope/0", 1) {
		t.Fatal("PointerSet of a missing parent succeeded")
	}
}

// TestOutputWarning: an output reading a field the live Config Connector
// object does not carry is a warning, and stays unresolved.
func TestOutputWarning(t *testing.T) {
	res := expanded(t, `resources:
- {name: ring, type: gcp-types/cloudkms-v1:projects.locations.keyRings, properties: {parent: projects/p/locations/us-central1, keyRingId: ring}}
outputs:
- {name: odd, value: $(ref.ring.nothingLikeThis)}
`, nil)
	m, err := Of(res, Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "output odd: $(ref.ring.nothingLikeThis): the live KMSKeyRing carries no nothingLikeThis") {
		t.Errorf("warnings %q", m.Warnings)
	}
	if len(m.Outputs) != 1 || m.Outputs[0].Value != "$(ref.ring.nothingLikeThis)" || len(m.Outputs[0].Deferred) != 0 {
		t.Errorf("outputs %+v", m.Outputs)
	}
}
