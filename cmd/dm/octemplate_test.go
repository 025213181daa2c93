package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
)

const clusterTemplate = `
apiVersion: template.openshift.io/v1
kind: Template
metadata:
  name: db
labels:
  app: db
parameters:
- name: NAME
  required: true
- name: PASSWORD
  generate: expression
  from: "[a-z0-9]{12}"
- name: REPLICAS
  value: "2"
objects:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: ${NAME}
  data:
    password: ${PASSWORD}
    replicas: ${REPLICAS}
`

// TestClusterTemplateCommands drives dm install openshift-template-crd,
// dm process NAMESPACE/NAME and dm deploy template:NAMESPACE/NAME against
// a real apiserver.
func TestClusterTemplateCommands(t *testing.T) {
	env := kubetest.Start(t)
	ns := env.Namespace(t)
	home := t.TempDir()
	dm := func(kubeconfig string, args ...string) result {
		t.Helper()
		return dmRun(t, map[string]string{"HOME": home}, append([]string{"--kubeconfig", kubeconfig, "-n", ns, "--no-prompt"}, args...)...)
	}
	admin := func(args ...string) result { t.Helper(); return dm(env.Kubeconfig, args...) }
	want := func(r result, code int, text string) {
		t.Helper()
		if r.code != code || !strings.Contains(r.stdout+r.stderr, text) {
			t.Fatalf("exit %d, want %d and %q\nstdout: %s\nstderr: %s", r.code, code, text, r.stdout, r.stderr)
		}
	}

	want(admin("process", ns+"/db"), 1, "dm install openshift-template-crd")
	want(admin("install", "openshift-template-crd"), 0, "created")
	want(admin("install", "openshift-template-crd"), 0, "unchanged")
	want(admin("install"), 2, "openshift-template-crd")

	c, err := kube.New(context.Background(), kube.Config{Kubeconfig: env.Kubeconfig, Namespace: ns, DiscoveryCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(clusterTemplate), &m); err != nil {
		t.Fatal(err)
	}
	tmpl := &unstructured.Unstructured{Object: m}
	tmpl.SetNamespace(ns)
	if _, err := c.Apply(context.Background(), []*unstructured.Unstructured{tmpl}, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	// process: both spellings, parameters as oc takes them.
	for _, arg := range []string{ns + "/db", "template:" + ns + "/db"} {
		r := admin("process", arg, "-p", "NAME=orders", "REPLICAS=3")
		want(r, 0, "orders")
		var list struct {
			Kind  string           `json:"kind"`
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 {
			t.Fatalf("process %s: %v\n%s", arg, err, r.stdout)
		}
		d := list.Items[0]["data"].(map[string]any)
		if d["replicas"] != "3" || len(d["password"].(string)) != 12 {
			t.Errorf("process %s: data %v", arg, d)
		}
	}
	want(admin("process", ns+"/db"), 1, "NAME")
	want(admin("process", ns+"/nope"), 1, "no Template nope in namespace "+ns)
	want(admin("process", ns+"/db", "--parameters"), 0, "PASSWORD")

	// RBAC decides: a user without get on templates is refused.
	want(dm(env.LimitedKubeconfig, "process", ns+"/db", "-p", "NAME=x"), 1, "not allowed to get templates.template.openshift.io in namespace "+ns)

	// deploy: dm's deploy, with history and prune.
	want(admin("deploy", "template:"+ns+"/db"), 1, "NAME")
	want(admin("deploy", "template:"+ns+"/db", "--properties", "NAME=orders"), 0, "")
	cm, err := c.Get(context.Background(), kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "orders"})
	if err != nil {
		t.Fatalf("deployed ConfigMap: %v", err)
	}
	if p, _, _ := unstructured.NestedString(cm.Object, "data", "password"); len(p) != 12 {
		t.Errorf("generated password %q", p)
	}
	if cm.GetLabels()["app"] != "db" || cm.GetLabels()["dm.io/deployment"] != "db" {
		t.Errorf("labels %v", cm.GetLabels())
	}
	want(admin("update", "db", "template:"+ns+"/db", "--properties", "NAME=invoices"), 0, "")
	if _, err := c.Get(context.Background(), kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "orders"}); err == nil {
		t.Error("update did not prune the ConfigMap the new revision no longer has")
	}
	want(admin("history", "db"), 0, "2")
	want(dm(env.LimitedKubeconfig, "deploy", "template:"+ns+"/db", "--name", "other", "--properties", "NAME=x"), 1, "not allowed to get templates")
}

func TestClusterTemplateArgs(t *testing.T) {
	for _, tc := range []struct {
		arg        string
		cluster    bool
		deployment string
	}{
		{"template:shop/db", true, "db"},
		{"shop/db", true, "db"},
		{"shop/db.v2", true, "db.v2"},
		{"postgres:v1", false, "postgres"},
		{"apps/shop:v2", false, "shop"},
		{"github.com/acme/tpl/redis:v1", false, "redis"},
		{"redis", false, "redis"},
	} {
		if got := isClusterTemplate(tc.arg); got != tc.cluster {
			t.Errorf("isClusterTemplate(%q) = %v, want %v", tc.arg, got, tc.cluster)
		}
		if got := deploymentName(tc.arg); got != tc.deployment {
			t.Errorf("deploymentName(%q) = %q, want %q", tc.arg, got, tc.deployment)
		}
	}
}
