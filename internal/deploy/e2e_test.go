package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// fixture is one test's namespace with the actions configured against
// the shared apiserver, expanding in process against the example
// registry.
type fixture struct {
	t   *testing.T
	env *kubetest.Env
	ns  string
	c   *deploy.Config
	kc  *kube.Client
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	expanderOnce sync.Once
	expander     *expand.Expander
	expanderErr  error
)

func exampleExpander(t *testing.T) *expand.Expander {
	expanderOnce.Do(func() {
		reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(dm.ExampleRegistry())}
		if expanderErr = reg.Refresh(context.Background()); expanderErr != nil {
			return
		}
		r := resolve.New(resolve.Registry{Host: "github.com", Owner: "acme", Repo: "templates"}, reg)
		expander = expand.New(expand.Options{Resolver: r})
	})
	if expanderErr != nil {
		t.Fatal(expanderErr)
	}
	return expander
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	f := &fixture{t: t, env: env, ns: ns, log: &syncBuffer{}}
	f.c = f.config(env.Kubeconfig)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dm log:\n%s", f.log.String())
		}
	})
	return f
}

func (f *fixture) config(kubeconfig string) *deploy.Config {
	f.t.Helper()
	kc, err := kube.New(context.Background(), kube.Config{Kubeconfig: kubeconfig, Namespace: f.ns})
	if err != nil {
		f.t.Fatal(err)
	}
	if f.kc == nil {
		f.kc = kc
	}
	x := exampleExpander(f.t)
	return &deploy.Config{
		Cluster: kc,
		History: driver.NewSecrets(kc.Dynamic()),
		Expander: deploy.ExpandFunc(func(ctx context.Context, src deploy.Source) (*expand.Result, error) {
			req := expand.Request{Ref: src.Input.Ref, Properties: src.Properties, Name: src.Name, Deployment: src.Deployment, Namespace: src.Namespace, ConfigName: src.Input.ConfigName}
			if src.Input.Config != "" {
				req.Config = []byte(src.Input.Config)
				req.Imports = map[string][]byte{}
				for k, v := range src.Input.Imports {
					req.Imports[k] = []byte(v)
				}
			}
			return x.Expand(ctx, req)
		}),
		Log:       f.log,
		DMVersion: "test",
	}
}

func configSource(config string, imports map[string]string) deploy.Source {
	return deploy.Source{Input: release.Input{Config: config, ConfigName: "config.yaml", Imports: imports}}
}

func (f *fixture) deploy(name string, src deploy.Source, opts deploy.ApplyOptions) *deploy.Result {
	f.t.Helper()
	res, err := f.c.Deploy(context.Background(), deploy.DeployOptions{Name: name, Source: src, ApplyOptions: opts})
	if err != nil {
		f.t.Fatalf("deploy %s: %v", name, err)
	}
	return res
}

// labelled lists the objects of the test's namespace (and cluster-scoped
// ones) labelled with deployment name.
func (f *fixture) labelled(name string, kinds ...string) []string {
	f.t.Helper()
	if len(kinds) == 0 {
		kinds = []string{"configmaps", "services", "deployments.apps", "secrets", "ingresses.networking.k8s.io"}
	}
	objs, err := f.kc.List(context.Background(), f.ns, deploy.LabelDeployment+"="+name, kinds)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func (f *fixture) history(name string) []*release.Record {
	f.t.Helper()
	hist, err := f.c.Revisions(context.Background(), name)
	if err != nil {
		f.t.Fatal(err)
	}
	return hist
}

func statuses(hist []*release.Record) string {
	var s []string
	for _, r := range hist {
		s = append(s, fmt.Sprintf("%d:%s", r.Revision, r.Status))
	}
	return strings.Join(s, " ")
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// The composite: guestbook (Jinja, instantiating Jinja and Python-style
// templates) and gitea (Python-style, instantiating an OpenShift Template
// and a Go template).
const compositeConfig = `
resources:
- name: guestbook
  type: apps/guestbook:v1.1
  properties:
    exporter: {enabled: true}
- name: git
  type: apps/gitea:v1.0.1
  properties:
    domain: git.example.com
`

func TestDeployUpdateRollbackDelete(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res := f.deploy("stack", configSource(compositeConfig, nil), deploy.ApplyOptions{})
	if res.Record.Revision != 1 || res.Record.Status != release.StatusDeployed {
		t.Fatalf("record %s status %s", res.Record, res.Record.Status)
	}
	got := f.labelled("stack")
	for _, want := range []string{"Service/guestbook-exporter", "Deployment/guestbook-frontend", "Deployment/git-web", "Secret/git-db", "Ingress/git-web"} {
		if !contains(got, want) {
			t.Errorf("after deploy, %s is missing from the labelled objects %v", want, got)
		}
	}
	r, err := f.c.Revision(ctx, "stack", 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.c.Statuses(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != len(r.Resources) || len(st) == 0 {
		t.Fatalf("%d statuses for %d resources", len(st), len(r.Resources))
	}
	for _, res := range r.Resources {
		if res.Path == "" || !strings.Contains(res.Path, "/") {
			t.Errorf("resource %s/%s has layout path %q", res.Kind, res.Name, res.Path)
		}
	}

	// Deploying again is an error pointing to update.
	if _, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "stack", Source: configSource(compositeConfig, nil)}); err == nil || !strings.Contains(err.Error(), "dm update") {
		t.Errorf("second deploy: err = %v, want one pointing to dm update", err)
	}

	// An update without the exporter prunes it.
	noExporter := strings.Replace(compositeConfig, "enabled: true", "enabled: false", 1)
	up, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "stack", Source: configSource(noExporter, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if up.Record.Revision != 2 || len(up.Pruned) != 2 {
		t.Errorf("update: revision %d, pruned %v; want revision 2 and the exporter's Service and Deployment", up.Record.Revision, up.Pruned)
	}
	got = f.labelled("stack")
	if contains(got, "Service/guestbook-exporter") || contains(got, "Deployment/guestbook-exporter") {
		t.Errorf("after update, the exporter is still there: %v", got)
	}
	if !contains(got, "Deployment/guestbook-frontend") {
		t.Errorf("after update, the frontend is gone: %v", got)
	}
	if s := statuses(f.history("stack")); s != "1:superseded 2:deployed" {
		t.Errorf("history %s", s)
	}

	// Rollback to 1 brings the exporter back as revision 3.
	rb, err := f.c.Rollback(ctx, "stack", 1, deploy.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Record.Revision != 3 || rb.Record.Description != "Rollback to 1" {
		t.Errorf("rollback: %s %q", rb.Record, rb.Record.Description)
	}
	if got := f.labelled("stack"); !contains(got, "Service/guestbook-exporter") {
		t.Errorf("after rollback, the exporter is missing: %v", got)
	}
	if s := statuses(f.history("stack")); s != "1:superseded 2:superseded 3:deployed" {
		t.Errorf("history %s", s)
	}

	// DM's verbs over the layouts.
	types, err := f.c.Types(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ty := range types {
		if ty.Template == "github.com/acme/templates/common/replicatedservice" && ty.Version == "v1.1.0" {
			found = ty.Instances == 2 && ty.Deployments == 1
		}
	}
	if !found {
		t.Errorf("types: %+v; want common/replicatedservice v1.1.0 with 2 instances in 1 deployment", types)
	}
	ins, err := f.c.Instances(ctx, "redis", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 1 || ins[0].Path != "guestbook/guestbook-redis" || ins[0].Deployment != "stack" || ins[0].Version != "v1.1.0" {
		t.Errorf("instances redis: %+v", ins)
	}

	// Delete leaves nothing labelled, and no history.
	if _, err := f.c.Delete(ctx, "stack", deploy.DeleteOptions{Wait: true, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got := f.labelled("stack"); len(got) != 0 {
		t.Errorf("after delete: %v", got)
	}
	if _, err := f.c.Revisions(ctx, "stack"); err == nil {
		t.Error("history survived delete")
	}
}

func TestAdoptAndOwnership(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// An object created outside dm.
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "shared", "namespace": f.ns}}}
	if _, err := f.kc.Apply(ctx, []*unstructured.Unstructured{cm}, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := configSource(`
resources:
- {name: shared, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {a: b}}}
`, nil)
	_, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "one", Source: cfg})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap "+f.ns+"/shared") || !strings.Contains(err.Error(), "--adopt") {
		t.Fatalf("deploy over an unowned object: err = %v", err)
	}
	if _, err := f.c.Revisions(ctx, "one"); err == nil {
		t.Error("a refused deploy left a history record")
	}
	f.deploy("one", cfg, deploy.ApplyOptions{Adopt: true})
	// Another deployment may not take it, even with --adopt.
	_, err = f.c.Deploy(ctx, deploy.DeployOptions{Name: "two", Source: cfg, ApplyOptions: deploy.ApplyOptions{Adopt: true}})
	if err == nil || !strings.Contains(err.Error(), "belongs to dm deployment "+f.ns+"/one") {
		t.Fatalf("deploy over another deployment's object: err = %v", err)
	}
}

func TestCRDAndCustomResource(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	group := strings.ReplaceAll(f.ns, "-", "") + ".example.com"
	cfg := configSource(fmt.Sprintf(`
resources:
- name: widget
  type: Widget
  properties:
    apiVersion: %[1]s/v1
    kind: Widget
    metadata: {name: w1}
    spec: {size: 3}
- name: crd
  type: apiextensions.k8s.io/v1/CustomResourceDefinition
  properties:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.%[1]s}
    spec:
      group: %[1]s
      scope: Namespaced
      names: {plural: widgets, singular: widget, kind: Widget}
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec: {type: object, properties: {size: {type: integer}}}
`, group), nil)
	f.deploy("crd", cfg, deploy.ApplyOptions{})
	if got := f.labelled("crd", "widgets."+group); !contains(got, "Widget/w1") {
		t.Fatalf("custom resource not applied: %v", got)
	}
	// A custom resource of the CRD in another namespace counts too.
	other := f.env.Namespace(t)
	w2 := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "w2", "namespace": other}}}
	if _, err := f.kc.Apply(ctx, []*unstructured.Unstructured{w2}, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// Deleting the CRD while a custom resource outside the deployment
	// exists needs --prune-crds.
	_, err := f.c.Delete(ctx, "crd", deploy.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "--prune-crds") || !strings.Contains(err.Error(), other+"/w2") {
		t.Fatalf("delete without --prune-crds: err = %v", err)
	}
	if err := f.kc.Delete(ctx, []kube.ObjectRef{kube.RefOf(w2)}, kube.DeleteOptions{Wait: true, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// Its own custom resources go with it.
	if _, err := f.c.Delete(ctx, "crd", deploy.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidObjectAndUnknownKind(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "bad", Source: configSource(`
resources:
- name: bad
  type: Service
  properties: {apiVersion: v1, kind: Service, spec: {ports: [{port: 70000}]}}
`, nil)})
	if err == nil || !strings.Contains(err.Error(), "layout path bad") || !strings.Contains(err.Error(), "spec.ports[0].port: Invalid value: 70000") {
		t.Fatalf("invalid object: err = %v, want the server's message and the layout path", err)
	}
	if s := statuses(f.history("bad")); s != "1:failed" {
		t.Errorf("history %s", s)
	}

	_, err = f.c.Deploy(ctx, deploy.DeployOptions{Name: "unknown", Source: configSource(`
resources:
- name: fine
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap}
- name: gadget
  type: Gadget
  properties: {apiVersion: nowhere.example.com/v1, kind: Gadget}
`, nil)})
	if err == nil || !strings.Contains(err.Error(), "gadget") || !strings.Contains(err.Error(), "Gadget") {
		t.Fatalf("unknown kind: err = %v, want one naming the object and its layout path", err)
	}
	if got := f.labelled("unknown"); len(got) != 0 {
		t.Errorf("objects applied before the unknown kind was refused: %v", got)
	}
	if _, err := f.c.Revisions(ctx, "unknown"); err == nil {
		t.Error("a refused deploy left a history record")
	}
}

func TestLimitedUserForbidden(t *testing.T) {
	f := newFixture(t)
	c := f.config(f.env.LimitedKubeconfig)
	_, err := c.Deploy(context.Background(), deploy.DeployOptions{Name: "x", Source: configSource(`
resources:
- {name: x, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap}}
`, nil)})
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), `cannot list resource "secrets"`) {
		t.Fatalf("limited user: err = %v, want a forbidden error naming the verb and resource", err)
	}
}

func TestConcurrentDeploys(t *testing.T) {
	f := newFixture(t)
	var objs strings.Builder
	objs.WriteString("resources:\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&objs, "- {name: cm%d, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {i: '%d'}}}\n", i, i)
	}
	cfg := configSource(objs.String(), nil)
	c2 := f.config(f.env.Kubeconfig)
	c2.Log = f.log
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []*deploy.Config{f.c, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Deploy(context.Background(), deploy.DeployOptions{Name: "race", Source: cfg})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		if !strings.Contains(err.Error(), "another dm") && !strings.Contains(err.Error(), "dm update") {
			t.Errorf("the loser's error is not clear: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d deploys won: %v", won, errs)
	}
	hist := f.history("race")
	last := hist[len(hist)-1]
	if last.Status != release.StatusDeployed {
		t.Errorf("history %s: the last revision is not deployed", statuses(hist))
	}
	for _, r := range hist {
		if r.Status == release.StatusPending {
			t.Errorf("history %s keeps a pending revision", statuses(hist))
		}
	}
	if got := f.labelled("race", "configmaps"); len(got) != 30 {
		t.Errorf("%d objects, want 30", len(got))
	}
}

func TestDeferredReference(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res := f.deploy("refs", configSource(`
resources:
- name: db
  type: Service
  properties: {apiVersion: v1, kind: Service, spec: {ports: [{port: 5432}]}}
- name: conf
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    data:
      url: "postgres://$(ref.db.spec.clusterIP):$(ref.db.spec.ports[0].port)/x"
      uid: "$(ref.db.metadata.uid)"
`, nil), deploy.ApplyOptions{})
	var conf map[string]any
	for _, o := range res.Record.Objects {
		if u := (&unstructured.Unstructured{Object: o}); u.GetName() == "conf" {
			conf = o
		}
	}
	live, err := f.kc.Get(ctx, kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: "conf"})
	if err != nil {
		t.Fatal(err)
	}
	url, _, _ := unstructured.NestedString(live.Object, "data", "url")
	uid, _, _ := unstructured.NestedString(live.Object, "data", "uid")
	if strings.Contains(url, "$(ref") || !strings.HasSuffix(url, ":5432/x") || strings.Contains(uid, "$(ref") || uid == "" {
		t.Errorf("deferred references not filled: url %q uid %q", url, uid)
	}
	if recURL, _, _ := unstructured.NestedString(conf, "data", "url"); recURL != url {
		t.Errorf("the record keeps %q, the cluster %q", recURL, url)
	}
}

func TestDeferredReferenceTimesOut(t *testing.T) {
	f := newFixture(t)
	_, err := f.c.Deploy(context.Background(), deploy.DeployOptions{Name: "never", Source: configSource(`
resources:
- name: db
  type: Service
  properties: {apiVersion: v1, kind: Service, spec: {ports: [{port: 5432}]}}
- name: conf
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, data: {lb: "$(ref.db.status.loadBalancer.ingress[0].ip)"}}
`, nil), ApplyOptions: deploy.ApplyOptions{Timeout: 2 * time.Second}})
	if err == nil || !strings.Contains(err.Error(), "$(ref.db.status.loadBalancer.ingress[0].ip)") || !strings.Contains(err.Error(), "Service "+f.ns+"/db") {
		t.Fatalf("err = %v, want the reference and the object named", err)
	}
}

func TestWaitTimesOut(t *testing.T) {
	f := newFixture(t)
	_, err := f.c.Deploy(context.Background(), deploy.DeployOptions{Name: "web", Source: deploy.Source{
		Input: release.Input{Ref: "common/web:v1.3"}, Properties: map[string]any{"image": "nginx:1.27", "host": "web.example.com"},
	}, ApplyOptions: deploy.ApplyOptions{Wait: true, Timeout: 3 * time.Second}})
	if err == nil || !strings.Contains(err.Error(), "Deployment.apps "+f.ns+"/web: InProgress") {
		t.Fatalf("err = %v, want a timeout naming the Deployment", err)
	}
	if !strings.Contains(f.log.String(), "InProgress") {
		t.Errorf("no progress lines on the log:\n%s", f.log.String())
	}
	if s := statuses(f.history("web")); s != "1:failed" {
		t.Errorf("history %s", s)
	}
}

func TestDryRunServerCreatesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "dry", Source: configSource(compositeConfig, nil), ApplyOptions: deploy.ApplyOptions{DryRun: "server"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) == 0 || res.Record != nil {
		t.Errorf("dry run: %d objects, record %v", len(res.Objects), res.Record)
	}
	if got := f.labelled("dry"); len(got) != 0 {
		t.Errorf("server dry run created %v", got)
	}
	if _, err := f.c.Revisions(ctx, "dry"); !errors.Is(err, driver.ErrNotFound) && (err == nil || !strings.Contains(err.Error(), "not found")) {
		t.Errorf("server dry run left history: %v", err)
	}
}

func TestLargeDeploymentHistory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Four ConfigMaps of 800 kB each: the record is far over one Secret.
	tmpl := `
resources:
{%- for i in range(4) %}
- name: big{{ i }}
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    data: {blob: "{{ properties.fill * 800000 }}", v: "{{ properties.v }}"}
{%- endfor %}
`
	src := func(v int) deploy.Source {
		return deploy.Source{Input: release.Input{Config: `
imports: [{path: big.jinja}]
resources:
- {name: big, type: big.jinja, properties: {fill: "x", v: ` + fmt.Sprint(v) + `}}
`, ConfigName: "config.yaml", Imports: map[string]string{"big.jinja": tmpl}}}
	}
	f.deploy("big", src(1), deploy.ApplyOptions{})
	if _, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "big", Source: src(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Rollback(ctx, "big", 1, deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	hist := f.history("big")
	if s := statuses(hist); s != "1:superseded 2:superseded 3:deployed" {
		t.Errorf("history %s", s)
	}
	live, err := f.kc.Get(ctx, kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: "big0"})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(live.Object, "data", "v"); v != "1" {
		t.Errorf("after rollback to 1, v = %q", v)
	}
	size := 0
	for _, o := range hist[2].Objects {
		s, _, _ := unstructured.NestedString(o, "data", "blob")
		size += len(s)
	}
	if size < 3_000_000 {
		t.Errorf("revision 3 keeps %d bytes of objects, want 3.2 MB", size)
	}
}

func TestAtomicRollsBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good := configSource(`
resources:
- {name: a, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {v: "1"}}}
`, nil)
	f.deploy("atomic", good, deploy.ApplyOptions{})
	bad := configSource(`
resources:
- {name: a, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {v: "2"}}}
- {name: b, type: Service, properties: {apiVersion: v1, kind: Service, spec: {ports: [{port: 70000}]}}}
`, nil)
	_, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "atomic", Source: bad, ApplyOptions: deploy.ApplyOptions{Atomic: true}})
	if err == nil || !strings.Contains(err.Error(), "rolled back to revision 1") {
		t.Fatalf("err = %v, want a failure rolled back to revision 1", err)
	}
	if s := statuses(f.history("atomic")); s != "1:superseded 2:failed 3:deployed" {
		t.Errorf("history %s", s)
	}
	live, err := f.kc.Get(ctx, kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(live.Object, "data", "v"); v != "1" {
		t.Errorf("after the atomic rollback, v = %q, want 1", v)
	}
}

// An unchanged re-deploy skips the PATCHes of objects nobody changed, but
// not of objects that changed or went away since.
func TestUnchangedRedeploy(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cfg := configSource(`
resources:
- {name: a, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {v: "1"}}}
- {name: b, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {v: "1"}}}
`, nil)
	f.deploy("same", cfg, deploy.ApplyOptions{})
	refB := kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: "b"}
	if err := f.kc.Delete(ctx, []kube.ObjectRef{refB}, kube.DeleteOptions{Wait: true, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	res, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "same", Source: cfg, Upgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.kc.Get(ctx, refB); err != nil {
		t.Fatalf("an object deleted behind dm's back was not applied again: %v", err)
	}
	for _, r := range res.Record.Resources {
		if r.ResourceVersion == "" {
			t.Errorf("%s/%s: no resourceVersion recorded", r.Kind, r.Name)
		}
	}
	// Once more, nothing changed: the record still has every object.
	res, err = f.c.Deploy(ctx, deploy.DeployOptions{Name: "same", Source: cfg, Upgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Record.Resources) != 2 || len(res.Record.Objects) != 2 {
		t.Errorf("record of an unchanged re-deploy: %d resources, %d objects", len(res.Record.Resources), len(res.Record.Objects))
	}
	if s := statuses(f.history("same")); s != "1:superseded 2:superseded 3:deployed" {
		t.Errorf("history %s", s)
	}
}

func TestDeleteKeepHistoryAndRedeploy(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cfg := configSource(`
resources:
- {name: a, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap}}
`, nil)
	f.deploy("again", cfg, deploy.ApplyOptions{})
	if _, err := f.c.Delete(ctx, "again", deploy.DeleteOptions{KeepHistory: true}); err != nil {
		t.Fatal(err)
	}
	if s := statuses(f.history("again")); s != "1:deleting" {
		t.Errorf("history after delete --keep-history: %s", s)
	}
	if got := f.labelled("again", "configmaps"); len(got) != 0 {
		t.Errorf("after delete: %v", got)
	}
	res := f.deploy("again", cfg, deploy.ApplyOptions{})
	if res.Record.Revision != 2 {
		t.Errorf("deploy after delete --keep-history: revision %d, want 2", res.Record.Revision)
	}
	if got := f.labelled("again", "configmaps"); len(got) != 1 {
		t.Errorf("after the new deploy: %v", got)
	}
}

// A controller's resync deploys again with SkipUnchanged: nothing changed
// writes no revision (no PATCH: the resourceVersions are those recorded),
// a status-like write by someone else that the apply does not undo writes
// none either, and drift is restored as a new revision.
func TestSkipUnchanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cfg := configSource(`
resources:
- {name: cm, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {a: b}}}
`, nil)
	opts := deploy.ApplyOptions{Controller: "TemplateInstance " + f.ns + "/sync", SkipUnchanged: true, ForceConflicts: true}
	resync := func() *deploy.Result {
		t.Helper()
		res, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "sync", Upgrade: true, Source: cfg, ApplyOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := resync(); res.Unchanged || res.Record.Revision != 1 {
		t.Fatalf("first deploy: unchanged %v, revision %d", res.Unchanged, res.Record.Revision)
	}
	if res := resync(); !res.Unchanged || res.Record.Revision != 1 {
		t.Fatalf("idle resync: unchanged %v, revision %d; want unchanged revision 1", res.Unchanged, res.Record.Revision)
	}
	// Someone adds a label of their own: the object's resourceVersion
	// moves, dm's apply changes nothing, no revision is written.
	ref := kube.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: "cm"}
	other, err := kube.New(ctx, kube.Config{Kubeconfig: f.env.Kubeconfig, Namespace: f.ns, FieldManager: "other"})
	if err != nil {
		t.Fatal(err)
	}
	label := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": f.ns, "labels": map[string]any{"team": "x"}}}}
	if _, err := other.Apply(ctx, []*unstructured.Unstructured{label}, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := resync(); !res.Unchanged {
		t.Errorf("resync after another manager's label: revision %d written", res.Record.Revision)
	}
	// Drift of dm's own field is restored, as a new revision.
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": f.ns}, "data": map[string]any{"a": "edited"}}}
	if _, err := other.Apply(ctx, []*unstructured.Unstructured{u}, kube.ApplyOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if res := resync(); res.Unchanged || res.Record.Revision != 2 {
		t.Fatalf("resync after drift: unchanged %v, revision %d; want revision 2", res.Unchanged, res.Record.Revision)
	}
	got, err := f.kc.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "data", "a"); v != "b" {
		t.Errorf("data.a = %q after the resync, want b restored", v)
	}
	// People are refused.
	if _, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "sync"}); err == nil || !strings.Contains(err.Error(), "managed by dm-controller") {
		t.Errorf("dm update of a controller's deployment: %v", err)
	}
}

// TestFailuresPruneHistory: a deployment that keeps failing (as
// dm-controller retries one whose Config Connector objects are not ready)
// keeps at most HistoryMax revisions, the last deployed one among them.
func TestFailuresPruneHistory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	opts := deploy.ApplyOptions{HistoryMax: 3}
	f.deploy("flaky", configSource(`
resources:
- name: fine
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, data: {v: "1"}}
`, nil), opts)
	for i := range 4 {
		_, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "flaky", ApplyOptions: opts, Source: configSource(fmt.Sprintf(`
resources:
- name: bad
  type: Service
  properties: {apiVersion: v1, kind: Service, metadata: {annotations: {try: "%d"}}, spec: {ports: [{port: 70000}]}}
`, i), nil)})
		if err == nil {
			t.Fatalf("try %d: an invalid Service was applied", i)
		}
	}
	if s := statuses(f.history("flaky")); s != "1:deployed 4:failed 5:failed" {
		t.Errorf("history %s, want the deployed revision and the last failures, 3 in all", s)
	}
}
