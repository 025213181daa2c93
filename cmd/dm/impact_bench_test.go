package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/instance"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/index/indextest"
	"github.com/dmhq/dm/internal/resolve"
)

// Fleet size of BenchmarkImpact: instances over namespaces, with
// benchPropertySets distinct property sets.
const (
	benchInstances    = 1000
	benchNamespaces   = 10
	benchPropertySets = 10
)

// BenchmarkImpact: dm impact over 1,000 instances of 10 distinct property
// sets in 10 namespaces, each applied as dm-controller applies (its field
// manager, its history) at v1.2.0, previewing an unpublished v1.2.1 that
// changes a field, adds an object and removes one. The target is under
// 10 s per run, and exactly one expansion per property set (make
// bench-impact).
func BenchmarkImpact(b *testing.B) {
	env := kubetest.Shared(b)
	// The benchmark function runs again for each b.N; the fleet is set up
	// once.
	benchFleet.once.Do(func() { benchFleet.next, benchFleet.err = setupBenchFleet(b, env) })
	if benchFleet.err != nil {
		b.Fatal(benchFleet.err)
	}
	nextDir := benchFleet.next
	counts := regexp.MustCompile(`dm: (\d+) instances, (\d+) expansions.*`)
	b.ResetTimer()
	for range b.N {
		r := dmRun(b, nil, "--kubeconfig", env.Kubeconfig, "--registry-dir", fleetPrefix+"="+nextDir, "impact", "web:v1.2.1", "-A", "-o", "json", "-v")
		if r.code != 0 {
			b.Fatalf("dm impact: exit %d\n%.2000s", r.code, r.stderr)
		}
		m := counts.FindStringSubmatch(r.stderr)
		if m == nil {
			b.Fatalf("dm impact -v: %s", r.stderr)
		}
		n, _ := strconv.Atoi(m[1])
		x, _ := strconv.Atoi(m[2])
		if n != benchInstances || x != benchPropertySets {
			b.Fatalf("dm impact: %d instances, %d expansions; want %d and %d", n, x, benchInstances, benchPropertySets)
		}
		b.ReportMetric(float64(x), "expansions/op")
		b.Logf("%s", m[0])
	}
}

// benchFleet is BenchmarkImpact's fleet: the unpublished directory.
var benchFleet struct {
	once sync.Once
	next string
	err  error
}

// setupBenchFleet deploys the fleet and returns the directory of the
// unpublished version.
func setupBenchFleet(b *testing.B, env *kubetest.Env) (string, error) {
	ctx := context.Background()
	rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	// Setting the fleet up is not measured: no client-side limit.
	rc.QPS, rc.Burst = -1, 1000
	scheme, err := controller.Scheme()
	if err != nil {
		b.Fatal(err)
	}
	cc, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	if err := controller.InstallCRDs(ctx, cc); err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	pub := map[string]string{}
	next := map[string]string{}
	for _, v := range []string{"v1.2.0", "v1.2.1"} {
		for k, c := range webTemplate(v) {
			next[k] = c
			if v == "v1.2.0" {
				pub[k] = c
			}
		}
	}
	// Not b.TempDir: the fleet outlives the first run of the function
	// (the directories are left in the system's temporary directory).
	pubDir, err := benchDir(pub)
	if err != nil {
		b.Fatal(err)
	}
	nextDir, err := benchDir(next)
	if err != nil {
		b.Fatal(err)
	}
	regs, err := api.OpenRegistries([]api.RegistrySpec{{Prefix: fleetPrefix, Dir: pubDir}}, api.Setup{})
	if err != nil {
		b.Fatal(err)
	}
	if err := api.IndexOnce(ctx, regs, nil); err != nil {
		b.Fatal(err)
	}
	def, _ := resolve.ParseRegistry(fleetPrefix)
	svc := api.NewService(resolve.New(def, regs...), expand.Options{})
	expander := deploy.ExpandFunc(func(ctx context.Context, src deploy.Source) (*expand.Result, error) {
		return svc.Expand(ctx, &api.ExpandRequest{Ref: src.Input.Ref, Registry: src.Input.Registry, Properties: src.Properties,
			Name: src.Name, Deployment: src.Deployment, Namespace: src.Namespace, Env: src.Env})
	})

	var nss []string
	for range benchNamespaces {
		ns := env.Namespace(b)
		grantNamed(b, dyn, ns, "deployer", "system:serviceaccount:"+ns+":deployer", "*")
		nss = append(nss, ns)
	}
	// One client per namespace, as the controller keeps one per account.
	clients := map[string]*kube.Client{}
	for _, ns := range nss {
		if clients[ns], err = kube.New(ctx, kube.Config{REST: rest.CopyConfig(rc), Namespace: ns, FieldManager: instance.FieldManager, DiscoveryCache: "-", QPS: -1}); err != nil {
			b.Fatal(err)
		}
	}
	// Deploy the fleet as the controller would, a few at a time.
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	errs := make(chan error, benchInstances)
	for i := range benchInstances {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- benchInstance(ctx, clients[nss[i%benchNamespaces]], dyn, expander, nss[i%benchNamespaces], fmt.Sprintf("web-%04d", i), i%benchPropertySets)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return nextDir, nil
}

// benchInstance deploys one instance at v1.2.0 as dm-controller does,
// with the TemplateInstance and its status.resolved.
func benchInstance(ctx context.Context, kc *kube.Client, dyn dynamic.Interface, x deploy.Expander, ns, name string, set int) error {
	props := map[string]any{"size": []string{"small", "medium"}[set%2], "replicas": set + 1}
	ti := &v1alpha1.TemplateInstance{}
	ti.Namespace, ti.Name = ns, name
	ti.Spec.Template = "web:v1.2"
	ti.Spec.ServiceAccountName = "deployer"
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"template": ti.Spec.Template, "serviceAccountName": "deployer", "properties": props},
	}}
	created, err := dyn.Resource(tiGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	cfg := &deploy.Config{Cluster: kc, History: driver.NewSecrets(kc.Dynamic()), Expander: x, Namespace: ns}
	res, err := cfg.Deploy(ctx, deploy.DeployOptions{
		Name: name, Upgrade: true, Source: instance.Source(ti, props, fleetPrefix, ""),
		ApplyOptions: deploy.ApplyOptions{Controller: instance.ControllerName("TemplateInstance", ti), ForceConflicts: true},
	})
	if err != nil {
		return fmt.Errorf("%s/%s: %w", ns, name, err)
	}
	// The status as the controller writes it: what runs, and its objects.
	inv := []any{}
	for _, r := range res.Record.Resources {
		o := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name}
		if r.Namespace != "" {
			o["namespace"] = r.Namespace
		}
		inv = append(inv, o)
	}
	created.Object["status"] = map[string]any{"resolved": res.Resolved, "inventory": inv}
	_, err = dyn.Resource(tiGVR).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// benchDir writes files into a new temporary directory.
func benchDir(files map[string]string) (string, error) {
	dir, err := os.MkdirTemp("", "dm-bench-impact-")
	if err != nil {
		return "", err
	}
	return dir, indextest.WriteFiles(dir, files)
}
