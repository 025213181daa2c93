package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// TestRegistryScope (issue 16 §1, §4): registryd serves a namespaced
// Registry and a ClusterRegistry from the cluster, dm-controller resolves
// through it (--server); an instance of the Registry's namespace gets its
// template, an instance of another namespace naming the same template is
// Stalled with a message that names the registry and the namespace rule,
// the ClusterRegistry's template reaches that other namespace, and a
// TemplateDefinition (cluster-scoped) of the Registry's template is
// Stalled too.
func TestRegistryScope(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	for _, ns := range []string{teamA, teamB} {
		configMapDeployer(t, c, ns)
	}
	cm := "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {from: x}}\n"
	gh := githubtest.New(map[string]string{
		"acme/private": githubtest.NewRepoFS(t, mapFS(t, map[string]string{"cm/v1.0.0/cm.jinja": cm})),
		"acme/shared":  githubtest.NewRepoFS(t, mapFS(t, map[string]string{"cm/v1.0.0/cm.jinja": cm})),
	})
	defer gh.Close()
	r := startReplica(t, replicaArgs(t, registrydAccount(t, env.Kubeconfig, c, system), gh.URL)...)
	for _, obj := range []client.Object{
		&v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "private"},
			Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: "private", Branch: "main"}}},
		&v1alpha1.ClusterRegistry{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
			Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: "shared", Branch: "main"}}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, ref := range []string{"github.com/acme/private/cm:v1", "github.com/acme/shared/cm:v1"} {
		waitFor(t, 60*time.Second, "registryd to resolve "+ref, func() bool { return strings.HasSuffix(r.resolved(ref), "cm:v1.0.0") })
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := controller.Run(cctx, controller.RunConfig{REST: cfg, Server: r.url, MetricsAddr: "0", HealthAddr: "0",
			Options: controller.Options{DefaultServiceAccount: "deployer"}})
		if err != nil {
			t.Errorf("dm-controller: %v", err)
		}
	}()
	defer func() {
		stop()
		wg.Wait()
	}()

	instance := func(ns, name, ref string) {
		ti := &v1alpha1.TemplateInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.TemplateInstanceSpec{Template: ref}}
		if err := c.Create(ctx, ti); err != nil {
			t.Fatal(err)
		}
	}
	instance(teamA, "own", "github.com/acme/private/cm:v1")
	instance(teamB, "foreign", "github.com/acme/private/cm:v1")
	instance(teamB, "shared", "github.com/acme/shared/cm:v1")
	condition := func(ns, name, typ string) *metav1.Condition {
		ti := &v1alpha1.TemplateInstance{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ti); err != nil {
			return nil
		}
		return apimeta.FindStatusCondition(ti.Status.Conditions, typ)
	}
	configMap := func(ns, name string) error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	}
	for _, ok := range []struct{ ns, name string }{{teamA, "own"}, {teamB, "shared"}} {
		waitFor(t, 90*time.Second, ok.ns+"/"+ok.name+" Ready", func() bool {
			c := condition(ok.ns, ok.name, v1alpha1.ConditionReady)
			return c != nil && c.Status == metav1.ConditionTrue
		})
		if err := configMap(ok.ns, ok.name); err != nil {
			t.Errorf("ConfigMap %s/%s: %v", ok.ns, ok.name, err)
		}
	}
	waitFor(t, 90*time.Second, teamB+"/foreign Stalled", func() bool {
		c := condition(teamB, "foreign", v1alpha1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	st, ready := condition(teamB, "foreign", v1alpha1.ConditionStalled), condition(teamB, "foreign", v1alpha1.ConditionReady)
	if st.Reason != "RegistryOutOfScope" || ready == nil || ready.Status != metav1.ConditionFalse {
		t.Errorf("foreign: Stalled reason %q, Ready %v; want RegistryOutOfScope and Ready False", st.Reason, ready)
	}
	for _, want := range []string{"registry github.com/acme/private", "a Registry of namespace " + teamA, "serve namespace " + teamA + " only", "ClusterRegistry"} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("foreign's Stalled message %q does not say %q", st.Message, want)
		}
	}
	if err := configMap(teamB, "foreign"); err == nil {
		t.Errorf("ConfigMap %s/foreign applied from another namespace's registry", teamB)
	}

	// A TemplateDefinition is cluster-scoped: a namespaced Registry's
	// template is not its to define a kind with.
	def := &v1alpha1.TemplateDefinition{ObjectMeta: metav1.ObjectMeta{Name: "privates.scope.example.com"},
		Spec: v1alpha1.TemplateDefinitionSpec{Group: "scope.example.com", Names: v1alpha1.DefinitionNames{Kind: "Private"}, Template: "github.com/acme/private/cm:v1"}}
	if err := c.Create(ctx, def); err != nil {
		t.Fatal(err)
	}
	var defStalled *metav1.Condition
	waitFor(t, 90*time.Second, "the TemplateDefinition Stalled", func() bool {
		got := &v1alpha1.TemplateDefinition{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(def), got); err != nil {
			return false
		}
		defStalled = apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled)
		return defStalled != nil && defStalled.Status == metav1.ConditionTrue
	})
	if defStalled.Reason != "RegistryOutOfScope" || !strings.Contains(defStalled.Message, "a TemplateDefinition (cluster-scoped) is in no namespace") {
		t.Errorf("definition Stalled %s: %s; want RegistryOutOfScope, saying a definition is in no namespace", defStalled.Reason, defStalled.Message)
	}
}

// configMapDeployer makes ServiceAccount deployer in ns, allowed to manage
// ConfigMaps: the account the controller applies instances as.
func configMapDeployer(t *testing.T, c client.Client, ns string) {
	t.Helper()
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}},
	} {
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}
