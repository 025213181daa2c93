package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/instance"
)

// definedKinds starts one controller per kind a definition defines, once
// per process: controller-runtime cannot stop a controller, so a kind
// whose definition is gone keeps its controller, which then finds no
// definition and does nothing.
type definedKinds struct {
	mgr ctrl.Manager

	mu sync.Mutex
	// started holds each started kind's channel of registry changes.
	started map[schema.GroupVersionKind]chan event.GenericEvent
}

// events is the channel that reconciles instances of gvk; nil when the
// kind is not reconciled.
func (k *definedKinds) events(gvk schema.GroupVersionKind) chan event.GenericEvent {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started[gvk]
}

// start reconciles the instances of gvk with base's code, unless that is
// already so.
func (k *definedKinds) start(gvk schema.GroupVersionKind, base *InstanceReconciler) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started[gvk] != nil {
		return nil
	}
	events := make(chan event.GenericEvent, 64)
	drifted := make(chan event.GenericEvent, 1024)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	kr := &kindReconciler{base: base, gvk: gvk, client: k.mgr.GetClient()}
	c, err := ctrl.NewControllerManagedBy(k.mgr).
		Named(strings.ToLower(gvk.Kind)+"."+gvk.Group).
		// Status writes (the controller's own) do not reconcile again.
		For(u, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{})).
		// What the impersonated watches see of what its instances rendered.
		WatchesRawSource(source.Channel(drifted, handler.EnqueueRequestsFromMapFunc(instanceOf))).
		WithOptions(controller.Options{MaxConcurrentReconciles: base.opts.Concurrency, SkipNameValidation: ptr(true)}).
		Build(kr)
	if err != nil {
		return fmt.Errorf("reconciling kind %s: %w", gvk, err)
	}
	// Drift of what its instances rendered maps back to them through
	// this kind's own controller.
	kr.drift = &driftWatcher{ctrl: c, cache: k.mgr.GetCache(), accounts: base.accounts, log: base.log, watched: map[schema.GroupVersionKind]bool{}}
	if base.accounts != nil {
		base.accounts.subscribe(drifted)
	}
	k.started[gvk] = events
	return nil
}

// kindReconciler reconciles the instances of one defined kind exactly as
// TemplateInstances: each is seen as a TemplateInstance whose properties
// are its spec and whose template is its definition's.
type kindReconciler struct {
	base   *InstanceReconciler
	gvk    schema.GroupVersionKind
	client client.Client
	drift  *driftWatcher
}

// Reconcile reconciles one instance of the kind.
func (k *kindReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	def, err := k.definition(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if def == nil {
		// The definition's status naming its CRD may not have reached
		// the cache yet; once the definition is gone, so are the CRD
		// and the instances, and nothing comes back here.
		return ctrl.Result{RequeueAfter: definitionRequeue}, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.gvk)
	if err := k.client.Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) && k.base.accounts != nil {
			// Gone: what it watched is no longer needed for it.
			k.base.accounts.release(k.gvk.Kind + " " + req.Namespace + "/" + req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ti, err := asInstance(u, def)
	if err != nil {
		return ctrl.Result{}, err
	}
	r := *k.base
	r.kind, r.drift = &definedKind{client: k.client, def: def, obj: u}, k.drift
	return r.reconcile(ctx, ti)
}

// definition returns the definition of the kind; nil when there is none
// (it was deleted: its instances are left alone).
func (k *kindReconciler) definition(ctx context.Context) (*v1alpha1.TemplateDefinition, error) {
	var l v1alpha1.TemplateDefinitionList
	if err := k.client.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing TemplateDefinitions: %w", err)
	}
	for i := range l.Items {
		// Another definition of the same kind is Stalled (Conflict)
		// and has no CRD.
		if def := &l.Items[i]; definedGVK(def) == k.gvk && def.Status.CRD == crdName(def) {
			return &l.Items[i], nil
		}
	}
	return nil, nil
}

// statusFields are the status fields the controller writes on an instance
// of a defined kind (instance.StatusFields).
var statusFields = instance.StatusFields

// asInstance sees u, an instance of def's kind, as a TemplateInstance.
func asInstance(u *unstructured.Unstructured, def *v1alpha1.TemplateDefinition) (*v1alpha1.TemplateInstance, error) {
	return instance.AsInstance(u, def)
}

// definedKind is an instance of a kind a definition defines.
type definedKind struct {
	client client.Client
	def    *v1alpha1.TemplateDefinition
	obj    *unstructured.Unstructured
}

func (k *definedKind) controllerName(ti *v1alpha1.TemplateInstance) string {
	return k.obj.GetKind() + " " + ti.Namespace + "/" + ti.Name
}

func (k *definedKind) setFinalizer(ctx context.Context, ti *v1alpha1.TemplateInstance, add bool) error {
	patch := client.MergeFrom(k.obj.DeepCopy())
	if add {
		controllerutil.AddFinalizer(k.obj, Finalizer)
	} else {
		controllerutil.RemoveFinalizer(k.obj, Finalizer)
	}
	if err := k.client.Patch(ctx, k.obj, patch); err != nil {
		return err
	}
	ti.Finalizers, ti.ResourceVersion = k.obj.GetFinalizers(), k.obj.GetResourceVersion()
	return nil
}

// writeStatus writes ti.Status with the outputs as top-level fields.
func (k *definedKind) writeStatus(ctx context.Context, ti *v1alpha1.TemplateInstance) error {
	st, err := statusObject(&ti.Status)
	if err != nil {
		return err
	}
	// ti.Status may differ from what was read and still write the same
	// status: an output named like a status field is dropped.
	was, err1 := json.Marshal(k.obj.Object["status"])
	now, err2 := json.Marshal(st)
	if err1 == nil && err2 == nil && string(was) == string(now) {
		return nil
	}
	k.obj.Object["status"] = st
	return k.client.Status().Update(ctx, k.obj)
}

// statusObject is the status of an instance of a defined kind: st with
// its outputs as top-level fields. asInstance reads it back as st, so that
// an idle resync finds the status unchanged and writes nothing.
func statusObject(st *v1alpha1.TemplateInstanceStatus) (map[string]any, error) {
	m, err := toMap(st)
	if err != nil {
		return nil, err
	}
	delete(m, "outputs")
	if st.Outputs != nil {
		var out map[string]any
		if err := json.Unmarshal(st.Outputs.Raw, &out); err != nil {
			return nil, err
		}
		for key, v := range out {
			if !slices.Contains(statusFields, key) {
				m[key] = v
			}
		}
	}
	return m, nil
}

func (k *definedKind) instance(*v1alpha1.TemplateInstance) (map[string]any, error) {
	return k.obj.Object, nil
}

// inlineStatus is the definition's spec.statusTemplate, named
// DEFINITION.status.jinja (or .gotmpl) in errors.
func (k *definedKind) inlineStatus(*v1alpha1.TemplateInstance) (string, []byte, error) {
	if k.def.Spec.StatusTemplate == "" {
		return "", nil, nil
	}
	lang := k.def.Spec.StatusTemplateLanguage
	if lang == "" {
		lang = "jinja"
	}
	return k.def.Name + ".status." + lang, []byte(k.def.Spec.StatusTemplate), nil
}
