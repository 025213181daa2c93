package dm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// registry-example publishes dm-controller itself as a template (dogfood):
// `dm deploy dm-controller:v1 -n dm-system` installs its CRDs, identity,
// rights and Deployment with dm's own deploy code. The test apiserver has
// no kubelet, so the pod never runs: the test checks the objects.
func TestDogfoodControllerTemplate(t *testing.T) {
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: "dm-system"}
	d.ok("deploy", "dm-controller:v1", "--create-namespace", "--properties", "server=http://registryd.dm-system.svc,defaultServiceAccount=deployer")

	get := func(path string, v any) {
		t.Helper()
		code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, path, nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %s %v", path, code, body, err)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, crd := range []string{"templateinstances.dm.io", "templatedefinitions.dm.io"} {
		var c struct {
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		}
		get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd, &c)
		established := false
		for _, cond := range c.Status.Conditions {
			established = established || cond.Type == "Established" && cond.Status == "True"
		}
		if !established {
			t.Errorf("CRD %s not Established: %+v", crd, c.Status.Conditions)
		}
	}
	var sa, crb struct {
		Subjects []struct{ Kind, Name, Namespace string } `json:"subjects"`
	}
	get("/api/v1/namespaces/dm-system/serviceaccounts/dm-controller", &sa)
	get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/dm-controller", &crb)
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != "dm-controller" || crb.Subjects[0].Namespace != "dm-system" {
		t.Errorf("ClusterRoleBinding subjects %+v, want ServiceAccount dm-system/dm-controller", crb.Subjects)
	}
	var role struct {
		Rules []struct{ APIGroups, Resources, Verbs []string } `json:"rules"`
	}
	get("/apis/rbac.authorization.k8s.io/v1/clusterroles/dm-controller", &role)
	rules := ""
	for _, r := range role.Rules {
		rules += strings.Join(r.Resources, ",") + ":" + strings.Join(r.Verbs, ",") + " "
	}
	for _, want := range []string{"serviceaccounts:impersonate", "leases:get", "templateinstances/status", "configmaps,", "customresourcedefinitions:get,list,watch,create"} {
		if !strings.Contains(rules, want) {
			t.Errorf("ClusterRole rules %q lack %q", rules, want)
		}
	}
	// No Secret, and no "every kind": RBAC cannot except Secrets from one.
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			if (g == "" || g == "*") && (slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, "secrets")) {
				t.Errorf("ClusterRole rule %+v grants Secrets", r)
			}
		}
	}
	var policy struct {
		Spec struct {
			Validations []struct{ Expression string } `json:"validations"`
		} `json:"spec"`
	}
	get("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/dm-controller-crds", &policy)
	if len(policy.Spec.Validations) != 1 || !strings.Contains(policy.Spec.Validations[0].Expression, "object.spec.group in") {
		t.Errorf("CRD policy validations %+v, want one on object.spec.group", policy.Spec.Validations)
	}
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					ServiceAccountName string `json:"serviceAccountName"`
					Containers         []struct {
						Args           []string                                `json:"args"`
						LivenessProbe  struct{ HTTPGet struct{ Path string } } `json:"livenessProbe"`
						ReadinessProbe struct{ HTTPGet struct{ Path string } } `json:"readinessProbe"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	get("/apis/apps/v1/namespaces/dm-system/deployments/dm-controller", &dep)
	ps := dep.Spec.Template.Spec
	if ps.ServiceAccountName != "dm-controller" || len(ps.Containers) != 1 {
		t.Fatalf("Deployment pod spec %+v", ps)
	}
	c := ps.Containers[0]
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes %+v %+v, want /healthz and /readyz", c.LivenessProbe, c.ReadinessProbe)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--server=http://registryd.dm-system.svc", "--default-service-account=deployer", "--health-addr=:8081"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// dm knows it as an ordinary deployment of 8 objects.
	var got struct {
		Resources []struct{ Kind string } `json:"resources"`
	}
	d.json(&got, "get", "dm-controller")
	if len(got.Resources) != 8 {
		t.Errorf("dm get dm-controller: %d objects, want 8", len(got.Resources))
	}
}
