package controller

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/crds"
)

// crdTimeout bounds the wait for the CRDs to be established.
const crdTimeout = time.Minute

// InstallCRDs creates or updates the controller's CRDs with server-side
// apply and waits until the apiserver serves them.
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
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established after %v: %w", want.Name, crdTimeout, err)
		}
	}
	return nil
}
