package controller

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/crds"
)

// crdTimeout bounds the wait for the CRDs to be established.
const crdTimeout = time.Minute

// InstallCRDs creates or updates the controller's CRDs with server-side
// apply and waits until the apiserver serves them: established, and in
// its discovery, which the manager's REST mapper reads next (an index on
// a kind discovery does not list yet fails the start).
func InstallCRDs(ctx context.Context, c client.Client) error {
	all, err := crds.Controller()
	if err != nil {
		return err
	}
	for _, crd := range all {
		crd.TypeMeta.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.TypeMeta.Kind = "CustomResourceDefinition"
		if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, want := range all {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdTimeout, true, func(ctx context.Context) (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, crd); err != nil {
				return false, nil
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					// c's mapper asks discovery again on a miss.
					gk := schema.GroupKind{Group: want.Spec.Group, Kind: want.Spec.Names.Kind}
					_, err := c.RESTMapper().RESTMapping(gk, want.Spec.Versions[0].Name)
					return err == nil, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established and discovered after %v: %w", want.Name, crdTimeout, err)
		}
	}
	return nil
}
