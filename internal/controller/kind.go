package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// instanceKind is what differs between a TemplateInstance and an object
// of a kind a TemplateDefinition defines, which the reconciler sees as a
// TemplateInstance: where its finalizer and status are written, what its
// revisions record as their controller, what a status template sees as
// `instance`, and a status template given inline.
type instanceKind interface {
	// controllerName is what a revision records as its controller.
	controllerName(ti *v1alpha1.TemplateInstance) string
	// setFinalizer adds (or removes) Finalizer on the object.
	setFinalizer(ctx context.Context, ti *v1alpha1.TemplateInstance, add bool) error
	// writeStatus writes ti.Status to the object.
	writeStatus(ctx context.Context, ti *v1alpha1.TemplateInstance) error
	// instance is the object as a status template sees it.
	instance(ti *v1alpha1.TemplateInstance) (map[string]any, error)
	// inlineStatus is a status template given by the kind, named as a
	// file whose ending says its language; "" for none.
	inlineStatus(ti *v1alpha1.TemplateInstance) (string, []byte, error)
}

// templateInstances is the TemplateInstance kind.
type templateInstances struct{ client client.Client }

func (templateInstances) controllerName(ti *v1alpha1.TemplateInstance) string {
	return "TemplateInstance " + ti.Namespace + "/" + ti.Name
}

func (k templateInstances) setFinalizer(ctx context.Context, ti *v1alpha1.TemplateInstance, add bool) error {
	patch := client.MergeFrom(ti.DeepCopy())
	if add {
		controllerutil.AddFinalizer(ti, Finalizer)
	} else {
		controllerutil.RemoveFinalizer(ti, Finalizer)
	}
	return k.client.Patch(ctx, ti, patch)
}

func (k templateInstances) writeStatus(ctx context.Context, ti *v1alpha1.TemplateInstance) error {
	return k.client.Status().Update(ctx, ti)
}

func (templateInstances) instance(ti *v1alpha1.TemplateInstance) (map[string]any, error) {
	return toMap(ti)
}

func (templateInstances) inlineStatus(*v1alpha1.TemplateInstance) (string, []byte, error) {
	return "", nil, nil
}
