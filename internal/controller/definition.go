package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/instance"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	dmschema "github.com/dmhq/dm/internal/expand/schema"
)

// errGroupNotAllowed marks a TemplateDefinition of a group the controller
// was not given (Options.DefinitionGroups).
var errGroupNotAllowed = errors.New("group not allowed")

// DefinitionFinalizer holds a TemplateDefinition while instances of its
// kind remain; once none does, the kind's CRD is deleted and the
// definition released.
const DefinitionFinalizer = "dm.io/instances"

// LabelDefinition, on a CRD, names the TemplateDefinition that made it; a
// CRD without it (or with another name) is never changed or deleted.
const LabelDefinition = "dm.io/definition"

// AnnotationServiceAccount, on an instance of a defined kind, names the
// ServiceAccount (in its namespace) the controller applies it as: the
// instance's spec is all properties, so the account cannot be a spec
// field. Without it, --default-service-account.
const AnnotationServiceAccount = instance.AnnotationServiceAccount

// TemplateDescriber describes a template version: its exact version,
// digest and schema (an api.Service over the controller's registries, or
// a registryd client).
type TemplateDescriber interface {
	Template(ctx context.Context, ref, registry string) (*api.TemplateVersion, error)
}

// definitionRequeue is how soon a definition is looked at again while its
// CRD is not yet established or instances hold its deletion.
const definitionRequeue = 2 * time.Second

// DefinitionReconciler reconciles TemplateDefinitions: it makes the CRD of
// the kind each defines and starts reconciling the kind's instances.
type DefinitionReconciler struct {
	client client.Client
	// crds reads CRDs (watched metadata only: caching whole CRDs would
	// cost the controller memory) and counts instances, from the
	// apiserver.
	crds     client.Reader
	opts     Options
	log      *slog.Logger
	events   record.EventRecorder
	kinds    *definedKinds
	instance *InstanceReconciler
}

// setupDefinitions adds the TemplateDefinition reconciler to mgr; the
// instances of the kinds it defines are reconciled by r's code. Registry
// changes reported to n (nil: none) reconcile the definitions, and the
// instances of their kinds, that resolve through the registry.
func setupDefinitions(mgr ctrl.Manager, r *InstanceReconciler, n *Notifier) (*definedKinds, error) {
	d := &DefinitionReconciler{
		client:   mgr.GetClient(),
		crds:     mgr.GetAPIReader(),
		opts:     r.opts,
		log:      r.log,
		events:   mgr.GetEventRecorderFor(FieldManager),
		kinds:    &definedKinds{mgr: mgr, started: map[schema.GroupVersionKind]chan event.GenericEvent{}},
		instance: r,
	}
	changed := make(chan event.GenericEvent, 64)
	if n != nil {
		err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			d.registryChanges(ctx, n.defs, changed)
			return nil
		}))
		if err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("templatedefinition").
		For(&v1alpha1.TemplateDefinition{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A CRD changed or deleted by someone else is made again.
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(definitionOf), builder.OnlyMetadata).
		WatchesRawSource(source.Channel(changed, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{SkipNameValidation: ptr(true)}).
		Complete(d)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return d.kinds, nil
}

// registryChanges turns registry changes into events for the definitions
// that resolve through the registry (a new patch may change the schema),
// and for the instances of their kinds (a new patch to roll out), until
// ctx ends.
func (d *DefinitionReconciler) registryChanges(ctx context.Context, in <-chan string, out chan<- event.GenericEvent) {
	send := func(ch chan<- event.GenericEvent, o client.Object) bool {
		select {
		case ch <- event.GenericEvent{Object: o}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		var registry string
		select {
		case <-ctx.Done():
			return
		case registry = <-in:
		}
		var l v1alpha1.TemplateDefinitionList
		if err := d.client.List(ctx, &l); err != nil {
			d.log.Warn("listing definitions after a registry change", "registry", registry, "err", err)
			continue
		}
		for i := range l.Items {
			def := &l.Items[i]
			// A namespace's registry serves no definition.
			if ns, _ := splitRegistryKey(registry); ns != "" || def.Status.Resolved != "" && !strings.HasPrefix(def.Status.Resolved, registry+"/") {
				continue
			}
			if !send(out, def) {
				return
			}
			gvk := definedGVK(def)
			ch := d.kinds.events(gvk)
			if ch == nil {
				continue
			}
			il := &unstructured.UnstructuredList{}
			il.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := d.client.List(ctx, il); err != nil {
				d.log.Warn("listing instances after a registry change", "kind", gvk.String(), "err", err)
				continue
			}
			for j := range il.Items {
				if !send(ch, &il.Items[j]) {
					return
				}
			}
		}
	}
}

// definitionOf maps a CRD to the definition that made it.
func definitionOf(_ context.Context, o client.Object) []reconcile.Request {
	if name := o.GetLabels()[LabelDefinition]; name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	return nil
}

// Reconcile makes the definition's CRD, from the schema of the template
// version its reference resolves to, and writes the definition's status.
func (d *DefinitionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	def := &v1alpha1.TemplateDefinition{}
	if err := d.client.Get(ctx, req.NamespacedName, def); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := def.Status.DeepCopy()
	def.Status.ObservedGeneration = def.Generation
	if !def.DeletionTimestamp.IsZero() {
		return d.finalize(ctx, def, before)
	}
	if !controllerutil.ContainsFinalizer(def, DefinitionFinalizer) {
		patch := client.MergeFrom(def.DeepCopy())
		controllerutil.AddFinalizer(def, DefinitionFinalizer)
		if err := d.client.Patch(ctx, def, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	established, err := d.define(ctx, def)
	if err != nil {
		msg := truncate(err.Error(), maxMessage)
		if stalled(err) {
			setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason(err), msg)
			meta.RemoveStatusCondition(&def.Status.Conditions, v1alpha1.ConditionReconciling)
		} else {
			meta.RemoveStatusCondition(&def.Status.Conditions, v1alpha1.ConditionStalled)
			setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Retrying", msg+"; retrying")
		}
		setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionReady, metav1.ConditionFalse, reason(err), msg)
		d.log.Info("definition failed", "definition", def.Name, "err", err)
		return ctrl.Result{}, errors.Join(err, d.writeStatus(ctx, def, before))
	}
	meta.RemoveStatusCondition(&def.Status.Conditions, v1alpha1.ConditionStalled)
	if !established {
		msg := "waiting for CustomResourceDefinition " + crdName(def) + " to be established"
		setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Progressing", msg)
		setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionReady, metav1.ConditionFalse, "Progressing", msg)
		return ctrl.Result{RequeueAfter: definitionRequeue}, d.writeStatus(ctx, def, before)
	}
	gvk := definedGVK(def)
	if err := d.kinds.start(gvk, d.instance); err != nil {
		return ctrl.Result{}, errors.Join(err, d.writeStatus(ctx, def, before))
	}
	if n, err := d.count(ctx, gvk); err == nil {
		def.Status.Instances = n
	}
	meta.RemoveStatusCondition(&def.Status.Conditions, v1alpha1.ConditionReconciling)
	setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded",
		fmt.Sprintf("kind %s (%s) served with the schema of %s", gvk.Kind, gvk.GroupVersion(), def.Status.Resolved))
	// The template is resolved anew at the interval: a new patch with a
	// changed schema updates the CRD.
	return ctrl.Result{RequeueAfter: DefaultInterval}, d.writeStatus(ctx, def, before)
}

// definedGVK is the kind a definition defines.
func definedGVK(def *v1alpha1.TemplateDefinition) schema.GroupVersionKind {
	return instance.DefinedGVK(def)
}

// crdName is the name of the CRD of the kind a definition defines.
func crdName(def *v1alpha1.TemplateDefinition) string { return instance.CRDName(def) }

func plural(def *v1alpha1.TemplateDefinition) string { return instance.Plural(def) }

// define resolves the definition's template, applies its kind's CRD and
// tells whether the apiserver serves it yet.
func (d *DefinitionReconciler) define(ctx context.Context, def *v1alpha1.TemplateDefinition) (bool, error) {
	if d.opts.Templates == nil {
		return false, fmt.Errorf("this controller cannot read templates' schemas: %w", derrors.InvalidArgument)
	}
	if lang := def.Spec.StatusTemplateLanguage; lang != "" {
		if l, ok := engine.Default().Lookup(lang); !ok || l.Status.Extension != ".status."+lang {
			return false, fmt.Errorf("spec.statusTemplateLanguage %q: want one of %s: %w", lang, statusLanguageNames(), derrors.InvalidArgument)
		}
	}
	// A definition is cluster-scoped: its template comes from a registry
	// visible everywhere (the request names no namespace, so registryd
	// answers a namespace's registries as if they did not exist).
	if !slices.Contains(d.opts.DefinitionGroups, def.Spec.Group) {
		// No CRD of a group the cluster's administrator did not give dm:
		// a definition could otherwise take over another product's
		// kinds (servicemonitors.monitoring.coreos.com).
		groups := "none: give dm-controller --definition-groups"
		if len(d.opts.DefinitionGroups) > 0 {
			groups = strings.Join(d.opts.DefinitionGroups, ", ")
		}
		return false, fmt.Errorf("spec.group %s is not among the groups this controller defines kinds of (%s): %w", def.Spec.Group, groups, errGroupNotAllowed)
	}
	tv, err := d.opts.Templates.Template(api.ForNamespace(ctx, ""), def.Spec.Template, d.opts.DefaultRegistry)
	if err != nil {
		return false, fmt.Errorf("spec.template %s: %w", def.Spec.Template, err)
	}
	if tv.SchemaError != "" {
		return false, fmt.Errorf("spec.template %s: %s: %w", tv.Resolved, tv.SchemaError, derrors.InvalidArgument)
	}
	var sc *dmschema.Schema
	if tv.SchemaContent != "" {
		if sc, err = dmschema.Parse([]byte(tv.SchemaContent), tv.Schema); err != nil {
			return false, fmt.Errorf("spec.template %s: %w", tv.Resolved, err)
		}
	}
	def.Status.Resolved, def.Status.Digest = tv.Resolved, tv.Digest
	// Set once the CRD is this definition's: the kind's controller
	// follows only the definition that made its CRD.
	def.Status.CRD = ""

	existing := &apiextensionsv1.CustomResourceDefinition{}
	err = d.crds.Get(ctx, client.ObjectKey{Name: crdName(def)}, existing)
	switch {
	case err == nil && existing.Labels[LabelDefinition] != def.Name:
		return false, fmt.Errorf("CustomResourceDefinition %s exists and was not made by this definition: %w", crdName(def), derrors.Conflict)
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading CustomResourceDefinition %s: %w", crdName(def), err)
	}
	crd := definitionCRD(def, sc)
	if err := d.client.Patch(ctx, crd, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying CustomResourceDefinition %s: %w", crd.Name, err)
	}
	def.Status.CRD = crd.Name
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
			return false, fmt.Errorf("CustomResourceDefinition %s: %s: %w", crd.Name, c.Message, derrors.Conflict)
		}
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true, nil
		}
	}
	return false, nil
}

// definitionCRD is the CRD of the kind def defines, spec from the
// template's schema sc (nil: none).
func definitionCRD(def *v1alpha1.TemplateDefinition, sc *dmschema.Schema) *apiextensionsv1.CustomResourceDefinition {
	gvk := definedGVK(def)
	singular := def.Spec.Names.Singular
	if singular == "" {
		singular = strings.ToLower(gvk.Kind)
	}
	spec := specSchema(sc)
	top := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": spec,
			// Conditions and the rest beside the status template's
			// outputs, whatever fields they are.
			"status": preserve(apiextensionsv1.JSONSchemaProps{Type: "object"}),
		},
	}
	if len(spec.Required) > 0 {
		top.Required = []string{"spec"}
	}
	ready := `.status.conditions[?(@.type=="Ready")]`
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   crdName(def),
			Labels: map[string]string{LabelDefinition: def.Name},
			// The garbage collector deletes the CRD with its definition:
			// the controller needs no right to delete CRDs.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "TemplateDefinition",
				Name: def.Name, UID: def.UID, Controller: ptr(true)}},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: gvk.Kind, ListKind: gvk.Kind + "List", Plural: plural(def), Singular: singular,
				ShortNames: def.Spec.Names.ShortNames, Categories: []string{"dm"},
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvk.Version, Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &top},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Resolved", Type: "string", JSONPath: ".status.resolved"},
					{Name: "Ready", Type: "string", JSONPath: ready + ".status"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
					{Name: "Message", Type: "string", Priority: 1, JSONPath: ready + ".message"},
				},
			}},
		},
	}
}

// count counts the instances of kind gvk, those being deleted included;
// 0 when the kind is not served. It asks the apiserver, their metadata
// only: a cached list of a kind no informer watches yet would start one
// and wait for it to sync, which never happens once the CRD is going, and
// the one worker of every definition would wait with it.
func (d *DefinitionReconciler) count(ctx context.Context, gvk schema.GroupVersionKind) (int, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := d.crds.List(ctx, l)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return len(l.Items), nil
}

// finalize holds a definition being deleted while instances of its kind
// remain (deleting the CRD would delete them without pruning what they
// rendered); once none does, it releases the definition, and the garbage
// collector deletes the CRD the definition owns.
func (d *DefinitionReconciler) finalize(ctx context.Context, def *v1alpha1.TemplateDefinition, before *v1alpha1.TemplateDefinitionStatus) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(def, DefinitionFinalizer) {
		return ctrl.Result{}, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := d.crds.Get(ctx, client.ObjectKey{Name: crdName(def)}, crd)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading CustomResourceDefinition %s: %w", crdName(def), err)
	}
	// A CRD this definition did not make (a conflict) is not its to
	// delete, and its objects are not its instances.
	if err == nil && crd.Labels[LabelDefinition] == def.Name {
		gvk := definedGVK(def)
		n, err := d.count(ctx, gvk)
		if err != nil {
			return ctrl.Result{}, err
		}
		if n > 0 {
			msg := fmt.Sprintf("deletion waits: %d instances of %s remain; delete them first", n, gvk.Kind)
			if n == 1 {
				msg = fmt.Sprintf("deletion waits: 1 instance of %s remains; delete it first", gvk.Kind)
			}
			def.Status.Instances = n
			setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "InstancesRemain", msg)
			setConditionOn(&def.Status.Conditions, def.Generation, v1alpha1.ConditionReady, metav1.ConditionFalse, "InstancesRemain", msg)
			if !equality.Semantic.DeepEqual(before, &def.Status) {
				d.events.Event(def, "Warning", "InstancesRemain", msg)
			}
			return ctrl.Result{RequeueAfter: definitionRequeue}, d.writeStatus(ctx, def, before)
		}
	}
	d.log.Info("definition released; the garbage collector deletes its CRD", "definition", def.Name, "crd", crdName(def))
	patch := client.MergeFrom(def.DeepCopy())
	controllerutil.RemoveFinalizer(def, DefinitionFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(d.client.Patch(ctx, def, patch))
}

// writeStatus writes the definition's status if it changed.
func (d *DefinitionReconciler) writeStatus(ctx context.Context, def *v1alpha1.TemplateDefinition, before *v1alpha1.TemplateDefinitionStatus) error {
	if equality.Semantic.DeepEqual(before, &def.Status) {
		return nil
	}
	if err := d.client.Status().Update(ctx, def); err != nil {
		return fmt.Errorf("writing the status of TemplateDefinition %s: %w", def.Name, err)
	}
	return nil
}

// setConditionOn sets one condition of a list.
func setConditionOn(conds *[]metav1.Condition, gen int64, typ string, st metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen})
}
