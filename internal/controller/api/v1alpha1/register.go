package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "dm.io", Version: "v1alpha1"}

// AddToScheme adds the API's kinds to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&TemplateInstance{}, &TemplateInstanceList{},
		&TemplateDefinition{}, &TemplateDefinitionList{},
		&Registry{}, &RegistryList{},
		&ClusterRegistry{}, &ClusterRegistryList{},
		&TemplateRolloutPolicy{}, &TemplateRolloutPolicyList{},
		&RolloutPolicy{}, &RolloutPolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
