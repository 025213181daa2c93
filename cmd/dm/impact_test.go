package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/impact"
	"github.com/dmhq/dm/internal/sandbox"
)

var updateGolden = flag.Bool("update", false, "rewrite dm impact's golden files")

// fleetPrefix is the registry of the fleet's template.
const fleetPrefix = "github.com/acme/fleet"

// webTemplate is the fleet's template at a version: a ConfigMap and a
// Deployment named after the instance, and the ConfigMap "-old"; v1.2.1
// gives the Deployment one replica more, adds ConfigMap "-new" for the
// old one and has a schema that refuses size big.
func webTemplate(version string) map[string]string {
	extra, replicas := "old", "{{ properties.replicas }}"
	files := map[string]string{}
	if version == "v1.2.1" {
		extra, replicas = "new", "{{ properties.replicas + 1 }}"
		files["web/"+version+"/web.jinja.schema"] = "properties:\n  size: {type: string, enum: [small, medium]}\n  replicas: {type: integer}\n"
	}
	files["web/"+version+"/web.jinja"] = `resources:
- name: cm
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: "{{ env['name'] }}"}
    data: {size: "{{ properties.size }}"}
- name: extra
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: "{{ env['name'] }}-` + extra + `"}
    data: {a: b}
- name: app
  type: Deployment
  properties:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: "{{ env['name'] }}"}
    spec:
      replicas: ` + replicas + `
      selector: {matchLabels: {app: "{{ env['name'] }}"}}
      template:
        metadata: {labels: {app: "{{ env['name'] }}"}}
        spec: {containers: [{name: web, image: "nginx:1.27"}]}
`
	return files
}

// fleet is a published registry with dm-controller applying instances
// of it, and an unpublished version directory.
type fleet struct {
	env  *kubetest.Env
	dyn  dynamic.Interface
	ns   [3]string
	next string // the unpublished registry directory, with v1.2.1
}

var tiGVR = schema.GroupVersionResource{Group: "dm.io", Version: "v1alpha1", Resource: "templateinstances"}

// startFleet publishes web v1.1.0 and v1.2.0, runs dm-controller over
// them until the instances are applied, and stops it: dm impact then
// compares with what the controller left.
func startFleet(t *testing.T, instances map[string][]map[string]any) *fleet {
	t.Helper()
	env := kubetest.Shared(t)
	rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{env: env, dyn: dyn}
	b := make([]byte, 3)
	rand.Read(b)
	for i := range f.ns {
		f.ns[i] = fmt.Sprintf("impact-%s-%d", hex.EncodeToString(b), i+1)
		if err := env.CreateNamespace(context.Background(), f.ns[i]); err != nil {
			t.Fatal(err)
		}
		// The instances' account may do anything in its namespace.
		grantNamed(t, dyn, f.ns[i], "deployer", "system:serviceaccount:"+f.ns[i]+":deployer", "*")
	}
	pub := map[string]string{}
	for _, v := range []string{"v1.1.0", "v1.2.0"} {
		for k, c := range webTemplate(v) {
			pub[k] = c
		}
	}
	pubDir := writeTree(t, pub)
	next := map[string]string{}
	for _, v := range []string{"v1.1.0", "v1.2.0", "v1.2.1"} {
		for k, c := range webTemplate(v) {
			next[k] = c
		}
	}
	f.next = writeTree(t, next)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := controller.Run(ctx, controller.RunConfig{
			REST:            rc,
			Registries:      []api.RegistrySpec{{Prefix: fleetPrefix, Dir: pubDir}},
			DefaultRegistry: fleetPrefix,
			Refresh:         time.Hour,
			Sandbox:         sandbox.Options{Workers: 1},
			InstallCRDs:     true,
			MetricsAddr:     "0",
			HealthAddr:      "0",
			Options: controller.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})), DMVersion: "test",
				DefinitionGroups: []string{"fleet.example.com"}},
		})
		if err != nil && ctx.Err() == nil {
			t.Errorf("controller: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := dyn.Resource(tiGVR).Namespace(f.ns[0]).List(ctx, metav1.ListOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the controller installed no CRDs within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A kind whose instances deploy the template: FleetWeb, one in the
	// second namespace.
	defs := schema.GroupVersionResource{Group: "dm.io", Version: "v1alpha1", Resource: "templatedefinitions"}
	def := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "dm.io/v1alpha1", "kind": "TemplateDefinition", "metadata": map[string]any{"name": "fleetweb"},
		"spec": map[string]any{"group": "fleet.example.com", "names": map[string]any{"kind": "FleetWeb"}, "template": "web:v1.2"},
	}}
	if _, err := dyn.Resource(defs).Create(ctx, def, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	fleetWebs := schema.GroupVersionResource{Group: "fleet.example.com", Version: "v1alpha1", Resource: "fleetwebs"}
	for {
		fw := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "fleet.example.com/v1alpha1", "kind": "FleetWeb",
			"metadata": map[string]any{"name": "g", "annotations": map[string]any{"dm.io/service-account-name": "deployer"}},
			"spec":     map[string]any{"size": "small", "replicas": 1},
		}}
		_, err := dyn.Resource(fleetWebs).Namespace(f.ns[1]).Create(ctx, fw, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("FleetWeb g: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var names [][2]string
	for i, list := range []string{"1", "2", "3"} {
		for _, spec := range instances[list] {
			name := spec["name"].(string)
			md := map[string]any{"name": name}
			if l, ok := spec["labels"]; ok {
				md["labels"] = l
			}
			delete(spec, "name")
			delete(spec, "labels")
			spec["serviceAccountName"] = "deployer"
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance",
				"metadata": md, "spec": spec,
			}}
			if _, err := dyn.Resource(tiGVR).Namespace(f.ns[i]).Create(ctx, u, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, [2]string{f.ns[i], name})
		}
	}
	for _, n := range append(names, [2]string{f.ns[1], "g"}) {
		gvr := tiGVR
		if n[1] == "g" {
			gvr = fleetWebs
		}
		for {
			u, err := dyn.Resource(gvr).Namespace(n[0]).Get(ctx, n[1], metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r, _, _ := unstructured.NestedString(u.Object, "status", "resolved"); r != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %s/%s not applied within a minute: %v", n[0], n[1], u.Object["status"])
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return f
}

// impact runs dm impact against the fleet with the unpublished directory.
func (f *fleet) impact(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	base := []string{"--kubeconfig", kubeconfig, "--registry-dir", fleetPrefix + "=" + f.next, "impact", "web:v1.2.1"}
	return dmRun(t, nil, append(base, args...)...)
}

// placeholders replaces the fleet's namespaces, impact-RANDOM-N, with
// impact-000000-N: the same length, so that columns stay aligned.
func (f *fleet) placeholders(s string) string {
	for i, ns := range f.ns {
		s = strings.ReplaceAll(s, ns, fmt.Sprintf("impact-000000-%d", i+1))
	}
	return s
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "impact", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}

// TestImpactFleet: dm impact on a fleet over three namespaces lists the
// instances that would take an unpublished patch, each with its diff (a
// field changed, an object added, one removed), names the property set
// whose expansion fails, leaves out Manual, digest-pinned and other-MINOR
// instances (an exact web:v1.2.0 takes later patches, as dm resolves it), and exits 1 for the failure or a matching
// --fail-on-change.
func TestImpactFleet(t *testing.T) {
	small := func(name string, replicas int) map[string]any {
		return map[string]any{"name": name, "template": "web:v1.2", "properties": map[string]any{"size": "small", "replicas": replicas}}
	}
	big := small("", 0)
	big["properties"] = map[string]any{"size": "big", "replicas": 2}
	with := func(m map[string]any, k string, v any) map[string]any {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		c[k] = v
		return c
	}
	f := startFleet(t, map[string][]map[string]any{
		"1": {with(small("a", 1), "labels", map[string]any{"ring": "canary"}), with(big, "name", "b"), with(small("manual", 1), "updatePolicy", "Manual")},
		"2": {small("c", 1), with(small("exact", 1), "template", "web:v1.2.0"), with(small("older", 1), "template", "web:v1.1")},
		"3": {small("e", 3), with(big, "name", "f")},
	})
	// A digest-pinned instance: the digest of what a runs.
	a, err := f.dyn.Resource(tiGVR).Namespace(f.ns[0]).Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	digest, _, _ := unstructured.NestedString(a.Object, "status", "digest")
	pinned := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance", "metadata": map[string]any{"name": "pinned"},
		"spec": map[string]any{"template": "web:v1.2@" + digest, "serviceAccountName": "deployer", "properties": map[string]any{"size": "small", "replicas": 1}},
	}}
	if _, err := f.dyn.Resource(tiGVR).Namespace(f.ns[1]).Create(context.Background(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A roll-out policy: a canary wave by label, then the rest; the third
	// namespace has a RolloutPolicy of its own, with one wave.
	policies := schema.GroupVersionResource{Group: "dm.io", Version: "v1alpha1", Resource: "templaterolloutpolicies"}
	nsPolicies := schema.GroupVersionResource{Group: "dm.io", Version: "v1alpha1", Resource: "rolloutpolicies"}
	for _, p := range []struct {
		gvr  schema.GroupVersionResource
		ns   string
		name string
		spec map[string]any
	}{
		{policies, "", "web-" + f.ns[0], map[string]any{"template": "web:v1.2", "waves": []any{
			map[string]any{"name": "canary", "selector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}},
			map[string]any{"name": "rest"},
		}}},
		{nsPolicies, f.ns[2], "web", map[string]any{"template": "web:v1.2", "waves": []any{map[string]any{"name": "all-at-once"}}}},
	} {
		kind := "TemplateRolloutPolicy"
		if p.ns != "" {
			kind = "RolloutPolicy"
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": kind, "metadata": map[string]any{"name": p.name}, "spec": p.spec}}
		if _, err := f.dyn.Resource(p.gvr).Namespace(p.ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			f.dyn.Resource(p.gvr).Namespace(p.ns).Delete(context.Background(), p.name, metav1.DeleteOptions{})
		})
	}

	r := f.impact(t, f.env.Kubeconfig, "-A", "-o", "json")
	if r.code != 1 {
		t.Fatalf("dm impact -o json: exit %d, want 1 (size big fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rep impact.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	var got []string
	for _, in := range rep.Instances {
		got = append(got, f.placeholders(in.Namespace+"/"+in.Name))
	}
	// web:v1.2.0 allows v1.2.0 and its later patches, as dm resolves it.
	if want := []string{"impact-000000-1/a", "impact-000000-1/b", "impact-000000-2/g", "impact-000000-2/c", "impact-000000-2/exact", "impact-000000-3/e", "impact-000000-3/f"}; !slices.Equal(got, want) {
		t.Errorf("instances %q, want %q (manual, older and pinned absent)", got, want)
	}
	waves := map[string]string{}
	for _, in := range rep.Instances {
		waves[in.Name] = in.Wave
	}
	if want := map[string]string{"a": "canary", "b": "rest", "c": "rest", "exact": "rest", "g": "rest", "e": "all-at-once", "f": "all-at-once"}; !maps.Equal(waves, want) {
		t.Errorf("waves %v, want %v", waves, want)
	}
	for _, in := range rep.Instances {
		switch in.Name {
		case "b", "f":
			if !strings.Contains(in.Error, "properties.size: value must be one of 'small', 'medium'") {
				t.Errorf("%s: error %q does not name the property", in.Name, in.Error)
			}
		default:
			if in.Error != "" {
				t.Errorf("%s: error %q", in.Name, in.Error)
			}
		}
	}
	// The other outputs come from the same report: the golden files pin
	// the JSON schema and what text and markdown make of it.
	golden(t, "fleet.json", f.placeholders(r.stdout))
	md := f.impact(t, f.env.Kubeconfig, "-A", "-o", "markdown")
	golden(t, "fleet.md", f.placeholders(md.stdout))
	text := f.impact(t, f.env.Kubeconfig, "-A", "-v")
	golden(t, "fleet.txt", f.placeholders(text.stdout))
	// a, c, exact and g share their properties, b and f theirs, e has
	// its own.
	if !strings.Contains(text.stderr, "dm: 7 instances, 3 expansions") {
		t.Errorf("dm impact -v: %s", text.stderr)
	}

	// One namespace without a failing instance: 0, unless a rule matches.
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		inErr string
	}{
		{"no rule", nil, 0, ""},
		{"rule on the changed field", []string{"--fail-on-change", "Deployment:spec.replicas"}, 1, "Deployment:spec.replicas: TemplateInstance impact-000000-2/c: update Deployment impact-000000-2/c"},
		{"rule on a deletion", []string{"--fail-on-change", "delete"}, 1, "delete: TemplateInstance impact-000000-2/c: delete ConfigMap impact-000000-2/c-old"},
		{"rule on a field unchanged", []string{"--fail-on-change", "Deployment:spec.selector"}, 0, ""},
		{"rule on a kind unchanged", []string{"--fail-on-change", "Service"}, 0, ""},
		{"bad rule", []string{"--fail-on-change", "Deployment:spec..x"}, 2, ""},
		{"bad output", []string{"-o", "yaml"}, 2, ""},
		{"-A and -n", []string{"-A"}, 2, ""},
		{"bad concurrency", []string{"--concurrency", "0"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.impact(t, f.env.Kubeconfig, append([]string{"-n", f.ns[1]}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.inErr != "" && !strings.Contains(f.placeholders(r.stdout), tc.inErr) {
				t.Errorf("output lacks %q:\n%s", tc.inErr, f.placeholders(r.stdout))
			}
		})
	}

	// A patch that failed under the third namespace's policy reaches none
	// of its instances.
	rp, err := f.dyn.Resource(nsPolicies).Namespace(f.ns[2]).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedStringSlice(rp.Object, []string{"v1.2.1"}, "status", "failedVersions")
	if _, err := f.dyn.Resource(nsPolicies).Namespace(f.ns[2]).UpdateStatus(context.Background(), rp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := f.impact(t, f.env.Kubeconfig, "-n", f.ns[2], "-o", "json")
	if failed.code != 0 || !strings.Contains(failed.stdout, `"instances": []`) {
		t.Errorf("a failed patch: exit %d\n%s\n%s", failed.code, failed.stdout, failed.stderr)
	}

	// On a terminal, stderr shows the progress, and the report is on
	// stdout as without one.
	master, tty := openPTY(t)
	tm := &terminal{t: t, master: master}
	stdout, done := runOnTerminal(t, tty, "--kubeconfig", f.env.Kubeconfig, "--registry-dir", fleetPrefix+"="+f.next, "impact", "web:v1.2.1", "-n", f.ns[1])
	tm.expect("dm: 3/3 instances previewed")
	if err := <-done; err != nil || !strings.Contains(stdout.String(), "3 instances would take it") {
		t.Errorf("on a terminal: %v\n%s", err, stdout)
	}

	// A caller who may read one namespace sees it alone.
	grantNamed(t, f.dyn, f.ns[0], "limited", kubetest.LimitedUser, "get", "list", "impersonate")
	// The apiserver's authorizer sees a new RoleBinding a moment after
	// it is written: asked again until it does (bounded).
	lim := f.impact(t, f.env.LimitedKubeconfig, "-n", f.ns[0], "-o", "json")
	for i := 0; i < 50 && lim.code != 0 && strings.Contains(lim.stderr, "you may not"); i++ {
		time.Sleep(200 * time.Millisecond)
		lim = f.impact(t, f.env.LimitedKubeconfig, "-n", f.ns[0], "-o", "json")
	}
	var limRep impact.Report
	if err := json.Unmarshal([]byte(lim.stdout), &limRep); err != nil {
		t.Fatalf("limited: %v\n%s\n%s", err, lim.stdout, lim.stderr)
	}
	if len(limRep.Instances) != 2 || !strings.Contains(lim.stderr, "may not list TemplateDefinitions") {
		t.Errorf("limited in %s: %d instances, stderr %q", f.ns[0], len(limRep.Instances), lim.stderr)
	}
	for _, args := range [][]string{{"-n", f.ns[1]}, {"-A"}} {
		r := f.impact(t, f.env.LimitedKubeconfig, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "you may not") {
			t.Errorf("limited %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// grantNamed lets user do verbs on everything in ns, through a Role and
// RoleBinding called name.
func grantNamed(t testing.TB, dyn dynamic.Interface, ns, name, user string, verbs ...string) {
	t.Helper()
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": name},
		"rules":    []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": toAny(verbs)}},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": name},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
	for res, u := range map[string]*unstructured.Unstructured{"roles": role, "rolebindings": binding} {
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: res}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImpactMarkdownBounded: -o markdown puts failures first and holds
// at most its bound of rows, counting the rest.
func TestImpactMarkdownBounded(t *testing.T) {
	rep := &impact.Report{Version: "github.com/acme/fleet/web:v1.2.1"}
	for i := range 4 {
		rep.Instances = append(rep.Instances, impact.Instance{Namespace: "n", Name: fmt.Sprintf("i%d", i), Kind: "TemplateInstance",
			From: "github.com/acme/fleet/web:v1.2.0", To: rep.Version, Changes: []impact.Change{}})
	}
	rep.Instances[3].Error = "bad | worse\nworst"
	rep.Instances[1].Changes = []impact.Change{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "n", Name: "i1", Action: "update",
		Fields: []string{"a", "b", "c", "d", "e", "f", "g"}}}
	var b strings.Builder
	if err := writeImpactMarkdown(&b, rep, nil, 2); err != nil {
		t.Fatal(err)
	}
	want := "### dm impact: `github.com/acme/fleet/web:v1.2.1`\n\n" +
		"4 instances would take it, 1 failed, 2 unchanged; objects: 0 created, 1 updated, 0 deleted.\n\n" +
		"| instance | from | wave | result |\n|---|---|---|---|\n" +
		"| TemplateInstance `n/i3` | v1.2.0 | - | ❌ bad \\| worse worst |\n" +
		"| TemplateInstance `n/i0` | v1.2.0 | - | no change |\n" +
		"\nand 2 more.\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := writeImpactMarkdown(&b, rep, nil, 10); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "update Deployment n/i1 (a, b, c, d, e, and 2 more)") {
		t.Errorf("fields not bounded:\n%s", b.String())
	}
}
