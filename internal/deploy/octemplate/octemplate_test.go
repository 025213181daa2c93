package octemplate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/deploy/octemplate"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/openshift"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

const templateYAML = `
apiVersion: template.openshift.io/v1
kind: Template
metadata:
  name: db
  annotations:
    description: A database.
message: Your password is ${PASSWORD}.
labels:
  app: db
parameters:
- name: NAME
  displayName: Name
  description: The service name.
  required: true
- name: PASSWORD
  generate: expression
  from: "[a-z0-9]{12}"
- name: PORT
  value: "5432"
  type: int
objects:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: ${NAME}
  data:
    password: ${PASSWORD}
    url: postgres://${NAME}:${PORT}
- apiVersion: v1
  kind: Service
  metadata:
    name: ${NAME}
  spec:
    ports:
    - port: ${PORT}
`

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func client(t *testing.T, rc *rest.Config, ns string) *kube.Client {
	t.Helper()
	c, err := kube.New(context.Background(), kube.Config{REST: rc, Namespace: ns, DiscoveryCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClusterTemplates installs the CRD into a cluster that serves no
// Templates, then reads a Template back, processes it, and checks that
// RBAC decides who may read it.
func TestClusterTemplates(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, admin, ns)
	ref := octemplate.Ref{Namespace: ns, Name: "db"}

	// Before the CRD: the cluster serves no Templates, and says what to do.
	if _, _, err := octemplate.Get(ctx, c, ref); !errors.Is(err, derrors.Unavailable) || !strings.Contains(err.Error(), "dm install openshift-template-crd") {
		t.Fatalf("Get without the CRD: %v", err)
	}

	// Install twice: created, then unchanged; served both times.
	for i, wantCreated := range []bool{true, false} {
		res, err := octemplate.InstallCRD(ctx, c, kube.ApplyOptions{})
		if err != nil {
			t.Fatalf("install %d: %v", i+1, err)
		}
		if res.Created != wantCreated {
			t.Errorf("install %d: created %v, want %v", i+1, res.Created, wantCreated)
		}
	}
	crd, err := c.Get(ctx, kube.ObjectRef{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "templates.template.openshift.io"})
	if err != nil {
		t.Fatal(err)
	}
	if scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope"); scope != "Namespaced" {
		t.Errorf("scope %q", scope)
	}

	if _, _, err := octemplate.Get(ctx, c, ref); !errors.Is(err, derrors.NotFound) || !strings.Contains(err.Error(), "no Template db in namespace "+ns) {
		t.Fatalf("Get of a missing Template: %v", err)
	}
	tmpl := object(t, templateYAML)
	tmpl.SetNamespace(ns)
	if _, err := c.Apply(ctx, []*unstructured.Unstructured{tmpl}, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	got, data, err := octemplate.Get(ctx, c, ref)
	if err != nil {
		t.Fatal(err)
	}
	// The server's bookkeeping is no part of the document.
	for _, field := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp"} {
		if strings.Contains(string(data), field) {
			t.Errorf("document has %s: %s", field, data)
		}
	}
	if len(got.Parameters) != 3 || got.Parameters[0].DisplayName != "Name" || !got.Parameters[0].Required || got.Parameters[1].Generate != "expression" || got.Labels["app"] != "db" {
		t.Fatalf("parameters or labels lost on the way through the cluster: %+v %v", got.Parameters, got.Labels)
	}

	// Processing: supplied, default and generated values; a required
	// parameter missing is an error naming it.
	out, err := got.Process(map[string]string{"NAME": "orders"}, openshift.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Objects) != 2 {
		t.Fatalf("%d objects", len(out.Objects))
	}
	cm := out.Objects[0]
	d := cm["data"].(map[string]any)
	if name, _, _ := unstructured.NestedString(cm, "metadata", "name"); name != "orders" || d["url"] != "postgres://orders:5432" || len(d["password"].(string)) != 12 {
		t.Errorf("processed object %v", cm)
	}
	if l, _, _ := unstructured.NestedString(cm, "metadata", "labels", "app"); l != "db" {
		t.Errorf("template label not applied: %v", cm)
	}
	// dm's parameter type survives the CRD's pruning: a whole-value
	// reference to an int parameter is a number.
	if port, _, _ := unstructured.NestedSlice(out.Objects[1], "spec", "ports"); len(port) != 1 || port[0].(map[string]any)["port"] != int64(5432) {
		t.Errorf("typed parameter: ports %v", port)
	}
	if _, err := got.Process(nil, openshift.Options{}); err == nil || !strings.Contains(err.Error(), "NAME") {
		t.Errorf("required NAME missing: %v", err)
	}

	// RBAC: alice may get templates in ns, bob may not.
	rbac := []*unstructured.Unstructured{
		object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: template-reader, namespace: `+ns+`}, rules: [{apiGroups: [template.openshift.io], resources: [templates], verbs: [get]}]}`),
		object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: alice, namespace: `+ns+`}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: template-reader}, subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]}`),
	}
	if _, err := c.Apply(ctx, rbac, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(user string) *kube.Client {
		rc := rest.CopyConfig(admin)
		rc.Impersonate = rest.ImpersonationConfig{UserName: user}
		return client(t, rc, ns)
	}
	if _, _, err := octemplate.Get(ctx, as("alice"), ref); err != nil {
		t.Errorf("alice, allowed to get templates: %v", err)
	}
	_, _, err = octemplate.Get(ctx, as("bob"), ref)
	if !errors.Is(err, derrors.Forbidden) {
		t.Fatalf("bob, without get on templates: %v", err)
	}
	for _, want := range []string{"get", "templates.template.openshift.io", "namespace " + ns, `"bob"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("bob's error %q does not name %s", err, want)
		}
	}
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want octemplate.Ref
		ok   bool
	}{
		{"template:ns/db", octemplate.Ref{Namespace: "ns", Name: "db"}, true},
		{"ns/db", octemplate.Ref{Namespace: "ns", Name: "db"}, true},
		{"template:db", octemplate.Ref{}, false},
		{"template:/db", octemplate.Ref{}, false},
		{"template:ns/", octemplate.Ref{}, false},
		{"a/b/c", octemplate.Ref{}, false},
	} {
		got, err := octemplate.ParseRef(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRef(%q) = %v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("ParseRef(%q): %v does not wrap InvalidArgument", tc.in, err)
		}
	}
}
