package kube_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/openshift"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// setup returns an admin client on the shared apiserver whose namespace is
// a fresh one.
func setup(t *testing.T) (*kubetest.Env, *kube.Client, string) {
	t.Helper()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	return env, newClient(t, env.Kubeconfig, ns, "dm", t.TempDir()), ns
}

func newClient(t *testing.T, kubeconfig, ns, manager, cache string) *kube.Client {
	t.Helper()
	c, err := kube.New(context.Background(), kube.Config{Kubeconfig: kubeconfig, Namespace: ns, FieldManager: manager, DiscoveryCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// objects parses a YAML list of objects.
func objects(t *testing.T, y string) []*unstructured.Unstructured {
	t.Helper()
	var list []map[string]any
	if err := yaml.Unmarshal([]byte(y), &list); err != nil {
		t.Fatal(err)
	}
	out := make([]*unstructured.Unstructured, len(list))
	for i, m := range list {
		out[i] = &unstructured.Unstructured{Object: m}
	}
	return out
}

func prepareApply(t *testing.T, c *kube.Client, objs []*unstructured.Unstructured, opts kube.ApplyOptions) ([]kube.Applied, error) {
	t.Helper()
	if err := c.Prepare(ctx(t), objs); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return c.Apply(ctx(t), objs, opts)
}

func configMaps(n int, value string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%d, labels: {app: demo}}, data: {a: %q}}\n", i, value)
	}
	return b.String()
}

func TestApplyCreateUnchangedUpdate(t *testing.T) {
	_, c, ns := setup(t)
	applied, err := prepareApply(t, c, objects(t, configMaps(20, "1")+"- {apiVersion: v1, kind: Namespace, metadata: {name: "+ns+"}}"), kube.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 21 {
		t.Fatalf("applied %d objects, want 21", len(applied))
	}
	for _, a := range applied {
		u, err := a.Object()
		if err != nil {
			t.Fatal(err)
		}
		if a.ResourceVersion == "" || a.ResourceVersion != u.GetResourceVersion() {
			t.Errorf("%s: resourceVersion %q, the answer's %q", a.Ref, a.ResourceVersion, u.GetResourceVersion())
		}
		if a.Ref.Kind == "ConfigMap" && (!a.Created || a.Ref.Namespace != ns || u.GetUID() == "") {
			t.Errorf("%s: created %v, namespace %q, uid %q", a.Ref, a.Created, a.Ref.Namespace, u.GetUID())
		}
		if a.Ref.Kind == "Namespace" && (a.Created || a.Ref.Namespace != "") {
			t.Errorf("namespace: created %v, namespace %q", a.Created, a.Ref.Namespace)
		}
	}
	rv := applied[0].ResourceVersion
	again, err := prepareApply(t, c, objects(t, configMaps(20, "1")), kube.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range again {
		if a.Created {
			t.Errorf("%s created again", a.Ref)
		}
	}
	if got := again[0].ResourceVersion; got != rv {
		t.Errorf("unchanged apply changed resourceVersion %s to %s", rv, got)
	}
	if _, err := prepareApply(t, c, objects(t, configMaps(1, "2")), kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	live, err := c.Get(ctx(t), kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cm-0"})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(live.Object, "data", "a"); v != "2" {
		t.Errorf("data.a = %q after update, want 2", v)
	}
	if m := live.GetManagedFields(); len(m) != 1 || m[0].Manager != "dm" {
		t.Errorf("managed fields %+v, want one entry of manager dm", m)
	}
	// An object read back from the cluster (as a rollback applies recorded
	// objects) applies: the server-set fields are not sent.
	unstructured.SetNestedField(live.Object, "3", "data", "a")
	if _, err := c.Apply(ctx(t), []*unstructured.Unstructured{live}, kube.ApplyOptions{}); err != nil {
		t.Errorf("applying a live object: %v", err)
	}
	_, err = c.Get(ctx(t), kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "nope"})
	if !errors.Is(err, derrors.NotFound) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/nope") {
		t.Errorf("Get of a missing object: %v", err)
	}
}

func TestApplyDryRunCreatesNothing(t *testing.T) {
	_, c, ns := setup(t)
	applied, err := prepareApply(t, c, objects(t, configMaps(2, "1")), kube.ApplyOptions{DryRun: true})
	if err != nil || len(applied) != 2 || !applied[0].Created {
		t.Fatalf("dry run: %v, %+v", err, applied)
	}
	if _, err := c.Get(ctx(t), kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cm-0"}); !errors.Is(err, derrors.NotFound) {
		t.Errorf("dry run created the object: %v", err)
	}
}

func TestDryRunIntoANewNamespace(t *testing.T) {
	_, c, ns := setup(t)
	fresh := ns + "-new"
	objs := objects(t, "- {apiVersion: v1, kind: Namespace, metadata: {name: "+fresh+"}}\n"+
		"- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: "+fresh+"}}")
	if err := c.Prepare(ctx(t), objs); err != nil {
		t.Fatal(err)
	}
	// As the deploy actions do: the namespace in one call, its objects in the next.
	if _, err := c.Apply(ctx(t), objs[:1], kube.ApplyOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	applied, err := c.Apply(ctx(t), objs[1:], kube.ApplyOptions{DryRun: true})
	if err != nil || len(applied) != 1 || !applied[0].Created {
		t.Fatalf("dry run into a namespace the dry run creates: %+v, %v", applied, err)
	}
	_, err = c.Apply(ctx(t), objects(t, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: "+ns+"-nowhere}}"), kube.ApplyOptions{DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("dry run into a missing namespace: %v", err)
	}
	if _, err := c.Get(ctx(t), kube.ObjectRef{Version: "v1", Kind: "Namespace", Name: fresh}); !errors.Is(err, derrors.NotFound) {
		t.Errorf("the dry run created the namespace: %v", err)
	}
}

func crdAndCR(group string) string {
	return `
- apiVersion: ` + group + `/v1
  kind: Widget
  metadata: {name: w1}
  spec: {size: 3}
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: widgets.` + group + `}
  spec:
    group: ` + group + `
    scope: Namespaced
    names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wdg]}
    versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {size: {type: integer}}}
`
}

func TestApplyCRDAndCustomResource(t *testing.T) {
	env, c, ns := setup(t)
	group := ns + ".dm.example.com"
	objs := objects(t, crdAndCR(group))
	// A disk cache warmed before the CRD exists must not hide it.
	cache := t.TempDir()
	warm := newClient(t, env.Kubeconfig, ns, "dm", cache)
	if err := warm.Prepare(ctx(t), objects(t, configMaps(1, "x"))); err != nil {
		t.Fatal(err)
	}
	if err := c.Prepare(ctx(t), objs); err != nil {
		t.Fatalf("Prepare of a CRD and its resource: %v", err)
	}
	if objs[0].GetNamespace() != ns {
		t.Errorf("the custom resource got namespace %q, want %q from the CRD's scope", objs[0].GetNamespace(), ns)
	}
	applied, err := c.Apply(ctx(t), objs, kube.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 2 || applied[0].Ref.Kind != "Widget" || !applied[0].Created {
		t.Fatalf("applied %+v", applied)
	}
	cached := newClient(t, env.Kubeconfig, ns, "dm", cache)
	w, err := cached.Get(ctx(t), applied[0].Ref)
	if err != nil {
		t.Fatalf("Get through a stale discovery cache: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size = %d", size)
	}
	if list, err := cached.List(ctx(t), ns, "", []string{"wdg"}); err != nil || len(list) != 1 {
		t.Errorf("List by short name: %v, %d objects", err, len(list))
	}
	refs := []kube.ObjectRef{applied[1].Ref, applied[0].Ref}
	if err := c.Delete(ctx(t), refs, kube.DeleteOptions{Wait: true, Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		if _, err := c.Get(ctx(t), ref); !errors.Is(err, derrors.NotFound) {
			t.Errorf("%s still there after Delete: %v", ref, err)
		}
	}
	// A disk cache that still has the deleted CRD's kind does not make an
	// apply fail obscurely: the 404 makes dm read discovery again.
	stale := newClient(t, env.Kubeconfig, ns, "dm", cache)
	_, err = prepareApply(t, stale, objects(t, crdAndCR(group))[:1], kube.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), `the cluster does not serve kind "Widget"`) {
		t.Errorf("apply of a custom resource whose CRD is gone, through a stale cache: %v", err)
	}
}

func TestCRDWaves(t *testing.T) {
	_, c, ns := setup(t)
	group := ns + ".dm.example.com"
	objs := objects(t, crdAndCR(group)+`
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: gadgets.`+group+`}
  spec:
    group: `+group+`
    scope: Namespaced
    names: {plural: gadgets, kind: Widget}
    versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`)
	if err := c.Prepare(ctx(t), objs); err != nil {
		t.Fatal(err)
	}
	// The CRD in one call, the resource in the next, as the deploy actions
	// apply dependency waves: Apply returns once the kind can be used.
	if _, err := c.Apply(ctx(t), objs[1:2], kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx(t), objs[:1], kube.ApplyOptions{}); err != nil {
		t.Errorf("the custom resource in the next wave: %v", err)
	}
	// A CRD whose kind clashes with the first's fails at once, named.
	_, err := c.Apply(ctx(t), objs[2:], kube.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition.apiextensions.k8s.io gadgets."+group+": not established: names not accepted") {
		t.Errorf("a CRD whose kind clashes: %v", err)
	}
	t.Cleanup(func() {
		c.Delete(context.Background(), []kube.ObjectRef{kube.RefOf(objs[1]), kube.RefOf(objs[2])}, kube.DeleteOptions{})
	})
}

func TestPrepareErrors(t *testing.T) {
	_, c, ns := setup(t)
	objs := objects(t, `
- {apiVersion: v1, kind: ConfigMap, metadata: {name: ok}}
- {apiVersion: example.com/v1, kind: Gadget, metadata: {name: g}}
- {apiVersion: v1, kind: Nonsense, metadata: {name: nonsense}}
- {metadata: {name: bare}}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r, namespace: x}}
`)
	err := c.Prepare(ctx(t), objs)
	var oe *kube.ObjectError
	if !errors.As(err, &oe) {
		t.Fatalf("Prepare error %v is not an ObjectError", err)
	}
	for _, want := range []string{
		`Gadget.example.com g: the cluster does not serve kind "Gadget" in apiVersion "example.com/v1"`,
		`Nonsense nonsense: the cluster does not serve kind "Nonsense" in apiVersion "v1"`,
		"no apiVersion or kind",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ConfigMap") || strings.Contains(err.Error(), "ClusterRole") {
		t.Errorf("Prepare error names a good object:\n%v", err)
	}
	if objs[0].GetNamespace() != ns || objs[4].GetNamespace() != "" {
		t.Errorf("namespaces %q and %q, want %q and none", objs[0].GetNamespace(), objs[4].GetNamespace(), ns)
	}
}

func TestApplyInvalid(t *testing.T) {
	_, c, ns := setup(t)
	_, err := prepareApply(t, c, objects(t, `
- {apiVersion: v1, kind: ConfigMap, metadata: {name: good}, data: {a: "1"}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: Bad_Name}, data: {a: "1"}}
- {apiVersion: v1, kind: Secret, metadata: {name: strict}, bogus: 1}
`), kube.ApplyOptions{})
	if err == nil {
		t.Fatal("invalid objects applied")
	}
	for _, want := range []string{
		"ConfigMap " + ns + "/Bad_Name: ", `ConfigMap "Bad_Name" is invalid: metadata.name`,
		"Secret " + ns + "/strict: ", `.bogus: field not declared in schema`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "/good") {
		t.Errorf("error names the valid object:\n%v", err)
	}
}

func TestApplyConflictAndForce(t *testing.T) {
	env, c, ns := setup(t)
	other := newClient(t, env.Kubeconfig, ns, "other-tool", "-")
	if _, err := prepareApply(t, other, objects(t, configMaps(1, "theirs")), kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := prepareApply(t, c, objects(t, configMaps(1, "ours")), kube.ApplyOptions{})
	if err == nil {
		t.Fatal("conflicting apply succeeded")
	}
	t.Log(err)
	for _, want := range []string{"ConfigMap " + ns + "/cm-0", ".data.a", `"other-tool"`, "--force-conflicts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict error lacks %q:\n%v", want, err)
		}
	}
	applied, err := prepareApply(t, c, objects(t, configMaps(1, "ours")), kube.ApplyOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	u, err := applied[0].Object()
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "data", "a"); v != "ours" {
		t.Errorf("forced apply left data.a = %q", v)
	}
}

func TestForbidden(t *testing.T) {
	env, _, ns := setup(t)
	limited := newClient(t, env.LimitedKubeconfig, ns, "dm", "-")
	_, err := prepareApply(t, limited, objects(t, configMaps(1, "x")), kube.ApplyOptions{})
	if err == nil {
		t.Fatal("the limited user applied")
	}
	t.Log(err)
	for _, want := range []string{"ConfigMap " + ns + "/cm-0", "forbidden", `User "` + kubetest.LimitedUser + `"`, "patch", `resource "configmaps"`, ns} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("forbidden error lacks %q:\n%v", want, err)
		}
	}
}

func TestListAsTheLimitedUser(t *testing.T) {
	env, _, ns := setup(t)
	limited := newClient(t, env.LimitedKubeconfig, ns, "dm", "-")
	// Every kind is forbidden: nothing, but no error, when none is named...
	if all, err := limited.List(ctx(t), ns, "", nil); err != nil || len(all) != 0 {
		t.Errorf("List of every kind as the limited user: %d objects, %v", len(all), err)
	}
	// ...and the server's error when one is.
	if _, err := limited.List(ctx(t), ns, "", []string{"secrets"}); err == nil || !strings.Contains(err.Error(), `cannot list resource "secrets"`) {
		t.Errorf("List of secrets as the limited user: %v", err)
	}
}

func TestWaitTimesOutNamingObjects(t *testing.T) {
	_, c, ns := setup(t)
	applied, err := prepareApply(t, c, objects(t, `
- {apiVersion: v1, kind: ConfigMap, metadata: {name: ready}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: web, image: nginx}]}
`), kube.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := []kube.ObjectRef{applied[0].Ref, applied[1].Ref}
	wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]string{}
	err = c.Wait(wctx, refs, func(s kube.Status) {
		mu.Lock()
		defer mu.Unlock()
		seen[s.Ref.Name] = s.Status
	})
	if err == nil {
		t.Fatal("Wait for a Deployment without a controller-manager succeeded")
	}
	t.Log(err)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Deployment.apps "+ns+"/web: InProgress") || strings.Contains(err.Error(), "ConfigMap") {
		t.Errorf("Wait error:\n%v", err)
	}
	if seen["ready"] != kube.Current || seen["web"] != "InProgress" {
		t.Errorf("progress saw %v", seen)
	}
	sts, err := c.Statuses(ctx(t), append(refs, kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "gone"}))
	if err != nil || sts[0].Status != kube.Current || sts[1].Status != "InProgress" || sts[2].Status != "NotFound" {
		t.Errorf("Statuses = %+v, %v", sts, err)
	}
}

func TestExistingAndList(t *testing.T) {
	_, c, ns := setup(t)
	applied, err := prepareApply(t, c, objects(t, configMaps(3, "1")+`
- {apiVersion: v1, kind: Secret, metadata: {name: s, labels: {app: other}}, stringData: {k: v}}
`), kube.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	missing := kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "missing"}
	crd := kube.ObjectRef{Group: "nowhere.example.com", Version: "v1", Kind: "Thing", Namespace: ns, Name: "t"}
	refs := []kube.ObjectRef{applied[0].Ref, applied[1].Ref, missing, applied[3].Ref, crd}
	live, err := c.Existing(ctx(t), refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 3 || live[missing] != nil || live[applied[1].Ref] == nil {
		t.Errorf("Existing = %v", live)
	}
	if m := live[applied[3].Ref]; m == nil || m.Labels["app"] != "other" || len(m.ManagedFields) == 0 {
		t.Errorf("Existing secret metadata = %+v", m)
	}
	// Four ConfigMaps of one namespace: read with one LIST.
	sts, err := c.Statuses(ctx(t), []kube.ObjectRef{applied[0].Ref, missing, applied[1].Ref, applied[2].Ref, applied[3].Ref})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{kube.Current, "NotFound", kube.Current, kube.Current, kube.Current} {
		if sts[i].Status != want || sts[i].Ref.Name == "" {
			t.Errorf("Statuses[%d] = %+v, want %s", i, sts[i], want)
		}
	}
	for _, kinds := range [][]string{{"cm"}, {"configmaps"}, {"ConfigMap"}, {"ConfigMap.v1"}, {"configmaps.v1."}} {
		list, err := c.List(ctx(t), ns, "app=demo", kinds)
		if err != nil || len(list) != 3 || list[0].GetName() != "cm-0" || list[0].GetKind() != "ConfigMap" {
			t.Errorf("List(%v) = %d objects, %v", kinds, len(list), err)
		}
	}
	all, err := c.List(ctx(t), ns, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range all {
		kinds[o.GetKind()]++
	}
	if kinds["ConfigMap"] != 3 || kinds["Secret"] != 1 {
		t.Errorf("List of every kind found %v", kinds)
	}
	if _, err := c.List(ctx(t), ns, "", []string{"nosuchthings"}); err == nil || !strings.Contains(err.Error(), `"nosuchthings"`) {
		t.Errorf("List of an unknown kind: %v", err)
	}
}

func TestDiff(t *testing.T) {
	_, c, ns := setup(t)
	if _, err := prepareApply(t, c, objects(t, configMaps(2, "1")), kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	same := objects(t, configMaps(2, "1"))
	c.Prepare(ctx(t), same)
	if d, changed, err := c.Diff(ctx(t), same, nil); err != nil || changed || d != "" {
		t.Fatalf("Diff of the live objects: changed %v, %v:\n%s", changed, err, d)
	}
	next := objects(t, configMaps(1, "2")+"- {apiVersion: v1, kind: ConfigMap, metadata: {name: new}}")
	c.Prepare(ctx(t), next)
	gone := []kube.ObjectRef{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cm-1"}}
	d, changed, err := c.Diff(ctx(t), next, gone)
	if err != nil || !changed {
		t.Fatalf("Diff: changed %v, %v", changed, err)
	}
	for _, want := range []string{
		"--- live/ConfigMap " + ns + "/cm-0", `-  a: "1"`, `+  a: "2"`,
		"+++ dm/ConfigMap " + ns + "/new", "+kind: ConfigMap",
		"--- live/ConfigMap " + ns + "/cm-1", "-kind: ConfigMap",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "managedFields") || strings.Contains(d, "resourceVersion") {
		t.Errorf("diff shows server-set fields:\n%s", d)
	}
	if _, err := c.Get(ctx(t), kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "new"}); !errors.Is(err, derrors.NotFound) {
		t.Errorf("Diff created an object: %v", err)
	}
}

func TestExportRoundTrip(t *testing.T) {
	env, c, ns := setup(t)
	if _, err := prepareApply(t, c, objects(t, `
- {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, labels: {app: shop}}, data: {color: blue}}
- apiVersion: v1
  kind: Service
  metadata: {name: web, labels: {app: shop}, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}}
  spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, labels: {app: shop}}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: web, image: "nginx:1.27"}]}
`), kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	live, err := c.List(ctx(t), ns, "app=shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := kube.Export("shop", live, []kube.ExportParam{{Name: "REPLICAS", Path: "{.spec.replicas}"}, {Name: "COLOR", Path: ".data.color"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"clusterIP", "uid:", "resourceVersion", "managedFields", "last-applied", "namespace:"} {
		if strings.Contains(string(data), bad) {
			t.Errorf("export keeps %s:\n%s", bad, data)
		}
	}
	parsed, err := openshift.Parse(data)
	if err != nil {
		t.Fatalf("the export does not parse as a Template: %v\n%s", err, data)
	}
	out, err := parsed.Process(map[string]string{"REPLICAS": "3", "COLOR": "red"}, openshift.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, o := range out.Objects {
		objs = append(objs, &unstructured.Unstructured{Object: o})
	}
	if len(objs) != 3 {
		t.Fatalf("processed %d objects, want 3", len(objs))
	}
	ns2 := env.Namespace(t)
	c2 := newClient(t, env.Kubeconfig, ns2, "dm", "-")
	if _, err := prepareApply(t, c2, objs, kube.ApplyOptions{}); err != nil {
		t.Fatalf("the exported objects do not apply: %v", err)
	}
	dep, err := c2.Get(ctx(t), kube.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns2, Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d, want the parameter's 3", r)
	}
}
