// Package v1alpha1 holds the controller's API, group dm.io version
// v1alpha1: TemplateInstance (a template reference with properties that
// dm-controller keeps deployed) and TemplateDefinition (a new kind whose
// instances are deployments of one template). The CRD manifests in package
// crds and zz_generated.deepcopy.go are generated from these types by
// controller-gen (make generate).
//
// +kubebuilder:object:generate=true
// +groupName=dm.io
package v1alpha1
