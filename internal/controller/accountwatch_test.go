package controller

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// TestAccountWatches: a watch is made as the account that needs it, once
// for every instance that needs it, sees only metadata that maps objects
// to instances, is stopped when the last instance no longer needs it, and
// is not made for an account that may not list and watch.
func TestAccountWatches(t *testing.T) {
	env := kubetest.SharedWith(t, kubetest.Options{ControllerManager: true})
	rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(rc)
	for _, sa := range []string{"watcher", "blind"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "watch"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"list", "watch"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "watch"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "watch"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "watcher", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(rc, hc)
	if err != nil {
		t.Fatal(err)
	}
	w := newAccountWatches(newClients(rc), mapper, newOwnAccess(cs), slog.New(slog.DiscardHandler))
	t.Cleanup(w.cancel)
	sink := make(chan event.GenericEvent, 64)
	w.subscribe(sink)

	// The test's own account (an admin) may read Secrets: still, they are
	// never the controller's to watch; ConfigMaps are.
	if w.ownKind(ctx, secretKind) {
		t.Error("Secrets are watched with the controller's own account")
	}
	if !w.ownKind(ctx, corev1.SchemeGroupVersion.WithKind("ConfigMap")) {
		t.Error("ConfigMaps are not watched with an admin's account")
	}

	watcher, ok := w.key("system:serviceaccount:"+ns+":watcher", ns, secretKind)
	if !ok {
		t.Fatal("no key for Secrets")
	}
	running := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.running)
	}
	// Two instances hold one watch: one informer.
	w.hold(ctx, "TemplateInstance a", "sources", []watchKey{watcher})
	w.hold(ctx, "TemplateInstance b", "drift", []watchKey{watcher})
	if n := running(); n != 1 {
		t.Fatalf("%d informers for one account, namespace and kind", n)
	}
	// An account that may not list Secrets gets no watch.
	blind, _ := w.key("system:serviceaccount:"+ns+":blind", ns, secretKind)
	w.hold(ctx, "TemplateInstance c", "drift", []watchKey{blind})
	if n := running(); n != 1 {
		t.Fatalf("%d informers; the blind account's was started", n)
	}

	// A Secret changes: the event carries what maps it to its instance,
	// not its last-applied configuration.
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s",
		Labels:      map[string]string{deploy.LabelManagedBy: deploy.ManagedBy, deploy.LabelDeployment: "a"},
		Annotations: map[string]string{deploy.AnnotationNamespace: ns, "kubectl.kubernetes.io/last-applied-configuration": `{"data":{"k":"c2VjcmV0"}}`}},
		StringData: map[string]string{"k": "secret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sink:
		o := ev.Object
		if o.GetName() != "s" || o.GetObjectKind().GroupVersionKind() != secretKind || o.GetAnnotations()[deploy.AnnotationNamespace] != ns {
			t.Errorf("event for %s %s, annotations %v", o.GetObjectKind().GroupVersionKind(), o.GetName(), o.GetAnnotations())
		}
		if _, has := o.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; has {
			t.Error("the watch keeps a Secret's last-applied configuration")
		}
		if reqs := instanceOf(ctx, o); len(reqs) != 1 || reqs[0].Namespace != ns || reqs[0].Name != "a" {
			t.Errorf("instanceOf = %v", reqs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event for a Secret created in a watched namespace")
	}

	// Past the bound of a namespace, no more watches: a namespace that
	// makes many accounts gets no more of the controller.
	w.maxPerNamespace = 1
	other, _ := w.key("system:serviceaccount:"+ns+":watcher", ns, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	w.hold(ctx, "TemplateInstance d", "drift", []watchKey{other})
	if n := running(); n != 1 {
		t.Fatalf("%d informers in a namespace bounded to 1", n)
	}
	w.release("TemplateInstance d")
	// Within the bound, the account's ConfigMaps are watched.
	w.maxPerNamespace = MaxAccountWatchesPerNamespace
	w.mu.Lock()
	delete(w.denied, other)
	w.mu.Unlock()
	w.hold(ctx, "TemplateInstance d", "drift", []watchKey{other})
	if n := running(); n != 2 {
		t.Fatalf("%d informers within the bound, want 2", n)
	}
	w.release("TemplateInstance d")

	// One holder lets go: the other keeps it; then none needs it.
	w.release("TemplateInstance a")
	if n := running(); n != 1 {
		t.Fatalf("%d informers while one instance still needs it", n)
	}
	w.hold(ctx, "TemplateInstance b", "drift", nil)
	if n := running(); n != 0 {
		t.Fatalf("%d informers after no instance needs one", n)
	}
	w.release("TemplateInstance c")
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.refs) != 0 || len(w.holders) != 0 {
		t.Errorf("left behind: refs %v, holders %v", w.refs, w.holders)
	}
}
