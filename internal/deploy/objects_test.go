package deploy

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/manifest"
)

// expandConfig expands a configuration of primitives and imports in
// process, as the actions' Expander would.
func expandConfig(t *testing.T, config string, imports map[string]string) *expand.Result {
	t.Helper()
	req := expand.Request{Config: []byte(config), Deployment: "app", Namespace: "ns", Imports: map[string][]byte{}}
	for k, v := range imports {
		req.Imports[k] = []byte(v)
	}
	res, err := expand.New(expand.Options{}).Expand(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestObjectsOf(t *testing.T) {
	res := expandConfig(t, `
imports: [{path: web.jinja}]
resources:
- name: web
  type: web.jinja
- name: plain
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, data: {a: "$(ref.svc.spec.clusterIP)"}}
`, map[string]string{"web.jinja": `
resources:
- name: svc
  type: Service
  properties: {apiVersion: v1, kind: Service, metadata: {name: web, labels: {app: web}}, spec: {ports: [{port: 80}]}}
- name: cm
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: web-config}, data: {url: "http://$(ref.svc.spec.clusterIP)/"}}
`})
	p, err := objectsOf(res, "app", "ns", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.objects) != 3 {
		t.Fatalf("got %d objects, want 3", len(p.objects))
	}
	for _, tc := range []struct {
		name, path, objName string
		wave                int
		deferred            int
	}{
		{"svc", "web/svc", "web", 0, 0},
		{"cm", "web/cm", "web-config", 1, 1},
		{"plain", "plain", "plain", 1, 1},
	} {
		o := byName(p, tc.name)
		if o == nil {
			t.Fatalf("no object %s", tc.name)
		}
		if o.path != tc.path || o.obj.GetName() != tc.objName || o.wave != tc.wave || len(o.deferred) != tc.deferred {
			t.Errorf("%s: path %q name %q wave %d deferred %d; want %q %q %d %d", tc.name, o.path, o.obj.GetName(), o.wave, len(o.deferred), tc.path, tc.objName, tc.wave, tc.deferred)
		}
		l := o.obj.GetLabels()
		if l[LabelManagedBy] != "dm" || l[LabelDeployment] != "app" {
			t.Errorf("%s: labels %v", tc.name, l)
		}
		a := o.obj.GetAnnotations()
		if a[AnnotationNamespace] != "ns" || a[AnnotationPath] != tc.path {
			t.Errorf("%s: annotations %v", tc.name, a)
		}
	}
	if a := byName(p, "svc").obj.GetAnnotations(); a[AnnotationTemplate] != "web.jinja" {
		t.Errorf("svc: template annotation %q, want web.jinja", a[AnnotationTemplate])
	}
	if l := byName(p, "svc").obj.GetLabels(); l["app"] != "web" {
		t.Errorf("the template's own labels were lost: %v", l)
	}
	if p.waves != 2 {
		t.Errorf("waves = %d, want 2", p.waves)
	}
}

func TestObjectsOfNotAnObject(t *testing.T) {
	res := expandConfig(t, `
resources:
- name: x
  type: Widget
  properties: {size: 1}
`, nil)
	_, err := objectsOf(res, "app", "ns", manifest.Options{})
	if err == nil || !strings.Contains(err.Error(), "layout path x") || !strings.Contains(err.Error(), "not a Kubernetes") {
		t.Fatalf("err = %v, want one naming x and the missing apiVersion/kind", err)
	}
}

func TestObjectsOfKindFromType(t *testing.T) {
	res := expandConfig(t, `
resources:
- {name: web, type: apps/v1/Deployment, properties: {spec: {replicas: 1}}}
`, nil)
	p, err := objectsOf(res, "app", "ns", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := p.objects[0].obj
	if u.GetAPIVersion() != "apps/v1" || u.GetKind() != "Deployment" || u.GetName() != "web" {
		t.Errorf("got %s %s %s", u.GetAPIVersion(), u.GetKind(), u.GetName())
	}
}

// byName finds the object of the resource named name.
func byName(p *plan, name string) *object {
	for _, o := range p.objects {
		if o.name == name {
			return o
		}
	}
	return nil
}

func rec(rev int, status release.Status, names ...string) *release.Record {
	r := &release.Record{Name: "app", Namespace: "ns", Revision: rev, Status: status}
	for _, n := range names {
		r.Resources = append(r.Resources, release.Resource{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: n})
	}
	return r
}

func names(rs []release.Resource) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Name)
	}
	return strings.Join(s, ",")
}

func TestPruneCandidates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hist     []*release.Record
		deleting bool
		want     string
	}{
		{"deployed only", []*release.Record{rec(1, release.StatusSuperseded, "old"), rec(2, release.StatusDeployed, "a", "b")}, false, "a,b"},
		{"failed after deployed", []*release.Record{rec(1, release.StatusDeployed, "a"), rec(2, release.StatusFailed, "a", "c"), rec(3, release.StatusFailed, "d")}, false, "a,c,d"},
		{"never deployed", []*release.Record{rec(1, release.StatusFailed, "a"), rec(2, release.StatusFailed, "b")}, false, "a,b"},
		{"after delete", []*release.Record{rec(1, release.StatusDeleting, "a")}, false, ""},
		{"interrupted delete", []*release.Record{rec(1, release.StatusSuperseded, "x"), rec(2, release.StatusDeleting, "a")}, true, "a"},
	} {
		if got := names(pruneCandidates(tc.hist, tc.deleting)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLiveRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		hist []*release.Record
		want int
	}{
		{"none", nil, 0},
		{"failed only", []*release.Record{rec(1, release.StatusFailed)}, 0},
		{"deployed", []*release.Record{rec(1, release.StatusDeployed), rec(2, release.StatusFailed)}, 2},
		{"deleted", []*release.Record{rec(1, release.StatusSuperseded), rec(2, release.StatusDeleting)}, 0},
		{"redeployed", []*release.Record{rec(1, release.StatusDeleting), rec(2, release.StatusDeployed)}, 2},
	} {
		got := 0
		if r := liveRecord(tc.hist); r != nil {
			got = r.Revision
		}
		if got != tc.want {
			t.Errorf("%s: live revision %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCheckOwnership(t *testing.T) {
	res := expandConfig(t, `
resources:
- {name: a, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap}}
`, nil)
	p, err := objectsOf(res, "app", "ns", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.objects[0].obj.SetNamespace("ns")
	ref := p.objects[0].ref()
	meta := func(labels map[string]string, ns string) map[kube.ObjectRef]*metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{}
		m.SetLabels(labels)
		m.SetAnnotations(map[string]string{AnnotationNamespace: ns})
		return map[kube.ObjectRef]*metav1.PartialObjectMetadata{ref: m}
	}
	ours := map[string]string{LabelManagedBy: "dm", LabelDeployment: "app"}
	theirs := map[string]string{LabelManagedBy: "dm", LabelDeployment: "other"}
	for _, tc := range []struct {
		name  string
		live  map[kube.ObjectRef]*metav1.PartialObjectMetadata
		adopt bool
		want  string
	}{
		{"new", nil, false, ""},
		{"ours", meta(ours, "ns"), false, ""},
		{"unowned", meta(nil, ""), false, "--adopt"},
		{"unowned adopted", meta(nil, ""), true, ""},
		{"another deployment", meta(theirs, "ns"), true, "belongs to dm deployment ns/other"},
		{"same name other namespace", meta(ours, "elsewhere"), true, "belongs to dm deployment elsewhere/app"},
	} {
		err := checkOwnership(p.objects, tc.live, "ns", "app", tc.adopt)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ConfigMap ns/a")):
			t.Errorf("%s: err = %v, want one naming ConfigMap ns/a and %q", tc.name, err, tc.want)
		}
	}
}

// TestLongDeploymentName: a name longer than a label value may be is
// labelled by its hash, which the ownership check matches.
func TestLongDeploymentName(t *testing.T) {
	res := expandConfig(t, `
resources:
- {name: a, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap}}
`, nil)
	name := strings.Repeat("long-", 20) + "app" // 103 characters
	p, err := objectsOf(res, name, "ns", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := p.objects[0].obj.GetLabels()[LabelDeployment]
	if errs := validation.IsValidLabelValue(l); len(errs) > 0 || l != driver.DeploymentLabel(name) {
		t.Fatalf("label %q: %v, want the valid %q", l, errs, driver.DeploymentLabel(name))
	}
	p.objects[0].obj.SetNamespace("ns")
	m := &metav1.PartialObjectMetadata{}
	m.SetLabels(p.objects[0].obj.GetLabels())
	m.SetAnnotations(map[string]string{AnnotationNamespace: "ns"})
	live := map[kube.ObjectRef]*metav1.PartialObjectMetadata{p.objects[0].ref(): m}
	if err := checkOwnership(p.objects, live, "ns", name, false); err != nil {
		t.Errorf("its own object: %v", err)
	}
	if err := checkOwnership(p.objects, live, "ns", name+"-2", false); err == nil {
		t.Error("another long name took the object over")
	}
}
