package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func TestTier(t *testing.T) {
	order := []schema.GroupVersionKind{
		{Version: "v1", Kind: "Namespace"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		{Version: "v1", Kind: "ServiceAccount"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "PersistentVolumeClaim"},
		{Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "batch", Version: "v1", Kind: "CronJob"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		{Group: "example.com", Version: "v1", Kind: "Widget"},
	}
	for i := 1; i < len(order); i++ {
		if a, b := Tier(order[i-1]), Tier(order[i]); a > b {
			t.Errorf("Tier(%s) = %d > Tier(%s) = %d", order[i-1].Kind, a, order[i].Kind, b)
		}
	}
	if Tier(order[0]) == Tier(order[len(order)-1]) {
		t.Error("namespaces and custom resources share a tier")
	}
}

func TestByTierKeepsOrder(t *testing.T) {
	kinds := []string{"Deployment", "ConfigMap", "Namespace", "ConfigMap", "Deployment"}
	got := byTier(kinds, func(k string) schema.GroupVersionKind {
		g := ""
		if k == "Deployment" {
			g = "apps"
		}
		return schema.GroupVersionKind{Group: g, Version: "v1", Kind: k}
	})
	want := [][]int{{2}, {1, 3}, {0, 4}}
	if len(got) != len(want) {
		t.Fatalf("byTier = %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) || got[i][0] != want[i][0] || got[i][len(got[i])-1] != want[i][len(want[i])-1] {
			t.Errorf("byTier = %v, want %v", got, want)
		}
	}
}

func TestObjectRefString(t *testing.T) {
	for _, tt := range []struct {
		ref  ObjectRef
		want string
	}{
		{ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "x"}, "ConfigMap default/x"},
		{ObjectRef{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "admin"}, "ClusterRole.rbac.authorization.k8s.io admin"},
		{ObjectRef{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "ns", Name: "w"}, "Widget.example.com ns/w"},
	} {
		if got := tt.ref.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.ref, got, tt.want)
		}
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("apps/v1")
	obj.SetKind("Deployment")
	obj.SetNamespace("ns")
	obj.SetName("web")
	if got, want := RefOf(obj), (ObjectRef{"apps", "v1", "Deployment", "ns", "web"}); got != want {
		t.Errorf("RefOf = %#v, want %#v", got, want)
	}
	err := error(&ObjectError{Ref: RefOf(obj), Err: errors.New("boom")})
	if err.Error() != "Deployment.apps ns/web: boom" {
		t.Errorf("ObjectError = %q", err)
	}
}

func TestApplyErrorConflict(t *testing.T) {
	status := apierrors.NewApplyConflict([]metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl" using v1`, Field: ".data.a"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "helm" using v1`, Field: ".data.b"},
	}, "Apply failed with 2 conflicts")
	err := applyError(status)
	msg := err.Error()
	for _, want := range []string{`.data.a (owned by "kubectl" using v1)`, `.data.b (owned by "helm"`, "--force-conflicts"} {
		if !strings.Contains(msg, want) {
			t.Errorf("conflict error %q lacks %q", msg, want)
		}
	}
	if !apierrors.IsConflict(err) {
		t.Error("the conflict error does not wrap the server's status")
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no"))
	if got := applyError(forbidden); got != error(forbidden) {
		t.Errorf("applyError changed a forbidden error: %v", got)
	}
}

func TestDiffObjects(t *testing.T) {
	live := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns, uid: u1, resourceVersion: "5", managedFields: [{manager: dm}]}, data: {a: "1", b: "2"}}`)
	same := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns, uid: u1, resourceVersion: "6"}, data: {a: "1", b: "2"}}`)
	changed := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: n}, data: {a: "1", b: "3"}}`)
	ref := RefOf(live)
	if d, err := diffObjects(ref, live, same); err != nil || d != "" {
		t.Errorf("equal objects: diff %q, %v", d, err)
	}
	d, err := diffObjects(ref, live, changed)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- live/ConfigMap ns/x", "+++ dm/ConfigMap ns/x", `-  b: "2"`, `+  b: "3"`} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if d, _ := diffObjects(ref, nil, changed); !strings.Contains(d, "+kind: ConfigMap") || strings.Contains(d, "\n-") {
		t.Errorf("new object diff:\n%s", d)
	}
	if d, _ := diffObjects(ref, live, nil); !strings.Contains(d, "-kind: ConfigMap") {
		t.Errorf("gone object diff:\n%s", d)
	}
}

func obj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// Recreate creates: without a dry run nothing would delete the object
// that holds the name first, so Apply refuses it before any request.
func TestRecreateOnlyInDryRuns(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}
	_, err := (&Client{}).Apply(context.Background(), []*unstructured.Unstructured{cm}, ApplyOptions{Recreate: true})
	if err == nil || !strings.Contains(err.Error(), "Recreate is for dry runs only") {
		t.Errorf("Apply with Recreate and no DryRun: %v", err)
	}
}

// TestConfigConnectorStatus: a Config Connector object is Current only
// with Ready True (kstatus alone calls an object without conditions
// Current); Ready False says KCC's reason and message, Failed for the
// reasons that need someone to act.
func TestConfigConnectorStatus(t *testing.T) {
	ref := ObjectRef{Group: "compute.cnrm.cloud.google.com", Version: "v1beta1", Kind: "ComputeInstance", Namespace: "ns", Name: "vm"}
	for _, tc := range []struct {
		name, status string
		want, msg    string
	}{
		{"no status", ``, "InProgress", "Config Connector has not reconciled it yet"},
		{"ready", `{observedGeneration: 2, conditions: [{type: Ready, status: "True", reason: UpToDate, message: The resource is up to date}]}`, "Current", "UpToDate: The resource is up to date"},
		{"ready for an older generation", `{observedGeneration: 1, conditions: [{type: Ready, status: "True", reason: UpToDate}]}`, "InProgress", ""},
		{"update failed", `{observedGeneration: 2, conditions: [{type: Ready, status: "False", reason: UpdateFailed, message: "Update call failed: error applying desired state: googleapi: Error 403: Required 'compute.instances.create' permission"}]}`,
			"Failed", "UpdateFailed: Update call failed: error applying desired state: googleapi: Error 403"},
		{"dependency not ready", `{observedGeneration: 2, conditions: [{type: Ready, status: "False", reason: DependencyNotReady, message: reference ComputeNetwork ns/net is not ready}]}`,
			"InProgress", "DependencyNotReady: reference ComputeNetwork ns/net is not ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := "apiVersion: compute.cnrm.cloud.google.com/v1beta1\nkind: ComputeInstance\nmetadata: {name: vm, namespace: ns, generation: 2}\n"
			if tc.status != "" {
				y += "status: " + tc.status + "\n"
			}
			j, err := yaml.YAMLToJSON([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(j); err != nil {
				t.Fatal(err)
			}
			got := statusOf(ref, obj)
			if got.Status != tc.want || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("status %s: %s; want %s: %s", got.Status, got.Message, tc.want, tc.msg)
			}
		})
	}
	// Other kinds keep kstatus's rules.
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
	if got := statusOf(ObjectRef{Group: "example.com", Version: "v1", Kind: "Widget", Name: "w"}, cm); got.Status != Current {
		t.Errorf("a Widget without conditions: %s, want Current", got.Status)
	}
}
