package gcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/gcp/kcctest"
)

// The apiserver tests install Config Connector's CRDs (third_party/kcc,
// the ones the mapping produces) on a real kube-apiserver and apply the
// converted objects with server-side apply under strict field
// validation, as dm deploy does: every object must be accepted. No KCC
// controller runs; the CRDs' schemas alone decide.

func TestMain(m *testing.M) { kubetest.Main(m) }

var (
	crdOnce   sync.Once
	crdPlural map[string]string // kind -> plural
)

// installCRDs applies every vendored CRD to env once and waits until each
// is established.
func installCRDs(t *testing.T, env *kubetest.Env) map[string]string {
	t.Helper()
	crdOnce.Do(func() {
		crdPlural = map[string]string{}
		for k, c := range kcctest.InstallCRDs(t, env) {
			crdPlural[k] = c.Plural
		}
	})
	if len(crdPlural) == 0 {
		t.Fatal("the CRDs were not installed")
	}
	return crdPlural
}

// applyObjects applies objs in order in namespace ns, returning one error
// per refused object.
func applyObjects(t *testing.T, env *kubetest.Env, ns string, objs []map[string]any, sources []string) []error {
	t.Helper()
	plural := installCRDs(t, env)
	var errs []error
	for i, o := range objs {
		kind, _ := o["kind"].(string)
		apiVersion, _ := o["apiVersion"].(string)
		name, _ := o["metadata"].(map[string]any)["name"].(string)
		p, ok := plural[kind]
		if !ok {
			errs = append(errs, fmt.Errorf("%s (from %s): no vendored CRD for kind %s", name, sources[i], kind))
			continue
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		path := "/apis/" + apiVersion + "/namespaces/" + ns + "/" + p + "/" + name
		if err := kcctest.ApplyStrict(env, path, b); err != nil {
			y, _ := yaml.Marshal(o)
			errs = append(errs, fmt.Errorf("%s %s (from %s): %v\n%s", kind, name, sources[i], err, y))
		}
	}
	return errs
}

// fillDeferred writes a stand-in for every deferred value, as deploy does
// with the live values, so that the objects can be applied.
func fillDeferred(t *testing.T, r *gcp.Result) {
	t.Helper()
	for _, d := range r.Deferred {
		obj := r.Objects[d.Object]
		parts := strings.Split(strings.TrimPrefix(d.Field, "/"), "/")
		var cur any = obj
		for _, p := range parts[:len(parts)-1] {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[p]
			case []any:
				var i int
				fmt.Sscan(p, &i)
				cur = c[i]
			}
		}
		last := parts[len(parts)-1]
		set := func(old any) any {
			s, _ := old.(string)
			return strings.ReplaceAll(s, d.Ref, "10.0.0.2")
		}
		switch c := cur.(type) {
		case map[string]any:
			c[last] = set(c[last])
		case []any:
			var i int
			fmt.Sscan(last, &i)
			c[i] = set(c[i])
		default:
			t.Fatalf("deferred %s: no container at %s", d.Ref, d.Field)
		}
	}
}
