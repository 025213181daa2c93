package chartlookup

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	dmengine "github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// cluster returns a namespace of the shared test cluster, its admin
// config and a clientset.
func cluster(t *testing.T) (string, *rest.Config, *kubernetes.Clientset) {
	t.Helper()
	env := kubetest.Shared(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env.Namespace(t), cfg, cs
}

// A chart's lookup reads the cluster through the provider: the lookup
// chart keeps the password of the Secret that exists, and sees
// kube-system; offline it generates one and sees nothing.
func TestLookup(t *testing.T) {
	ns, cfg, cs := cluster(t)
	ctx := context.Background()
	_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "l-pw"},
		Data:       map[string][]byte{"password": []byte("from-the-cluster")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := helm.LoadFS(os.DirFS("../../expand/helm/testdata/charts/lookup"), 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		lookup bool
		want   []string
	}{
		{"cluster", true, []string{"password: from-the-cluster", `sawKubeSystem: "true"`}},
		{"offline", false, []string{"password: generated-offline", `sawKubeSystem: "false"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := helm.Options{ReleaseName: "l", Namespace: ns}
			if tt.lookup {
				opts.Lookup = p
			}
			res, err := helm.Render(ctx, c, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Objects[0].Manifest, w) {
					t.Errorf("manifest lacks %q:\n%s", w, res.Objects[0].Manifest)
				}
			}
		})
	}
	// An unknown kind is an error naming it, not an empty answer.
	if _, _, err := p.GetClientFor("example.com/v1", "Nothing"); err == nil || !strings.Contains(err.Error(), `"Nothing"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// .Capabilities come from the cluster: its version, and exactly the API
// versions it serves.
func TestCapabilities(t *testing.T) {
	env := kubetest.Shared(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kv, apis, err := Capabilities(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(kv, "v1.31.") {
		t.Errorf("kube version %q, want the test cluster's v1.31.x", kv)
	}
	c, err := helm.LoadFS(os.DirFS("../../expand/helm/testdata/charts/capabilities"), 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := helm.Render(context.Background(), c, nil, helm.Options{ReleaseName: "c", KubeVersion: kv, APIVersions: apis, ClusterAPIVersions: true})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range res.Objects {
		kinds = append(kinds, o.Kind)
	}
	// The cluster serves policy/v1 PodDisruptionBudgets, not
	// monitoring.coreos.com.
	if strings.Join(kinds, " ") != "PodDisruptionBudget ConfigMap" {
		t.Errorf("objects %v, want the PodDisruptionBudget too", kinds)
	}
	cm := res.Objects[1].Manifest
	for _, w := range []string{"kube: \"" + kv + "\"", `monitoring: "false"`, `deployment: "true"`} {
		if !strings.Contains(cm, w) {
			t.Errorf("manifest lacks %s:\n%s", w, cm)
		}
	}
}

// NewLookup reads as its config's user: an object, a list, a
// cluster-scoped object whatever the namespace given; what is missing is
// nothing, not an error; what the user may not read is an error naming
// the object and the refusal.
func TestNewLookup(t *testing.T) {
	ns, cfg, cs := cluster(t)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pick": name}},
			Data:       map[string]string{"v": name},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	admin, err := NewLookup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nobodyCfg := rest.CopyConfig(cfg)
	nobodyCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":nobody"}
	nobody, err := NewLookup(nobodyCfg)
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name string) dmengine.LookupQuery {
		return dmengine.LookupQuery{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	tests := []struct {
		name    string
		l       dmengine.Lookup
		q       dmengine.LookupQuery
		want    string // fmt of what was read
		wantErr string
	}{
		{"object", admin, cm("a"), "map[v:a]", ""},
		{"missing", admin, cm("absent"), "<nil>", ""},
		{"list by label", admin, dmengine.LookupQuery{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, LabelSelector: "pick=b"}, "1 items", ""},
		{"cluster-scoped, namespace ignored", admin, dmengine.LookupQuery{APIVersion: "v1", Kind: "Namespace", Namespace: ns, Name: ns}, "Namespace", ""},
		{"forbidden", nobody, cm("a"), "", `lookup v1 ConfigMap ` + ns + `/a: configmaps "a" is forbidden: User "system:serviceaccount:` + ns + `:nobody" cannot get resource "configmaps"`},
		{"unknown kind", admin, dmengine.LookupQuery{APIVersion: "example.com/v1", Kind: "Nothing", Name: "x"}, "", `"Nothing"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.l.Lookup(ctx, tt.q)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got string
			switch {
			case obj == nil:
				got = "<nil>"
			case obj["items"] != nil:
				got = fmt.Sprintf("%d items", len(obj["items"].([]any)))
			case obj["kind"] == "Namespace":
				got = "Namespace"
			default:
				got = fmt.Sprint(obj["data"])
			}
			if got != tt.want {
				t.Errorf("read %s, want %s", got, tt.want)
			}
		})
	}
}
