package kube

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseFieldPath(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []any
		wantErr string
	}{
		{in: "{.spec.replicas}", want: []any{"spec", "replicas"}},
		{in: ".spec.template.spec.containers[0].image", want: []any{"spec", "template", "spec", "containers", 0, "image"}},
		{in: "metadata.labels['app.kubernetes.io/name']", want: []any{"metadata", "labels", "app.kubernetes.io/name"}},
		{in: `$.data["a.b"]`, want: []any{"data", "a.b"}},
		{in: ".a..b", wantErr: "empty field name"},
		{in: ".a[x]", wantErr: "neither an index nor a quoted key"},
		{in: ".a[0", wantErr: "unclosed"},
		{in: "{}", wantErr: "empty"},
	} {
		got, err := parseFieldPath(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseFieldPath(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseFieldPath(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"NOEQUALS", "=.a", "A B=.a", "A="} {
		if _, err := ParseExportParam(bad); err == nil {
			t.Errorf("ParseExportParam(%q) succeeded", bad)
		}
	}
	if p, err := ParseExportParam("REPLICAS={.spec.replicas}"); err != nil || p != (ExportParam{"REPLICAS", "{.spec.replicas}"}) {
		t.Errorf("ParseExportParam = %v, %v", p, err)
	}
}

const liveObjects = `
- apiVersion: v1
  kind: Service
  metadata:
    name: web
    namespace: shop
    uid: 7f0c
    resourceVersion: "812"
    creationTimestamp: "2026-11-23T00:00:00Z"
    managedFields: [{manager: kubectl}]
    annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}", team: shop}
  spec: {clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 80}], selector: {app: web}}
  status: {loadBalancer: {}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: shop, generation: 3, labels: {app: web}, annotations: {deployment.kubernetes.io/revision: "3"}}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}, creationTimestamp: null}
      spec: {containers: [{name: web, image: "nginx:1.27"}]}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: web-5d8f, namespace: shop, ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: u, controller: true}]}
- apiVersion: v1
  kind: ServiceAccount
  metadata: {name: default, namespace: shop}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: kube-root-ca.crt, namespace: shop}
- apiVersion: v1
  kind: Secret
  type: kubernetes.io/service-account-token
  metadata: {name: default-token-x, namespace: shop}
- apiVersion: v1
  kind: Pod
  metadata: {generateName: job-, name: job-x7k2, namespace: shop}
  spec: {containers: [{name: c, image: "nginx:1.27"}]}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: once, namespace: shop}
  spec:
    selector: {matchLabels: {batch.kubernetes.io/controller-uid: abc}}
    template:
      metadata: {labels: {batch.kubernetes.io/controller-uid: abc, controller-uid: abc, job-name: once, batch.kubernetes.io/job-name: once, app: once}}
      spec: {restartPolicy: Never, containers: [{name: c, image: "nginx:1.27"}]}
`

func liveList(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	list := obj(t, "items:"+liveObjects).Object["items"].([]any)
	out := make([]*unstructured.Unstructured, len(list))
	for i, o := range list {
		out[i] = &unstructured.Unstructured{Object: o.(map[string]any)}
	}
	return out
}

func TestExport(t *testing.T) {
	tmpl, err := Export("shop", liveList(t), []ExportParam{
		{Name: "REPLICAS", Path: "{.spec.replicas}"},
		{Name: "IMAGE", Path: ".spec.template.spec.containers[0].image"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tmpl["kind"] != "Template" || tmpl["apiVersion"] != "template.openshift.io/v1" {
		t.Errorf("not a Template: %v", tmpl)
	}
	objects := tmpl["objects"].([]any)
	var kinds []string
	for _, o := range objects {
		kinds = append(kinds, o.(map[string]any)["kind"].(string))
	}
	if got, want := strings.Join(kinds, ","), "Service,Deployment,Pod,Job"; got != want {
		t.Errorf("exported kinds %s, want %s", got, want)
	}
	svc := &unstructured.Unstructured{Object: objects[0].(map[string]any)}
	if _, ok := svc.Object["status"]; ok {
		t.Error("status kept")
	}
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "namespace"} {
		if _, ok, _ := unstructured.NestedFieldNoCopy(svc.Object, "metadata", f); ok {
			t.Errorf("metadata.%s kept", f)
		}
	}
	if got := svc.GetAnnotations(); !reflect.DeepEqual(got, map[string]string{"team": "shop"}) {
		t.Errorf("annotations = %v, want only team", got)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(svc.Object, "spec", "clusterIP"); ok {
		t.Error("clusterIP kept")
	}
	dep := objects[1].(map[string]any)
	if got := dep["spec"].(map[string]any)["replicas"]; got != "${{REPLICAS}}" {
		t.Errorf("replicas = %v, want ${{REPLICAS}}", got)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(dep, "metadata", "annotations"); ok {
		t.Error("empty annotations kept")
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(dep, "spec", "template", "metadata", "creationTimestamp"); ok {
		t.Error("the pod template's null creationTimestamp kept")
	}
	pod := &unstructured.Unstructured{Object: objects[2].(map[string]any)}
	if pod.GetName() != "" || pod.GetGenerateName() != "job-" {
		t.Errorf("pod name %q generateName %q: generateName should win", pod.GetName(), pod.GetGenerateName())
	}
	job := objects[3].(map[string]any)
	// The Deployment's and the Job's first image are lifted; the Pod's is at another path.
	if img, _, _ := unstructured.NestedSlice(job, "spec", "template", "spec", "containers"); img[0].(map[string]any)["image"] != "${IMAGE}" {
		t.Errorf("job image = %v", img[0])
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(job, "spec", "selector"); ok {
		t.Error("job selector kept")
	}
	if labels, _, _ := unstructured.NestedStringMap(job, "spec", "template", "metadata", "labels"); !reflect.DeepEqual(labels, map[string]string{"app": "once"}) {
		t.Errorf("job template labels = %v", labels)
	}
	want := []any{
		map[string]any{"name": "REPLICAS", "value": "2"},
		map[string]any{"name": "IMAGE", "value": "nginx:1.27"},
	}
	if !reflect.DeepEqual(tmpl["parameters"], want) {
		t.Errorf("parameters = %v, want %v", tmpl["parameters"], want)
	}
}

func TestExportParamErrors(t *testing.T) {
	objs := liveList(t)
	for _, tt := range []struct {
		param ExportParam
		want  string
	}{
		{ExportParam{"X", ".spec.nothing"}, "no exported object has .spec.nothing"},
		{ExportParam{"NAME", ".metadata.name"}, "Service web has web at .metadata.name but Job.batch once has once"},
		{ExportParam{"P", ".a[b]"}, "neither an index"},
	} {
		if _, err := Export("x", objs, []ExportParam{tt.param}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Export(%v) error = %v, want %q", tt.param, err, tt.want)
		}
	}
}
