package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/manifest"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/sandbox"
)

// TestMain lets the test binary serve as the controller's expansion
// worker, as dm-controller does, and shares one apiserver (with
// kube-controller-manager) and one controller among the tests.
func TestMain(m *testing.M) {
	if sandbox.IsWorker() {
		sandbox.ServeWorker(&helm.Engine{})
	}
	kubetest.Main(m)
}

// registryPrefix is the test registry's prefix, and the default registry.
const registryPrefix = "github.com/acme/t"

// cmTemplate renders one ConfigMap named after the deployment, with the
// template's version in it.
func cmTemplate(version string) string {
	return `resources:
- name: cm
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{ env["deployment"] }}
    data:
      greeting: "{{ properties.get("greeting", "hello") }}"
      version: "` + version + `"
`
}

// writeVersion writes template name at version into the registry dir.
func writeVersion(t *testing.T, dir, name, version string) {
	t.Helper()
	d := filepath.Join(dir, name, "v"+version)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed in, so that the watcher never lists a
	// version without its file.
	tmp := filepath.Join(dir, "."+name+version)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, name+".jinja"), []byte(cmTemplate(version)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tmp, name+".jinja"), filepath.Join(d, name+".jinja")); err != nil {
		t.Fatal(err)
	}
	os.Remove(tmp)
}

// harness is the package's controller, started once.
type harness struct {
	env *kubetest.Env
	rc  *rest.Config
	// ctrl is the controller's connection: its ServiceAccount's token.
	ctrl *rest.Config
	c    client.Client
	dir  string
}

var (
	once sync.Once
	h    *harness
	herr error
)

// setup returns the shared apiserver and a running controller.
func setup(t *testing.T) *harness {
	t.Helper()
	env := kubetest.SharedWith(t, kubetest.Options{ControllerManager: true})
	once.Do(func() { h, herr = start(env) })
	if herr != nil {
		t.Fatal(herr)
	}
	return h
}

func start(env *kubetest.Env) (*harness, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dm-controller-registry-")
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"cm", "roll"} {
		d := filepath.Join(dir, name, "v1.0.0")
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(d, name+".jinja"), []byte(cmTemplate("1.0.0")), 0o644); err != nil {
			return nil, err
		}
	}
	// Templates with status templates: one that reads its ConfigMap and
	// holds Ready back on request, one that fails.
	statusTemplates := map[string]string{
		"web": "greeting: {{ resources.cm.data.greeting }}\nname: {{ instance.metadata.name }}\n" +
			"{% if properties.get('greeting') == 'wait' %}\nready: false\nmessage: waiting for a greeting\n{% endif %}\n",
		"broken": "ok: yes\nnope: {{ 1 // 0 }}\n",
	}
	statusTemplates["gweb"] = "greeting: {{ .resources.cm.data.greeting }}\nname: {{ .instance.metadata.name }}\n"
	statusTemplates["gbroken"] = "ok: yes\nnope: {{ .nothing.at.all }}\n"
	for name, st := range statusTemplates {
		d := filepath.Join(dir, name, "v1.0.0")
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(d, name+".jinja"), []byte(cmTemplate("1.0.0")), 0o644); err != nil {
			return nil, err
		}
		ext := ".status.jinja"
		if name[0] == 'g' {
			ext = ".status.gotmpl"
		}
		if err := os.WriteFile(filepath.Join(d, name+ext), []byte(st), 0o644); err != nil {
			return nil, err
		}
	}
	// A template whose status template copies secrets into its outputs:
	// a Secret it renders, properties its schema marks secret, and one
	// from a propertiesFrom Secret (TestStatusRedacts).
	leaky := filepath.Join(dir, "leaky", "v1.0.0")
	if err := os.MkdirAll(leaky, 0o755); err != nil {
		return nil, err
	}
	for name, content := range map[string]string{
		"leaky.jinja": `resources:
- name: secret
  type: Secret
  properties:
    apiVersion: v1
    kind: Secret
    metadata: {name: "{{ env['deployment'] }}"}
    stringData: {password: "{{ properties.password }}"}
- name: cm
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ env['deployment'] }}"}, data: {plain: "{{ properties.plain }}"}}
`,
		"leaky.jinja.schema": `properties:
  password: {type: string, writeOnly: true}
  pin: {type: string, format: password}
  plain: {type: string}
  fromsecret: {type: string}
  nested:
    type: object
    properties:
      token: {type: string, writeOnly: true}
      shown: {type: string}
`,
		"leaky.status.jinja": `secretdata: {{ resources.secret.data | tojson }}
password: {{ properties.password | tojson }}
pin: {{ properties.pin | tojson }}
fromsecret: {{ properties.fromsecret | tojson }}
plain: {{ properties.plain | tojson }}
nested: {{ properties.nested | tojson }}
cm: {{ resources.cm.data.plain | tojson }}
`,
	} {
		if err := os.WriteFile(filepath.Join(leaky, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	// A template whose outputs and status template transform a property
	// that comes from a Secret (TestOutputsRedactTransformed).
	for name, content := range map[string]string{
		"leakout.jinja": `{% set tok = properties.token %}
resources:
- name: cm
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: "{{ env['deployment'] }}"}
    data:
      reversed: {{ (tok | reverse | join('')) | tojson }}
      plain: {{ properties.plain | tojson }}
outputs:
- {name: token, value: {{ tok | tojson }}}
- {name: reversed, value: {{ (tok | reverse | join('')) | tojson }}}
- {name: replaced, value: {{ tok | replace('&', 'and') | tojson }}}
- {name: sliced, value: {{ tok[1:] | tojson }}}
- {name: upper, value: {{ tok | upper | tojson }}}
- {name: escaped, value: {{ tok | e | string | tojson }}}
- {name: plain, value: {{ properties.plain | tojson }}}
`,
		"leakout.status.jinja": "cm: {{ resources.cm.data | tojson }}\nlength: {{ properties.token | length }}\n",
	} {
		p := filepath.Join(dir, "leakout", "v1.0.0", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	// A Helm chart: a ConfigMap named after the release.
	for name, content := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: chart\nversion: 1.0.0\n",
		"values.yaml":       "# The greeting.\ngreeting: hello\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  release: {{ .Release.Name }}-{{ .Release.Namespace }}\n",
	} {
		p := filepath.Join(dir, "chart", "v1.0.0", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	// A chart that reads the cluster: ConfigMap "source" by lookup, and
	// whether the cluster serves the API group of its values.
	for name, content := range map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: lookchart\nversion: 1.0.0\n",
		"values.yaml": "# The API group whose v1 .Capabilities is asked about.\ngroup: example.com\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  looked: {{ dig "data" "greeting" "none" (lookup "v1" "ConfigMap" .Release.Namespace "source") | quote }}
  crd: {{ .Capabilities.APIVersions.Has (printf "%s/v1" .Values.group) | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
`,
	} {
		p := filepath.Join(dir, "lookchart", "v1.0.0", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	// A hostile template: its output would be gigabytes.
	hostile := filepath.Join(dir, "hostile", "v1.0.0")
	if err := os.MkdirAll(hostile, 0o755); err != nil {
		return nil, err
	}
	bomb := "{{ range(262144)|join('x' * 4000000) }}\n"
	if err := os.WriteFile(filepath.Join(hostile, "hostile.jinja"), []byte(bomb), 0o644); err != nil {
		return nil, err
	}
	scheme, err := controller.Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// dm.io too: TestTemplateDefinitionConflict's definition must meet
	// dm's own CRD, not the group rule.
	groups := []string{"apps.example.com", "dm.io"}
	// The controller runs as the account registry-example's template
	// makes, with the rights it grants and nothing more.
	ctrlRC, err := controllerAccount(env, rc, c, groups)
	if err != nil {
		return nil, err
	}
	cfg := controller.RunConfig{
		REST:            ctrlRC,
		Registries:      []api.RegistrySpec{{Prefix: registryPrefix, Dir: dir}},
		DefaultRegistry: registryPrefix,
		Refresh:         time.Hour, // the directory is watched
		Sandbox:         sandbox.Options{Workers: 1},
		InstallCRDs:     true,
		MetricsAddr:     "0",
		HealthAddr:      "0",
		Options:         controller.Options{Logger: log, DMVersion: "test", DefinitionGroups: groups},
	}
	go func() {
		if err := controller.Run(context.Background(), cfg); err != nil {
			fmt.Fprintln(os.Stderr, "controller:", err)
		}
	}()
	// The CRDs are installed by Run: wait for them.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var l v1alpha1.TemplateInstanceList
		if err := c.List(ctx, &l); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("the controller installed no CRDs within a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return &harness{env: env, rc: rc, ctrl: ctrlRC, c: c, dir: dir}, nil
}

// controllerNamespace and controllerName are the tests' controller's
// ServiceAccount.
const (
	controllerNamespace = "dm-system"
	controllerName      = "dm-controller"
)

// controllerAccount applies what registry-example's dm-controller template
// (with definitionGroups groups) makes of the controller's identity and
// rights (its ServiceAccount, ClusterRole and binding, the policy on its
// CRD writes) and returns a connection with that account's token.
func controllerAccount(env *kubetest.Env, rc *rest.Config, c client.Client, groups []string) (*rest.Config, error) {
	ctx := context.Background()
	spec := api.RegistrySpec{Prefix: dm.ExampleRegistryPrefix, FS: dm.ExampleRegistry()}
	g, err := api.OpenRegistry(spec, api.Setup{})
	if err != nil {
		return nil, err
	}
	if err := g.Refresh(ctx); err != nil {
		return nil, err
	}
	def, err := api.DefaultRegistry([]api.RegistrySpec{spec}, "")
	if err != nil {
		return nil, err
	}
	x, err := api.NewService(resolve.New(def, g), expand.Options{}).Expand(ctx, &api.ExpandRequest{
		Ref: "dm-controller:v1", Name: controllerName, Deployment: controllerName, Namespace: controllerNamespace,
		Properties: map[string]any{"definitionGroups": anyList(groups)},
	})
	if err != nil {
		return nil, fmt.Errorf("expanding dm-controller:v1: %w", err)
	}
	m, err := manifest.Of(x, manifest.Options{})
	if err != nil {
		return nil, err
	}
	if err := env.CreateNamespace(ctx, controllerNamespace); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	applied := 0
	for _, mo := range m.Objects {
		u := &unstructured.Unstructured{Object: mo.Object}
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		default:
			continue // the CRDs are the controller's to install; no pod runs here
		}
		if u.GetKind() == "ServiceAccount" {
			u.SetNamespace(controllerNamespace)
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		applied++
	}
	if applied != 5 {
		return nil, fmt.Errorf("dm-controller:v1 made %d of the 5 objects of its identity and rights", applied)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	tok, err := cs.CoreV1().ServiceAccounts(controllerNamespace).CreateToken(ctx, controllerName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(12 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("a token of %s/%s: %w", controllerNamespace, controllerName, err)
	}
	out := rest.AnonymousClientConfig(rc)
	out.BearerToken = tok.Status.Token
	return out, nil
}

func anyList(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// account makes ServiceAccount name in ns, allowed to do anything with
// ConfigMaps and to read Secrets when allowed.
func (h *harness) account(t *testing.T, ns, name string, allowed bool) {
	t.Helper()
	ctx := context.Background()
	must(t, h.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	if allowed {
		h.allow(t, ns, name)
	}
}

// allow binds ServiceAccount name to a Role over ConfigMaps and Secrets
// (what templates read, and dm's history, which the instance's account
// writes).
func (h *harness) allow(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	must(t, h.c.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
			// watch: the controller watches the Secrets an instance
			// renders, or its propertiesFrom names, as its account.
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		},
	}))
	must(t, h.c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
	}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func props(t *testing.T, v string) *apiextensionsv1.JSON {
	t.Helper()
	return &apiextensionsv1.JSON{Raw: []byte(v)}
}

// instance creates a TemplateInstance.
func (h *harness) instance(t *testing.T, ns, name string, spec v1alpha1.TemplateInstanceSpec) *v1alpha1.TemplateInstance {
	t.Helper()
	ti := &v1alpha1.TemplateInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	must(t, h.c.Create(context.Background(), ti))
	return ti
}

// waitTimeout bounds every wait for the controller: a loaded 2-core
// machine is slow, and a wait that ends early costs nothing.
const waitTimeout = 90 * time.Second

// eventually polls check until it returns nil, failing the test with its
// last error after waitTimeout.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after %v", what, err, waitTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get reads an instance.
func (h *harness) get(t *testing.T, ns, name string) *v1alpha1.TemplateInstance {
	t.Helper()
	ti := &v1alpha1.TemplateInstance{}
	must(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ti))
	return ti
}

// condition waits until the instance's condition typ has status st for its
// current generation, and returns the instance.
func (h *harness) condition(t *testing.T, ns, name, typ string, st metav1.ConditionStatus) *v1alpha1.TemplateInstance {
	t.Helper()
	var ti *v1alpha1.TemplateInstance
	eventually(t, fmt.Sprintf("%s/%s %s=%s", ns, name, typ, st), func() error {
		ti = &v1alpha1.TemplateInstance{}
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ti); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ti.Status.Conditions, typ)
		if c == nil || ti.Status.ObservedGeneration != ti.Generation {
			return fmt.Errorf("conditions %+v at observed generation %d of %d", ti.Status.Conditions, ti.Status.ObservedGeneration, ti.Generation)
		}
		if c.Status != st {
			return fmt.Errorf("%s is %s: %s", typ, c.Status, c.Message)
		}
		return nil
	})
	return ti
}

// configMap waits until ConfigMap ns/name has data key = want ("" : until
// it does not exist).
func (h *harness) configMap(t *testing.T, ns, name, key, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("ConfigMap %s/%s %s=%q", ns, name, key, want), func() error {
		cm := &corev1.ConfigMap{}
		err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)
		switch {
		case want == "" && apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case want == "":
			return errors.New("exists")
		case cm.Data[key] != want:
			return fmt.Errorf("%s is %q", key, cm.Data[key])
		}
		return nil
	})
}

// history reads the deployment's revisions.
func (h *harness) history(t *testing.T, ns, name string) []*release.Record {
	t.Helper()
	dyn, err := dynamic.NewForConfig(h.rc)
	must(t, err)
	hist, err := driver.NewSecrets(dyn).History(context.Background(), ns, name)
	must(t, err)
	return hist
}

// update changes an instance's spec, retrying on conflicts with the
// controller's own writes.
func (h *harness) update(t *testing.T, ns, name string, change func(*v1alpha1.TemplateInstance)) {
	t.Helper()
	eventually(t, "updating "+ns+"/"+name, func() error {
		ti := h.get(t, ns, name)
		change(ti)
		return h.c.Update(context.Background(), ti)
	})
}

func TestCreateUpdateDriftDelete(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "web", v1alpha1.TemplateInstanceSpec{
		Template: "cm:v1", ServiceAccountName: "deployer", Properties: props(t, `{"greeting":"hi"}`),
	})
	ti := h.condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.configMap(t, ns, "web", "greeting", "hi")
	if want := registryPrefix + "/cm:v1.0.0"; ti.Status.Resolved != want {
		t.Errorf("status.resolved = %q, want %q", ti.Status.Resolved, want)
	}
	if ti.Status.Digest == "" || ti.Status.Revision != 1 {
		t.Errorf("status.digest %q, revision %d; want a digest and revision 1", ti.Status.Digest, ti.Status.Revision)
	}
	if len(ti.Status.Inventory) != 1 || ti.Status.Inventory[0] != (v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web"}) {
		t.Errorf("status.inventory = %+v", ti.Status.Inventory)
	}
	if c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled); c != nil {
		t.Errorf("Stalled present on a Ready instance: %+v", c)
	}
	hist := h.history(t, ns, "web")
	if len(hist) != 1 || hist[0].Controller != "TemplateInstance "+ns+"/web" {
		t.Fatalf("history %v; want one revision marked as the instance's", hist)
	}

	// Update: the properties change, a new revision is applied.
	h.update(t, ns, "web", func(ti *v1alpha1.TemplateInstance) { ti.Spec.Properties = props(t, `{"greeting":"bonjour"}`) })
	h.configMap(t, ns, "web", "greeting", "bonjour")
	ti = h.condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if ti.Status.Revision != 2 {
		t.Errorf("revision %d after an update, want 2", ti.Status.Revision)
	}

	// Drift: someone edits the ConfigMap; the controller restores it.
	cm := &corev1.ConfigMap{}
	must(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, cm))
	cm.Data["greeting"] = "edited"
	must(t, h.c.Update(context.Background(), cm))
	h.configMap(t, ns, "web", "greeting", "bonjour")

	// Delete: the finalizer prunes the ConfigMap, then the instance goes.
	must(t, h.c.Delete(context.Background(), h.get(t, ns, "web")))
	h.configMap(t, ns, "web", "greeting", "")
	eventually(t, "instance gone", func() error {
		err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &v1alpha1.TemplateInstance{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

func TestOrphan(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "kept", v1alpha1.TemplateInstanceSpec{
		Template: "cm:v1", ServiceAccountName: "deployer", DeletionPolicy: v1alpha1.DeletionOrphan,
	})
	h.condition(t, ns, "kept", v1alpha1.ConditionReady, metav1.ConditionTrue)
	must(t, h.c.Delete(context.Background(), h.get(t, ns, "kept")))
	eventually(t, "instance gone", func() error {
		err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "kept"}, &v1alpha1.TemplateInstance{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	h.configMap(t, ns, "kept", "greeting", "hello")
}

func TestSuspend(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "paused", v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "deployer"})
	h.condition(t, ns, "paused", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.update(t, ns, "paused", func(ti *v1alpha1.TemplateInstance) {
		ti.Spec.Suspend = true
		ti.Spec.Properties = props(t, `{"greeting":"later"}`)
	})
	// The controller saw the suspended generation, and applied nothing.
	eventually(t, "suspended generation observed", func() error {
		ti := h.get(t, ns, "paused")
		if ti.Status.ObservedGeneration != ti.Generation {
			return fmt.Errorf("observed %d of %d", ti.Status.ObservedGeneration, ti.Generation)
		}
		return nil
	})
	h.configMap(t, ns, "paused", "greeting", "hello")
	if n := len(h.history(t, ns, "paused")); n != 1 {
		t.Errorf("%d revisions while suspended, want 1", n)
	}
	h.update(t, ns, "paused", func(ti *v1alpha1.TemplateInstance) { ti.Spec.Suspend = false })
	h.configMap(t, ns, "paused", "greeting", "later")
}

func TestImpersonation(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)

	// No account and no --default-service-account: refused.
	h.instance(t, ns, "anon", v1alpha1.TemplateInstanceSpec{Template: "cm:v1"})
	ti := h.condition(t, ns, "anon", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	if c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled); c.Reason != "NoServiceAccount" || !strings.Contains(c.Message, "serviceAccountName") {
		t.Errorf("Stalled %s: %s; want NoServiceAccount naming serviceAccountName", c.Reason, c.Message)
	}

	// An account without rights: forbidden, and nothing applied.
	h.account(t, ns, "nobody", false)
	h.instance(t, ns, "denied", v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "nobody"})
	ti = h.condition(t, ns, "denied", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled)
	if c.Reason != "Forbidden" || !strings.Contains(c.Message, "system:serviceaccount:"+ns+":nobody") {
		t.Errorf("Stalled %s: %s; want Forbidden naming the account", c.Reason, c.Message)
	}
	h.configMap(t, ns, "denied", "greeting", "")

	// Once the account may, the instance converges (the retry backs off,
	// it does not give up).
	h.allow(t, ns, "nobody")
	h.condition(t, ns, "denied", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.configMap(t, ns, "denied", "greeting", "hello")
}

func TestPropertiesFromSecret(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	must(t, h.c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"},
		Data:       map[string][]byte{"values.yaml": []byte("greeting: from-secret\n")},
	}))
	h.instance(t, ns, "secretive", v1alpha1.TemplateInstanceSpec{
		Template: "cm:v1", ServiceAccountName: "deployer", Properties: props(t, `{"greeting":"inline"}`),
		PropertiesFrom: []v1alpha1.PropertiesSource{{SecretRef: &v1alpha1.KeyReference{Name: "values", Key: "values.yaml"}}},
	})
	h.condition(t, ns, "secretive", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.configMap(t, ns, "secretive", "greeting", "from-secret")

	// The sources are watched: a changed Secret, or a ConfigMap source
	// created after its instance, applies anew at once, not at the
	// interval (10m). The reconciles the instance's own first writes
	// queued end first, so that only the watch can bring the change.
	time.Sleep(5 * time.Second)
	must(t, h.c.Update(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"},
		Data:       map[string][]byte{"values.yaml": []byte("greeting: changed\n")},
	}))
	h.configMap(t, ns, "secretive", "greeting", "changed")
	h.instance(t, ns, "later", v1alpha1.TemplateInstanceSpec{
		Template: "cm:v1", ServiceAccountName: "deployer",
		PropertiesFrom: []v1alpha1.PropertiesSource{{ConfigMapRef: &v1alpha1.KeyReference{Name: "later-values", Key: "v"}}},
	})
	h.condition(t, ns, "later", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	must(t, h.c.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later-values"},
		Data:       map[string]string{"v": "greeting: late\n"},
	}))
	h.configMap(t, ns, "later", "greeting", "late")

	// A missing key is a Stalled instance naming the source, not its content.
	h.instance(t, ns, "missing", v1alpha1.TemplateInstanceSpec{
		Template: "cm:v1", ServiceAccountName: "deployer",
		PropertiesFrom: []v1alpha1.PropertiesSource{{SecretRef: &v1alpha1.KeyReference{Name: "values", Key: "nope"}}},
	})
	ti := h.condition(t, ns, "missing", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled)
	if !strings.Contains(c.Message, "spec.propertiesFrom[0]") || !strings.Contains(c.Message, "no key nope") || strings.Contains(c.Message, "from-secret") {
		t.Errorf("Stalled message %q; want it to name propertiesFrom[0] and the key, and not the secret's content", c.Message)
	}
}

func TestPatchRolloutAndManualPinning(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "follow", v1alpha1.TemplateInstanceSpec{Template: "roll:v1", ServiceAccountName: "deployer"})
	h.instance(t, ns, "pinned", v1alpha1.TemplateInstanceSpec{Template: "roll:v1", ServiceAccountName: "deployer", UpdatePolicy: v1alpha1.UpdateManual})
	h.condition(t, ns, "follow", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.condition(t, ns, "pinned", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.configMap(t, ns, "follow", "version", "1.0.0")

	// A new patch version appears on disk: the registry notices it
	// without a restart, and the Patch instance rolls out to it.
	writeVersion(t, h.dir, "roll", "1.0.1")
	h.configMap(t, ns, "follow", "version", "1.0.1")
	eventually(t, "follow resolved to v1.0.1", func() error {
		if got := h.get(t, ns, "follow").Status.Resolved; got != registryPrefix+"/roll:v1.0.1" {
			return fmt.Errorf("resolved %q", got)
		}
		return nil
	})
	// The Manual instance was reconciled by the same registry change and
	// kept its version.
	if got := h.get(t, ns, "pinned").Status.Resolved; got != registryPrefix+"/roll:v1.0.0" {
		t.Errorf("Manual instance resolved %q after a new patch, want v1.0.0 kept", got)
	}
	h.configMap(t, ns, "pinned", "version", "1.0.0")
	// Its spec changes: it resolves again, to the new patch.
	h.update(t, ns, "pinned", func(ti *v1alpha1.TemplateInstance) { ti.Spec.Properties = props(t, `{"greeting":"moved"}`) })
	h.configMap(t, ns, "pinned", "version", "1.0.1")
}

// A hostile template fails its own instance with a named limit, in the
// sandbox's worker; the controller keeps reconciling the others.
func TestHostileTemplateContained(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "bomb", v1alpha1.TemplateInstanceSpec{Template: "hostile:v1", ServiceAccountName: "deployer"})
	ti := h.condition(t, ns, "bomb", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled)
	if c.Reason != "LimitExceeded" || !strings.Contains(c.Message, "Max") {
		t.Errorf("Stalled %s: %s; want LimitExceeded naming the limit", c.Reason, c.Message)
	}
	h.instance(t, ns, "calm", v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "deployer"})
	h.condition(t, ns, "calm", v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// The apiserver goes away and comes back: the controller recovers by
// itself (its watches reconnect) and reconciles what was created after.
func TestAPIServerRestart(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "before", v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "deployer"})
	h.condition(t, ns, "before", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.env.Restart(t)
	h.instance(t, ns, "after", v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "deployer"})
	h.condition(t, ns, "after", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.configMap(t, ns, "after", "greeting", "hello")
}

// A status template next to the template reads the rendered objects'
// live state into status.outputs, and may hold Ready back; its error is a
// condition naming the file.
func TestStatusTemplate(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "site", v1alpha1.TemplateInstanceSpec{Template: "web:v1", ServiceAccountName: "deployer", Properties: props(t, `{"greeting":"wait"}`)})
	ti := h.condition(t, ns, "site", v1alpha1.ConditionReady, metav1.ConditionFalse)
	eventually(t, "Ready held back by the status template", func() error {
		ti = h.get(t, ns, "site")
		c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Message != "waiting for a greeting" {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
	h.update(t, ns, "site", func(ti *v1alpha1.TemplateInstance) { ti.Spec.Properties = props(t, `{"greeting":"hi"}`) })
	ti = h.condition(t, ns, "site", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if ti.Status.Outputs == nil || string(ti.Status.Outputs.Raw) != `{"greeting":"hi","name":"site"}` {
		t.Errorf("status.outputs = %v, want greeting hi and name site", ti.Status.Outputs)
	}

	h.instance(t, ns, "oops", v1alpha1.TemplateInstanceSpec{Template: "broken:v1", ServiceAccountName: "deployer"})
	ti = h.condition(t, ns, "oops", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled)
	// The line is the status template's own, not the capture's that runs it.
	if c.Reason != "StatusTemplateError" || !strings.Contains(c.Message, "broken.status.jinja:2: integer division or modulo by zero") {
		t.Errorf("Stalled %s: %s; want StatusTemplateError naming broken.status.jinja and the error", c.Reason, c.Message)
	}
}

// TestStatusRedacts: a status template never sees a secret, whatever it
// copies into status.outputs (which accounts that may read
// TemplateInstances but not Secrets read): the data of a Secret the
// template rendered, a property from a propertiesFrom Secret, and the
// properties the schema marks writeOnly or format: password read
// "(redacted)"; everything else reads as it is.
func TestStatusRedacts(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	must(t, h.c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"},
		Data:       map[string][]byte{"values.yaml": []byte("fromsecret: s3cret-from-secret\n")},
	}))
	h.instance(t, ns, "leaky", v1alpha1.TemplateInstanceSpec{
		Template: "leaky:v1", ServiceAccountName: "deployer",
		Properties:     props(t, `{"password":"s3cret-password","pin":"s3cret-pin","plain":"visible","nested":{"token":"s3cret-token","shown":"visible-too"}}`),
		PropertiesFrom: []v1alpha1.PropertiesSource{{SecretRef: &v1alpha1.KeyReference{Name: "values", Key: "values.yaml"}}},
	})
	ti := h.condition(t, ns, "leaky", v1alpha1.ConditionReady, metav1.ConditionTrue)
	want := `{"cm":"visible","fromsecret":"(redacted)","nested":{"shown":"visible-too","token":"(redacted)"},"password":"(redacted)","pin":"(redacted)","plain":"visible","secretdata":{"password":"(redacted)"}}`
	if ti.Status.Outputs == nil || string(ti.Status.Outputs.Raw) != want {
		t.Errorf("status.outputs = %s\nwant %s", ti.Status.Outputs, want)
	}
	if ti.Status.Outputs != nil && strings.Contains(string(ti.Status.Outputs.Raw), "s3cret") {
		t.Errorf("a secret in status.outputs: %s", ti.Status.Outputs.Raw)
	}
	// The rendered objects hold the real values: only the status
	// template's view is redacted.
	h.configMap(t, ns, "leaky", "plain", "visible")
}

// TestOutputsRedactTransformed: a Secret value holding what JSON escapes
// (& < >), passed through propertiesFrom, never reaches status.outputs,
// however the template's outputs or its status template transform it;
// what does not depend on it reads as it is.
func TestOutputsRedactTransformed(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	const token = `t0k&en<with>"quotes"&amps`
	must(t, h.c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"},
		Data:       map[string][]byte{"values.yaml": []byte("token: '" + token + "'\n")},
	}))
	h.instance(t, ns, "out", v1alpha1.TemplateInstanceSpec{
		Template: "leakout:v1", ServiceAccountName: "deployer", Properties: props(t, `{"plain":"visible"}`),
		PropertiesFrom: []v1alpha1.PropertiesSource{{SecretRef: &v1alpha1.KeyReference{Name: "values", Key: "values.yaml"}}},
	})
	ti := h.condition(t, ns, "out", v1alpha1.ConditionReady, metav1.ConditionTrue)
	// length: the status template measures "(redacted)", not the token.
	want := `{"cm":{"plain":"visible","reversed":"(redacted)"},"escaped":"(redacted)","length":10,"plain":"visible","replaced":"(redacted)","reversed":"(redacted)","sliced":"(redacted)","token":"(redacted)","upper":"(redacted)"}`
	if ti.Status.Outputs == nil || string(ti.Status.Outputs.Raw) != want {
		t.Errorf("status.outputs = %s\nwant %s", outputsOf(ti), want)
	}
	// Nothing of it anywhere in the instance as any reader gets it.
	raw, err := json.Marshal(ti)
	must(t, err)
	for _, form := range []string{"t0k", "spma", "T0K", `t0k\u0026en`, "t0k&amp;"} {
		if strings.Contains(string(raw), form) {
			t.Errorf("the instance holds %q: %s", form, raw)
		}
	}
	// The ConfigMap holds the real value: only what status says is redacted.
	h.configMap(t, ns, "out", "plain", "visible")
}

func outputsOf(ti *v1alpha1.TemplateInstance) string {
	if ti.Status.Outputs == nil {
		return "none"
	}
	return string(ti.Status.Outputs.Raw)
}

// TestSecretDrift: the controller's own account may not read Secrets,
// yet a Secret an instance renders is watched (as the instance's account)
// and its drift restored at once, not at the interval; once the instance
// is gone, so is the watch's reason, and the controller still runs.
func TestSecretDrift(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "sec", v1alpha1.TemplateInstanceSpec{
		Template: "leaky:v1", ServiceAccountName: "deployer",
		Properties: props(t, `{"password":"p4ssword","pin":"1234","plain":"visible"}`),
	})
	h.condition(t, ns, "sec", v1alpha1.ConditionReady, metav1.ConditionTrue)
	secret := func() string {
		s := &corev1.Secret{}
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sec"}, s); err != nil {
			return err.Error()
		}
		return string(s.Data["password"])
	}
	if got := secret(); got != "p4ssword" {
		t.Fatalf("Secret password %q, want p4ssword", got)
	}
	// The reconciles the instance's own first writes queued end first.
	time.Sleep(3 * time.Second)
	s := &corev1.Secret{}
	must(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sec"}, s))
	s.Data["password"] = []byte("edited")
	must(t, h.c.Update(context.Background(), s))
	eventually(t, "the Secret's drift restored", func() error {
		if got := secret(); got != "p4ssword" {
			return fmt.Errorf("password %q", got)
		}
		return nil
	})
	must(t, h.c.Delete(context.Background(), h.get(t, ns, "sec")))
	eventually(t, "the Secret pruned", func() error {
		if got := secret(); !strings.Contains(got, "not found") {
			return fmt.Errorf("password %q", got)
		}
		return nil
	})
}

// TestControllerRights: registry-example's dm-controller template, which
// the tests' controller runs under, gives its account no right on any
// Secret anywhere, and the policy it installs lets it write the CRDs of
// its definitionGroups (and its own) and no other.
func TestControllerRights(t *testing.T) {
	h := setup(t)
	if h.env.Kubectl == "" {
		t.Fatal("kubectl is not in .testenv/bin: make testenv builds it (make test does)")
	}
	ns := h.env.Namespace(t)
	as := "--as=system:serviceaccount:" + controllerNamespace + ":" + controllerName
	// kubectl returns what kubectl printed, its warnings (stderr) after.
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(h.env.Kubectl, append([]string{"--kubeconfig", h.env.Kubeconfig, as}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return strings.TrimSpace(string(out) + "\n" + stderr.String()), err
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "secrets", "-A"}, "no"},
		{[]string{"list", "secrets", "-A"}, "no"},
		{[]string{"watch", "secrets", "-A"}, "no"},
		{[]string{"get", "secrets", "-n", ns}, "no"},
		{[]string{"list", "secrets", "-n", ns}, "no"},
		{[]string{"watch", "secrets", "-n", ns}, "no"},
		{[]string{"get", "secrets", "-n", controllerNamespace}, "no"},
		{[]string{"create", "secrets", "-n", ns}, "no"},
		// What it does need.
		{[]string{"watch", "configmaps", "-A"}, "yes"},
		{[]string{"watch", "deployments.apps", "-A"}, "yes"},
		{[]string{"impersonate", "serviceaccounts", "-n", ns}, "yes"},
		{[]string{"patch", "templateinstances.dm.io/status", "-n", ns}, "yes"},
		// Roll-out policies: read, their status written.
		{[]string{"watch", "templaterolloutpolicies.dm.io"}, "yes"},
		{[]string{"watch", "rolloutpolicies.dm.io", "-A"}, "yes"},
		{[]string{"update", "templaterolloutpolicies.dm.io/status"}, "yes"},
		{[]string{"update", "rolloutpolicies.dm.io/status", "-n", ns}, "yes"},
		{[]string{"create", "customresourcedefinitions"}, "yes"}, // RBAC says yes; the policy decides
		// Nothing of a custom resource outside its groups.
		{[]string{"list", "widgets.other.example.com", "-A"}, "no"},
	} {
		got, _ := kubectl("", append([]string{"auth", "can-i"}, tt.args...)...)
		if got, _, _ = strings.Cut(got, "\n"); got != tt.want {
			t.Errorf("kubectl auth can-i %s as the controller = %q, want %q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
	// With its own token, as the audit used it: no Secret of any
	// namespace, not even one named.
	must(t, h.c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"},
		StringData: map[string]string{"token": "team-a-token"}}))
	own, err := kubernetes.NewForConfig(h.ctrl)
	must(t, err)
	if _, err := own.CoreV1().Secrets(ns).Get(context.Background(), "github", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's token gets a namespace's Secret: %v", err)
	}
	if _, err := own.CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's token lists every Secret: %v", err)
	}
	if _, err := own.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("the controller's token lists no ConfigMaps: %v", err)
	}
	crd := func(group string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.` + group + `}
spec:
  group: ` + group + `
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	}
	// The policy is loaded by the apiserver a moment after it is made.
	eventually(t, "a CRD of another group refused", func() error {
		out, err := kubectl(crd("other.example.com"), "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return fmt.Errorf("accepted: %s", out)
		}
		if !strings.Contains(out, "definitionGroups") || !strings.Contains(out, "other.example.com") {
			return fmt.Errorf("refused, but not by the policy: %s", out)
		}
		return nil
	})
	if out, err := kubectl(crd("apps.example.com"), "create", "--dry-run=server", "-f", "-"); err != nil {
		t.Errorf("a CRD of a definition group refused: %v: %s", err, out)
	}
}

// TestChartInstance: an instance whose template is a Helm chart is
// rendered by Helm's engine in the controller's workers (attached by
// TestMain, as dm-controller's main does), its properties the chart's
// values and its name the release name, and becomes Ready.
func TestChartInstance(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "greeter", v1alpha1.TemplateInstanceSpec{Template: "chart:v1", ServiceAccountName: "deployer", Properties: props(t, `{"greeting":"hola"}`)})
	ti := h.condition(t, ns, "greeter", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.configMap(t, ns, "greeter", "greeting", "hola")
	h.configMap(t, ns, "greeter", "release", "greeter-"+ns)
	if want := registryPrefix + "/chart:v1.0.0"; ti.Status.Resolved != want {
		t.Errorf("status.resolved = %q, want %q", ti.Status.Resolved, want)
	}
}

// A Go template status template works the same, with its inputs as its
// dot, and its errors name the file and line.
func TestStatusTemplateGoTmpl(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "gsite", v1alpha1.TemplateInstanceSpec{Template: "gweb:v1", ServiceAccountName: "deployer", Properties: props(t, `{"greeting":"hey"}`)})
	ti := h.condition(t, ns, "gsite", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if ti.Status.Outputs == nil || string(ti.Status.Outputs.Raw) != `{"greeting":"hey","name":"gsite"}` {
		t.Errorf("status.outputs = %v, want greeting hey and name gsite", ti.Status.Outputs)
	}
	h.instance(t, ns, "goops", v1alpha1.TemplateInstanceSpec{Template: "gbroken:v1", ServiceAccountName: "deployer"})
	ti = h.condition(t, ns, "goops", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled)
	if c.Reason != "StatusTemplateError" || !strings.Contains(c.Message, "gbroken.status.gotmpl:2:17: executing") {
		t.Errorf("Stalled %s: %s; want StatusTemplateError naming gbroken.status.gotmpl line 2", c.Reason, c.Message)
	}
}

// TestChartReadsCluster: a chart an instance renders sees the cluster as
// under helm install, although it renders in a sandbox worker without
// credentials: lookup reads a ConfigMap as the instance's ServiceAccount
// (through the controller), and .Capabilities are the cluster's (its
// version, and the API group of a CRD made for the test). An account that
// may not read ConfigMaps has the render fail, Stalled, naming the lookup
// and the account, not the controller's own rights.
func TestChartReadsCluster(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	ctx := context.Background()
	h.account(t, ns, "deployer", true)
	must(t, h.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}, Data: map[string]string{"greeting": "from-the-cluster"}}))

	group := ns + ".lookup.example.com"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}}},
		},
	}
	must(t, h.c.Create(ctx, crd))
	t.Cleanup(func() { _ = h.c.Delete(context.Background(), crd) })
	eventually(t, "CRD "+crd.Name+" established", func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := h.c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not established")
	})
	dc, err := discovery.NewDiscoveryClientForConfig(h.rc)
	must(t, err)
	sv, err := dc.ServerVersion()
	must(t, err)

	// The interval renders again soon: a render that met the CRD before
	// the controller heard of it is followed by one that sees it.
	h.instance(t, ns, "looker", v1alpha1.TemplateInstanceSpec{
		Template: "lookchart:v1", ServiceAccountName: "deployer", Interval: &metav1.Duration{Duration: 2 * time.Second},
		Properties: props(t, `{"group":"`+group+`"}`),
	})
	h.condition(t, ns, "looker", v1alpha1.ConditionReady, metav1.ConditionTrue)
	h.configMap(t, ns, "looker", "looked", "from-the-cluster")
	h.configMap(t, ns, "looker", "crd", "true")
	h.configMap(t, ns, "looker", "kube", strings.SplitN(sv.GitVersion, "+", 2)[0])

	// An account that may not read ConfigMaps: its chart's lookup is
	// refused as it, although the controller may read them. It may keep
	// its history, which is as far as it gets.
	h.account(t, ns, "nobody", false)
	must(t, h.c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody-history"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "patch", "delete"}}}}))
	must(t, h.c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody-history"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "nobody-history"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "nobody"}}}))
	h.instance(t, ns, "denied", v1alpha1.TemplateInstanceSpec{Template: "lookchart:v1", ServiceAccountName: "nobody"})
	ti := h.condition(t, ns, "denied", v1alpha1.ConditionStalled, metav1.ConditionTrue)
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionStalled)
	for _, want := range []string{"error calling lookup", "lookup v1 ConfigMap " + ns + "/source", "forbidden", "system:serviceaccount:" + ns + ":nobody"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Stalled %s: %s; want it to say %q", c.Reason, c.Message, want)
		}
	}
	h.configMap(t, ns, "denied", "looked", "")
}

func ptr[T any](v T) *T { return &v }
