package controller

import (
	"context"
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/instance"
)

// TestDefinedKindStatus writes statuses as an instance of a defined kind
// holds them (outputs top-level) and reads them back: the same status, so
// that an idle resync writes nothing; an output named like a status field
// is dropped.
func TestDefinedKindStatus(t *testing.T) {
	now := metav1.Now().Rfc3339Copy()
	full := v1alpha1.TemplateInstanceStatus{
		ObservedGeneration: 3, Resolved: "github.com/o/r/web:v1.0.0", Digest: "sha256:1", Revision: 2,
		Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Succeeded", Message: "ok", LastTransitionTime: now, ObservedGeneration: 3}},
		Inventory:  []v1alpha1.ObjectReference{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "web"}},
		Outputs:    &apiextensionsv1.JSON{Raw: []byte(`{"ip":"10.0.0.1","ready":{"replicas":2}}`)},
	}
	def := &v1alpha1.TemplateDefinition{Spec: v1alpha1.TemplateDefinitionSpec{Template: "web:v1"}}
	for _, tc := range []struct {
		name     string
		st       v1alpha1.TemplateInstanceStatus
		want     v1alpha1.TemplateInstanceStatus
		topLevel map[string]any
	}{
		{"empty", v1alpha1.TemplateInstanceStatus{}, v1alpha1.TemplateInstanceStatus{}, nil},
		{"full", full, full, map[string]any{"ip": "10.0.0.1", "revision": int64(2)}},
		{"an output named like a field", v1alpha1.TemplateInstanceStatus{Revision: 1, Outputs: &apiextensionsv1.JSON{Raw: []byte(`{"revision":9,"x":1}`)}},
			v1alpha1.TemplateInstanceStatus{Revision: 1, Outputs: &apiextensionsv1.JSON{Raw: []byte(`{"x":1}`)}}, map[string]any{"revision": int64(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := statusObject(&tc.st)
			if err != nil {
				t.Fatal(err)
			}
			// Through JSON, as the apiserver returns it.
			b, _ := json.Marshal(map[string]any{"apiVersion": "a.example.com/v1", "kind": "A", "metadata": map[string]any{"name": "web", "namespace": "ns"}, "spec": map[string]any{"p": 1}, "status": st})
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(b); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.topLevel {
				if got := u.Object["status"].(map[string]any)[k]; !equality.Semantic.DeepEqual(got, v) {
					t.Errorf("status.%s = %#v, want %#v", k, got, v)
				}
			}
			ti, err := asInstance(u, def)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(ti.Status, tc.want) {
				t.Errorf("read back\n %+v\nwant\n %+v", ti.Status, tc.want)
			}
			// The status template again gives an output it cannot
			// have: nothing is written (a write would need a client).
			if tc.st.Outputs != nil {
				ti.Status.Outputs = tc.st.Outputs
				if err := (&definedKind{obj: u}).writeStatus(context.Background(), ti); err != nil {
					t.Errorf("writing the status read: %v", err)
				}
			}
			if ti.Spec.Template != "web:v1" || string(ti.Spec.Properties.Raw) != `{"p":1}` || ti.Name != "web" || ti.Namespace != "ns" {
				t.Errorf("instance %+v", ti)
			}
		})
	}
}

// TestDefinedKindGCP: an instance of a defined kind takes its definition's
// Google Cloud settings (its spec holds only properties), a copy that
// reconciling it cannot change.
func TestDefinedKindGCP(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "a.example.com/v1", "kind": "VM",
		"metadata": map[string]any{"name": "vm", "namespace": "ns"}, "spec": map[string]any{"zone": "us-central1-a"},
	}}
	for _, tc := range []struct {
		name    string
		gcp     *v1alpha1.GCPSpec
		project string
		policy  string
	}{
		{"none", nil, "", "delete"},
		{"abandon", &v1alpha1.GCPSpec{DeletionPolicy: v1alpha1.GCPAbandon}, "", "abandon"},
		{"project", &v1alpha1.GCPSpec{Project: "acme", DeletionPolicy: v1alpha1.GCPDelete}, "acme", "delete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := &v1alpha1.TemplateDefinition{Spec: v1alpha1.TemplateDefinitionSpec{Template: "gcp/vm:v1", GCP: tc.gcp}}
			ti, err := asInstance(u, def)
			if err != nil {
				t.Fatal(err)
			}
			if got := instance.GCPProject(ti); got != tc.project {
				t.Errorf("project %q, want %q", got, tc.project)
			}
			if got := instance.GCPDeletionPolicy(ti); got != tc.policy {
				t.Errorf("deletion policy %q, want %q", got, tc.policy)
			}
			if tc.gcp != nil && ti.Spec.GCP == tc.gcp {
				t.Error("the instance shares the definition's settings")
			}
		})
	}
}
