package dm_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/kubereg"
)

// TestRegistrydTemplateCRDs: the CRDs registry-example's registryd
// template installs are the generated ones (make generate), byte for
// byte but for the leading document marker.
func TestRegistrydTemplateCRDs(t *testing.T) {
	for _, kind := range []string{"registries", "clusterregistries"} {
		t.Run(kind, func(t *testing.T) {
			gen, err := os.ReadFile(filepath.Join("internal/controller/crds", "dm.io_"+kind+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			tpl, err := os.ReadFile(filepath.Join("registry-example/registryd/v1.0.0", "crd-"+kind+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bytes.TrimPrefix(gen, []byte("---\n")), tpl) {
				t.Errorf("registry-example/registryd/v1.0.0/crd-%s.yaml differs from the generated CRD: copy it without its first line (---)", kind)
			}
		})
	}
}

// TestRegistrydTemplateDeploy: dm deploy registryd:v1 -n dm-system
// --properties replicas=3 applies registryd with its CRDs, RBAC, Service
// and PodDisruptionBudget to the test apiserver.
func TestRegistrydTemplateDeploy(t *testing.T) {
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: "dm-system"}
	d.ok("deploy", "registryd:v1", "--create-namespace", "--properties", "replicas=3")
	out := d.ok("get", "registryd")
	for _, want := range []string{"CustomResourceDefinition", "registries.dm.io", "clusterregistries.dm.io", "ServiceAccount", "Role",
		"RoleBinding", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "PodDisruptionBudget"} {
		if !strings.Contains(out, want) {
			t.Errorf("dm get registryd lacks %s:\n%s", want, out)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, _ := kubereg.Scheme()
	_ = appsv1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "dm-system", Name: "registryd"}, dep); err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template
	if *dep.Spec.Replicas != 3 || pod.Spec.ServiceAccountName != "registryd" || pod.Annotations["prometheus.io/scrape"] != "true" ||
		pod.Spec.Containers[0].ReadinessProbe.HTTPGet.Path != "/readyz" || !strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), "--watch-registries") {
		t.Errorf("Deployment: replicas %d, account %q, annotations %v, args %v", *dep.Spec.Replicas, pod.Spec.ServiceAccountName, pod.Annotations, pod.Spec.Containers[0].Args)
	}
}
