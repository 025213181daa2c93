package gcp_test

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/gcp"
)

// readConfig reads a flat DM configuration: its resources.
func readConfig(t *testing.T, file string) []gcp.Resource {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Resources []struct {
			Name, Type    string
			Properties    map[string]any
			Metadata      map[string]any
			AccessControl map[string]any `json:"accessControl"`
		}
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	var res []gcp.Resource
	for _, r := range cfg.Resources {
		res = append(res, gcp.Resource{Name: r.Name, Type: r.Type, Properties: r.Properties, Metadata: r.Metadata,
			AccessControl: r.AccessControl, Path: []string{r.Name}})
	}
	return res
}

// TestApplySamples converts a sample of every mapped type
// (testdata/samples.yaml), and other forms of their fields
// (testdata/variants.yaml), and applies the objects to an apiserver holding
// Config Connector's CRDs, with strict field validation.
func TestApplySamples(t *testing.T) {
	for _, file := range []string{"testdata/samples.yaml", "testdata/variants.yaml"} {
		t.Run(file, func(t *testing.T) {
			res := readConfig(t, file)
			r, err := gcp.Convert(res, gcp.Options{Project: "dm-samples", DeletionPolicy: "abandon"})
			if err != nil {
				t.Fatal(err)
			}
			if file == "testdata/samples.yaml" {
				seen := map[string]bool{}
				for _, o := range r.Objects {
					seen[o["kind"].(string)] = true
				}
				for _, k := range gcp.Kinds() {
					if !seen[k[1]] {
						t.Errorf("no sample makes a %s: add one to %s", k[1], file)
					}
				}
			}
			fillDeferred(t, r)
			env := kubetest.Shared(t)
			ns := env.Namespace(t)
			for _, err := range applyObjects(t, env, ns, r.Objects, r.Sources) {
				t.Error(err)
			}
		})
	}
}

// TestApplyLoadBalancer converts a multi-resource configuration whose
// resources reference each other by $(ref.NAME.selfLink): every reference
// KCC can express becomes {name}, the rest (an instance group manager's
// group, a forwarding rule's address in a startup script) deferred reads
// of live status; the objects apply in order.
func TestApplyLoadBalancer(t *testing.T) {
	res := readConfig(t, "testdata/lb.yaml")
	r, err := gcp.Convert(res, gcp.Options{Project: "dm-lb", DeletionPolicy: "abandon"})
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	byName := map[string]map[string]any{}
	for i, o := range r.Objects {
		index[r.Sources[i]] = i
		byName[r.Sources[i]] = o
	}
	refs := map[string]string{ // object: field -> the object it names
		"lb-subnet/spec.networkRef":                         "lb-net",
		"lb-allow-http/spec.networkRef":                     "lb-net",
		"web-it/spec.networkInterface.0.networkRef":         "lb-net",
		"web-it/spec.networkInterface.0.subnetworkRef":      "lb-subnet",
		"web-igm/spec.instanceTemplateRef":                  "web-it",
		"web-igm/spec.autoHealingPolicies.0.healthCheckRef": "web-hc",
		"web-as/spec.targetRef":                             "web-igm",
		"web-bs/spec.healthChecks.0.healthCheckRef":         "web-hc",
		"web-um/spec.defaultService.backendServiceRef":      "web-bs",
		"web-proxy/spec.urlMapRef":                          "web-um",
		"web-fr/spec.target.targetHTTPProxyRef":             "web-proxy",
		"web-fr/spec.ipAddress.addressRef":                  "web-ip",
		"api-igm/spec.instanceTemplateRef":                  "api-it",
		"api-bs/spec.healthChecks.0.healthCheckRef":         "api-hc",
		"api-fr/spec.backendServiceRef":                     "api-bs",
		"api-fr/spec.subnetworkRef":                         "lb-subnet",
	}
	for where, target := range refs {
		obj, path, _ := strings.Cut(where, "/")
		got := lookupPath(byName[obj], path)
		if !reflect.DeepEqual(got, map[string]any{"name": target}) {
			t.Errorf("%s %s = %v, want {name: %s}", obj, path, got, target)
		}
		if index[target] > index[obj] {
			t.Errorf("%s comes after %s, which references it", target, obj)
		}
	}
	var deferred []string
	for _, d := range r.Deferred {
		deferred = append(deferred, r.Sources[d.Object]+" "+d.Field+" <- "+d.Kind+"/"+d.Name+" "+d.Path)
	}
	slices.Sort(deferred)
	want := []string{
		"api-as /spec/target <- ComputeInstanceGroupManager/api-igm status.selfLink",
		"api-bs /spec/backend/0/group/instanceGroupRef/external <- ComputeInstanceGroupManager/api-igm status.instanceGroup",
		"web-bs /spec/backend/0/group/instanceGroupRef/external <- ComputeInstanceGroupManager/web-igm status.instanceGroup",
		"web-it /spec/metadata/0/value <- ComputeAddress/api-ip status.observedState.address",
	}
	if !reflect.DeepEqual(deferred, want) {
		t.Errorf("deferred:\n%s\nwant\n%s", strings.Join(deferred, "\n"), strings.Join(want, "\n"))
	}
	fillDeferred(t, r)
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	for _, err := range applyObjects(t, env, ns, r.Objects, r.Sources) {
		t.Error(err)
	}
}

func lookupPath(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// TestApplyEverySpelling converts, for every supported DM type spelling
// (gcp.Types: compute.v1.instance, compute.beta.instance,
// gcp-types/compute-alpha:instances, the region and global variants, ...), a
// copy of its kind's samples written with that spelling, beside the
// samples they reference, and applies the objects.
func TestApplyEverySpelling(t *testing.T) {
	res := readConfig(t, "testdata/samples.yaml")
	byKind := map[string][]gcp.Resource{}
	kindOf := map[string]string{}
	for _, ti := range gcp.Types() {
		kindOf[ti.Type] = ti.Kind
	}
	for _, r := range res {
		if k := kindOf[r.Type]; len(byKind[k]) < 2 && !(k == "ComputeSSLCertificate" && r.Properties["type"] == "MANAGED") {
			byKind[k] = append(byKind[k], r) // two of each kind: enough forms, a quicker test
		}
	}
	all := slices.Clone(res)
	for i, ti := range gcp.Types() {
		samples := byKind[ti.Kind]
		if len(samples) == 0 {
			t.Errorf("%s: no sample of %s", ti.Type, ti.Kind)
			continue
		}
		for _, s := range samples {
			if s.Type == ti.Type {
				continue
			}
			c := s
			c.Name = s.Name + "-t" + strconv.Itoa(i)
			c.Type = ti.Type
			c.Path = []string{c.Name}
			c.AccessControl = nil
			c.Properties = maps.Clone(s.Properties)
			if c.Properties == nil {
				c.Properties = map[string]any{}
			}
			// The virtual IAM binding types name what they bind on
			// differently.
			switch ti.Type[strings.LastIndex(ti.Type, ":")+1:] {
			case "virtual.buckets.iamMemberBinding":
				delete(c.Properties, "resource")
				c.Properties["bucket"] = "dm-samples-bucket"
			case "virtual.folders.iamMemberBinding":
				c.Properties["resource"] = "folders/1234567"
			case "virtual.organizations.iamMemberBinding":
				c.Properties["resource"] = "organizations/1234567"
			}
			// Where the spelling says where the resource is, the body
			// says which zone or region.
			switch ti.Scope {
			case "global":
				delete(c.Properties, "region")
				delete(c.Properties, "zone")
			case "region":
				if c.Properties["region"] == nil {
					c.Properties["region"] = "us-central1"
				}
				delete(c.Properties, "zone")
			case "zone":
				if c.Properties["zone"] == nil {
					c.Properties["zone"] = "us-central1-f"
				}
				delete(c.Properties, "region")
			}
			all = append(all, c)
		}
	}
	r, err := gcp.Convert(all, gcp.Options{Project: "dm-samples"})
	if err != nil {
		t.Fatal(err)
	}
	fillDeferred(t, r)
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	for _, err := range applyObjects(t, env, ns, r.Objects, r.Sources) {
		t.Error(err)
	}
	t.Logf("%d spellings, %d objects applied", len(gcp.Types()), len(r.Objects))
}
