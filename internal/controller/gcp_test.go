package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/gcp/kcctest"
)

// gcpTemplate is a template written the Deployment Manager way: Google
// Cloud types, a reference to a live field in a metadata value, template
// outputs; with denied, a firewall rule Google Cloud refuses.
const gcpTemplate = `resources:
- name: {{ env["deployment"] }}-net
  type: compute.v1.network
  properties: {autoCreateSubnetworks: true}
- name: {{ env["deployment"] }}-ip
  type: compute.v1.address
  properties: {region: us-central1}
- name: {{ env["deployment"] }}-vm
  type: compute.v1.instance
  properties:
    zone: {{ properties["zone"] }}
    machineType: zones/{{ properties["zone"] }}/machineTypes/e2-small
    disks: [{boot: true, autoDelete: true, initializeParams: {sourceImage: projects/debian-cloud/global/images/family/debian-12}}]
    networkInterfaces: [{network: $(ref.{{ env["deployment"] }}-net.selfLink)}]
    metadata:
      items: [{key: backend, value: "$(ref.{{ env["deployment"] }}-ip.address):8080"}]
{% if properties["denied"] %}
- name: {{ env["deployment"] }}-deny
  type: compute.v1.firewall
  properties:
    network: $(ref.{{ env["deployment"] }}-net.selfLink)
    allowed: [{IPProtocol: tcp, ports: ["22"]}]
{% endif %}
outputs:
- name: address
  value: $(ref.{{ env["deployment"] }}-ip.address)
- name: internalIP
  value: $(ref.{{ env["deployment"] }}-vm.networkInterfaces[0].networkIP)
- name: zone
  value: {{ properties["zone"] }}
`

var gcpTestKinds = []string{"ComputeNetwork", "ComputeAddress", "ComputeInstance", "ComputeFirewall"}

// TestGCPInstance: dm-controller reconciles a TemplateInstance of a
// Deployment Manager template into Config Connector objects, as the
// instance's ServiceAccount (which needs rights on the KCC kinds and on
// Secrets for the history): its outputs read from the live objects in
// status.outputs, spec.gcp's project and deletion policy on every object,
// and a refused Google Cloud call named in its Ready condition; an
// instance of a kind defined by the template takes its definition's
// spec.gcp.
func TestGCPInstance(t *testing.T) {
	h := setup(t)
	kcctest.InstallCRDs(t, h.env, gcpTestKinds...)
	ns := h.env.Namespace(t)
	c := &kcctest.Controller{
		Env: h.env, Namespace: ns, Kinds: gcpTestKinds,
		Status: func(obj map[string]any) map[string]any {
			if obj["kind"] == "ComputeAddress" {
				return map[string]any{"observedState": map[string]any{"address": "198.51.100.7"}}
			}
			return nil
		},
		Spec: func(obj map[string]any) map[string]any {
			nics, _ := obj["spec"].(map[string]any)["networkInterface"].([]any)
			if len(nics) == 0 || nics[0].(map[string]any)["networkIp"] != nil {
				return nil
			}
			nics[0].(map[string]any)["networkIp"] = "10.128.0.9"
			return map[string]any{"networkInterface": nics}
		},
		Fail: func(obj map[string]any) string {
			if strings.HasSuffix(obj["metadata"].(map[string]any)["name"].(string), "-deny") {
				return "googleapi: Error 403: Required 'compute.firewalls.create' permission, forbidden"
			}
			return ""
		},
	}
	c.Start(t)

	// The template, published in the watched registry directory.
	d := filepath.Join(h.dir, "gcpweb", "v1.0.0")
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "gcpweb.jinja.schema"), []byte("required: [zone]\nproperties:\n  zone: {type: string}\n  denied: {type: boolean, default: false}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(d, ".gcpweb.jinja"), []byte(gcpTemplate), 0o644))
	must(t, os.Rename(filepath.Join(d, ".gcpweb.jinja"), filepath.Join(d, "gcpweb.jinja")))

	// The account: the KCC kinds, and Secrets for dm's history.
	h.account(t, ns, "deployer", true)
	must(t, h.c.Create(context.Background(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kcc"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"compute.cnrm.cloud.google.com"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}))
	must(t, h.c.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kcc"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kcc"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
	}))

	h.instance(t, ns, "shop", v1alpha1.TemplateInstanceSpec{
		Template: "gcpweb:v1", ServiceAccountName: "deployer", Properties: props(t, `{"zone":"us-central1-b"}`),
		GCP: &v1alpha1.GCPSpec{Project: "acme-shop", DeletionPolicy: v1alpha1.GCPAbandon},
	})
	ti := h.condition(t, ns, "shop", v1alpha1.ConditionReady, metav1.ConditionTrue)
	var outputs map[string]any
	if ti.Status.Outputs == nil || json.Unmarshal(ti.Status.Outputs.Raw, &outputs) != nil {
		t.Fatalf("status.outputs: %v", ti.Status.Outputs)
	}
	if want := map[string]any{"address": "198.51.100.7", "internalIP": "10.128.0.9", "zone": "us-central1-b"}; fmt.Sprint(outputs) != fmt.Sprint(want) {
		t.Errorf("status.outputs %v, want %v", outputs, want)
	}
	if len(ti.Status.Inventory) != 3 {
		t.Errorf("inventory %+v, want the network, the address and the instance", ti.Status.Inventory)
	}
	vm := &unstructured.Unstructured{}
	vm.SetGroupVersionKind(schema.GroupVersionKind{Group: "compute.cnrm.cloud.google.com", Version: "v1beta1", Kind: "ComputeInstance"})
	must(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-vm"}, vm))
	if a := vm.GetAnnotations(); a[gcp.ProjectAnnotation] != "acme-shop" || a[gcp.DeletionPolicyAnnotation] != "abandon" {
		t.Errorf("the instance's annotations: %v", a)
	}
	md, _, _ := unstructured.NestedSlice(vm.Object, "spec", "metadata")
	if v := md[0].(map[string]any)["value"]; v != "198.51.100.7:8080" {
		t.Errorf("the deferred reference: %v", v)
	}
	// Revision 1, and perhaps 2 when dm took over the fields Config
	// Connector wrote into the instance's spec (state-into-spec).
	if hist := h.history(t, ns, "shop"); len(hist) > 2 || hist[len(hist)-1].Project != "acme-shop" || hist[len(hist)-1].DeletionPolicy != "abandon" {
		t.Errorf("history: %d revisions, project %q, policy %q", len(hist), hist[len(hist)-1].Project, hist[len(hist)-1].DeletionPolicy)
	}

	// A kind defined by the same template: its definition's spec.gcp
	// holds every instance's settings.
	h.definition(t, &v1alpha1.TemplateDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gcpweb"},
		Spec: v1alpha1.TemplateDefinitionSpec{
			Group: "apps.example.com", Names: v1alpha1.DefinitionNames{Kind: "GCPWeb"}, Template: "gcpweb:v1",
			GCP: &v1alpha1.GCPSpec{Project: "acme-defined", DeletionPolicy: v1alpha1.GCPAbandon},
		},
	})
	gvk := schema.GroupVersionKind{Group: "apps.example.com", Version: "v1alpha1", Kind: "GCPWeb"}
	site := object(gvk, ns, "site", "deployer", map[string]any{"zone": "us-central1-c"})
	must(t, h.c.Create(context.Background(), site))
	// Before the definition's cleanup (last registered, first run): a
	// definition waits for its instances.
	t.Cleanup(func() { _ = h.c.Delete(context.Background(), site) })
	h.readyObject(t, gvk, ns, "site")
	must(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "site-vm"}, vm))
	if a := vm.GetAnnotations(); a[gcp.ProjectAnnotation] != "acme-defined" || a[gcp.DeletionPolicyAnnotation] != "abandon" {
		t.Errorf("the defined kind's instance's annotations: %v", a)
	}

	// A resource Google Cloud refuses: not Ready, naming it and why.
	h.update(t, ns, "shop", func(ti *v1alpha1.TemplateInstance) {
		ti.Spec.Properties = props(t, `{"zone":"us-central1-b","denied":true}`)
	})
	eventually(t, "shop unready with KCC's reason", func() error {
		ti := h.get(t, ns, "shop")
		c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || ti.Status.ObservedGeneration != ti.Generation || c.Status != metav1.ConditionFalse ||
			!strings.Contains(c.Message, "unready: ComputeFirewall shop-deny (Failed: UpdateFailed: Update call failed: error applying desired state: googleapi: Error 403") {
			return fmt.Errorf("Ready: %+v", c)
		}
		return nil
	})
}

// TestOutputsRedacted: a template's DM outputs in status.outputs never
// show a secret: one that reads a Secret, or holds a property the schema
// marks writeOnly, reads "(redacted)"; the others are read as they are.
func TestOutputsRedacted(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	d := filepath.Join(h.dir, "outsecret", "v1.0.0")
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "outsecret.jinja.schema"), []byte("properties:\n  password: {type: string, writeOnly: true}\n"), 0o644))
	tmpl := `resources:
- name: secret
  type: Secret
  properties: {apiVersion: v1, kind: Secret, metadata: {name: "{{ env['deployment'] }}-s"}, stringData: {password: "{{ properties.password }}"}}
- name: cm
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ env['deployment'] }}-c"}, data: {a: b}}
outputs:
- {name: fromSecret, value: $(ref.secret.data.password)}
- {name: echoed, value: "pw={{ properties.password }}"}
- {name: plain, value: $(ref.cm.data.a)}
- {name: uid, value: $(ref.cm.metadata.name)}
`
	must(t, os.WriteFile(filepath.Join(d, ".outsecret.jinja"), []byte(tmpl), 0o644))
	must(t, os.Rename(filepath.Join(d, ".outsecret.jinja"), filepath.Join(d, "outsecret.jinja")))
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "leak", v1alpha1.TemplateInstanceSpec{Template: "outsecret:v1", ServiceAccountName: "deployer", Properties: props(t, `{"password":"hunter22"}`)})
	ti := h.condition(t, ns, "leak", v1alpha1.ConditionReady, metav1.ConditionTrue)
	var outputs map[string]any
	if ti.Status.Outputs == nil || json.Unmarshal(ti.Status.Outputs.Raw, &outputs) != nil {
		t.Fatalf("status.outputs: %v", ti.Status.Outputs)
	}
	want := map[string]any{"fromSecret": "(redacted)", "echoed": "(redacted)", "plain": "b", "uid": "leak-c"}
	if fmt.Sprint(outputs) != fmt.Sprint(want) {
		t.Errorf("status.outputs %v, want %v", outputs, want)
	}
}
