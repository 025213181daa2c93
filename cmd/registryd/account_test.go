package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// registrydAccount gives registryd in namespace system the rights
// registry-example's registryd:v1 template grants, no more: it applies the
// template's ServiceAccount, Role, ClusterRole and their bindings (secrets
// are the Secrets of system the Role lets it read), and returns a
// kubeconfig that impersonates that ServiceAccount, so that a rule the
// template lacks fails the test that runs registryd with it.
func registrydAccount(t testing.TB, kubeconfig string, c client.Client, system string, secrets ...string) string {
	t.Helper()
	ctx := context.Background()
	list := make([]any, len(secrets))
	for i, s := range secrets {
		list[i] = s
	}
	rbac := applyTemplateRBAC(t, c, "registryd:v1", system, map[string]any{"secrets": list})
	if rbac != 5 {
		t.Fatalf("registryd:v1 has %d RBAC objects, want 5 (ServiceAccount, Role, RoleBinding, ClusterRole, ClusterRoleBinding)", rbac)
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = "system:serviceaccount:" + system + ":registryd"
		ai.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + system, "system:authenticated"}
	}
	file := filepath.Join(t.TempDir(), "registryd.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	// The account is narrower than the admin: a Secret it was not given
	// is refused.
	rc, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		t.Fatal(err)
	}
	as, err := client.New(rc, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.List(ctx, &corev1.SecretList{}, client.InNamespace("default")); !apierrors.IsForbidden(err) {
		t.Fatalf("registryd's account lists the Secrets of namespace default (%v): the kubeconfig does not impersonate it", err)
	}
	return file
}

// applyTemplateRBAC expands registry-example's template ref with props
// for namespace ns and creates its ServiceAccounts, Roles, ClusterRoles and
// bindings (the namespaced ones in ns), as a deploy of it would: the
// cluster tests hold registryd and dm-controller to exactly their
// templates' rights. It returns how many it created.
func applyTemplateRBAC(t testing.TB, c client.Client, ref, ns string, props map[string]any) int {
	t.Helper()
	ctx := context.Background()
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(dm.ExampleRegistry())}
	if err := reg.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	def, err := resolve.ParseRegistry(dm.ExampleRegistryPrefix)
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ := strings.Cut(ref, ":")
	x, err := api.NewService(resolve.New(def, reg), expand.Options{}).Expand(ctx, &api.ExpandRequest{
		Ref: ref, Name: name, Deployment: name, Namespace: ns, Properties: props})
	if err != nil {
		t.Fatalf("expanding %s: %v", ref, err)
	}
	n := 0
	for _, r := range x.Config.Resources {
		u := &unstructured.Unstructured{Object: r.Properties}
		switch u.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding":
			u.SetNamespace(ns)
		case "ClusterRole", "ClusterRoleBinding":
		default:
			continue
		}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s's %s %s: %v", ref, u.GetKind(), u.GetName(), err)
		}
		n++
	}
	return n
}

// secretReader lets registryd's ServiceAccount (of namespace system) read
// the named Secrets of ns, as docs/registryd-kubernetes.md asks of the
// owner of a namespace whose Registry names Secrets.
func secretReader(t testing.TB, c client.Client, ns, system string, names ...string) {
	t.Helper()
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registryd-secrets"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: names, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registryd-secrets"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "registryd-secrets"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "registryd", Namespace: system}}},
	} {
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}
