package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdatePolicy says which version of its template an instance follows.
// +kubebuilder:validation:Enum=Patch;Manual
type UpdatePolicy string

const (
	// UpdatePatch follows the highest patch of the requested MAJOR.MINOR
	// as the registry publishes it.
	UpdatePatch UpdatePolicy = "Patch"
	// UpdateManual keeps the resolved digest until the spec changes.
	UpdateManual UpdatePolicy = "Manual"
)

// DeletionPolicy says what deleting an instance does to what it rendered.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionDelete prunes every object the instance rendered.
	DeletionDelete DeletionPolicy = "Delete"
	// DeletionOrphan leaves them in place, with their history.
	DeletionOrphan DeletionPolicy = "Orphan"
)

// Condition types, following kstatus conventions.
const (
	// ConditionReady is True when the instance is applied and every
	// object it rendered is ready.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the controller works toward the
	// desired state (or waits for the registry or the objects).
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the controller cannot go on without a
	// human: a schema violation, a forbidden object, a missing account.
	ConditionStalled = "Stalled"
)

// TemplateInstanceSpec is what to deploy.
type TemplateInstanceSpec struct {
	// Template is a template reference (github.com/o/r/c/t:v1), or a short
	// reference resolved against the controller's default registry.
	// +kubebuilder:validation:MinLength=1
	Template string `json:"template"`
	// Properties are the template's properties: any object.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Properties *apiextensionsv1.JSON `json:"properties,omitempty"`
	// PropertiesFrom lists Secrets and ConfigMaps whose keys hold YAML
	// mappings merged under properties, in order (for secrets in
	// properties).
	// +optional
	PropertiesFrom []PropertiesSource `json:"propertiesFrom,omitempty"`
	// Env adds keys to, or overrides keys of, every template's env.
	// +optional
	Env map[string]string `json:"env,omitempty"`
	// ServiceAccountName is the account, in the instance's namespace, the
	// controller applies as (impersonation); without one the controller's
	// --default-service-account, else the instance is refused.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// UpdatePolicy is Patch (follow the highest patch release) or Manual
	// (keep the resolved digest until the spec changes).
	// +kubebuilder:default=Patch
	// +optional
	UpdatePolicy UpdatePolicy `json:"updatePolicy,omitempty"`
	// Suspend stops reconciling: nothing is applied or pruned.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// DeletionPolicy is Delete (deleting the instance prunes what it
	// rendered) or Orphan (leaves it).
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// Interval is how often the instance is reconciled without a change.
	// +kubebuilder:default="10m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// GCP holds the Google Cloud settings of the Config Connector objects
	// that the template's Google Cloud resources (Deployment Manager types
	// such as compute.v1.instance) become.
	// +optional
	GCP *GCPSpec `json:"gcp,omitempty"`
}

// GCPDeletionPolicy says what deleting a Config Connector object does to
// its Google Cloud resource.
// +kubebuilder:validation:Enum=Delete;Abandon
type GCPDeletionPolicy string

const (
	// GCPDelete deletes the resource (Config Connector's default).
	GCPDelete GCPDeletionPolicy = "Delete"
	// GCPAbandon leaves it: every object carries
	// cnrm.cloud.google.com/deletion-policy: abandon.
	GCPAbandon GCPDeletionPolicy = "Abandon"
)

// GCPSpec is the Google Cloud settings of an instance.
type GCPSpec struct {
	// Project is the Google Cloud project of the resources whose
	// properties name none; templates read it as env.project. Default:
	// spec.env.project, else the namespace's
	// cnrm.cloud.google.com/project-id annotation.
	// +optional
	Project string `json:"project,omitempty"`
	// DeletionPolicy is Delete (deleting the instance, or an object it no
	// longer renders, deletes the Google Cloud resource: Config
	// Connector's default) or Abandon (the resources stay).
	// +optional
	DeletionPolicy GCPDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// PropertiesSource names one key of a Secret or of a ConfigMap.
type PropertiesSource struct {
	// SecretRef names a Secret's key in the instance's namespace.
	// +optional
	SecretRef *KeyReference `json:"secretRef,omitempty"`
	// ConfigMapRef names a ConfigMap's key in the instance's namespace.
	// +optional
	ConfigMapRef *KeyReference `json:"configMapRef,omitempty"`
}

// KeyReference names one key of an object in the instance's namespace.
type KeyReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// ObjectReference names one object an instance rendered.
type ObjectReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// TemplateInstanceStatus is what the controller observed.
type TemplateInstanceStatus struct {
	// ObservedGeneration is the generation the conditions speak of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Reconciling and Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Resolved is the template reference with the exact version applied.
	// +optional
	Resolved string `json:"resolved,omitempty"`
	// Digest is the digest of the template version applied.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Revision is the dm history revision applied.
	// +optional
	Revision int `json:"revision,omitempty"`
	// Inventory lists every object applied.
	// +optional
	Inventory []ObjectReference `json:"inventory,omitempty"`
	// Outputs is what the template's status template made of the
	// rendered objects.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Outputs *apiextensionsv1.JSON `json:"outputs,omitempty"`
}

// TemplateInstance is a template reference with properties that the
// controller keeps deployed in its namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ti,categories=dm
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.template`
// +kubebuilder:printcolumn:name="Resolved",type=string,JSONPath=`.status.resolved`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type TemplateInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TemplateInstanceSpec   `json:"spec"`
	Status TemplateInstanceStatus `json:"status,omitempty"`
}

// TemplateInstanceList is a list of TemplateInstances.
// +kubebuilder:object:root=true
type TemplateInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TemplateInstance `json:"items"`
}

// DefinitionNames name the kind a TemplateDefinition defines.
type DefinitionNames struct {
	// Kind is the new kind, such as WebApp.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Plural is the resource name, such as webapps; default the kind in
	// lowercase with an s.
	// +optional
	Plural string `json:"plural,omitempty"`
	// Singular defaults to the kind in lowercase.
	// +optional
	Singular string `json:"singular,omitempty"`
	// +optional
	ShortNames []string `json:"shortNames,omitempty"`
}

// TemplateDefinitionSpec names a new kind and the template its instances
// deploy.
type TemplateDefinitionSpec struct {
	// Group is the new kind's API group.
	// +kubebuilder:validation:MinLength=1
	Group string `json:"group"`
	// Names name the new kind.
	Names DefinitionNames `json:"names"`
	// Version is the new kind's API version.
	// +kubebuilder:default=v1alpha1
	// +optional
	Version string `json:"version,omitempty"`
	// Template is the template reference every instance deploys; an
	// instance's spec is its properties.
	// +kubebuilder:validation:MinLength=1
	Template string `json:"template"`
	// StatusTemplate is a status template given inline, used instead of
	// the one the template version ships.
	// +optional
	StatusTemplate string `json:"statusTemplate,omitempty"`
	// StatusTemplateLanguage is the language of StatusTemplate; default
	// jinja.
	// +kubebuilder:validation:Enum=gotmpl;jinja
	// +optional
	StatusTemplateLanguage string `json:"statusTemplateLanguage,omitempty"`
	// GCP holds the Google Cloud settings of every instance's Config
	// Connector objects, as a TemplateInstance's spec.gcp does: an
	// instance's spec holds only the template's properties. Without a
	// project, each instance's namespace's
	// cnrm.cloud.google.com/project-id annotation names it.
	// +optional
	GCP *GCPSpec `json:"gcp,omitempty"`
}

// TemplateDefinitionStatus is what the controller observed.
type TemplateDefinitionStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Resolved is the template reference with the exact version whose
	// schema the CRD has.
	// +optional
	Resolved string `json:"resolved,omitempty"`
	// Digest is the digest of that version.
	// +optional
	Digest string `json:"digest,omitempty"`
	// CRD is the name of the CustomResourceDefinition the controller
	// made for the kind.
	// +optional
	CRD string `json:"crd,omitempty"`
	// Instances counts the live instances of the kind.
	// +optional
	Instances int `json:"instances,omitempty"`
}

// TemplateDefinition defines a new kind whose instances are deployments
// of one template.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tdef,categories=dm
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.names.kind`
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.template`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TemplateDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TemplateDefinitionSpec   `json:"spec"`
	Status TemplateDefinitionStatus `json:"status,omitempty"`
}

// TemplateDefinitionList is a list of TemplateDefinitions.
// +kubebuilder:object:root=true
type TemplateDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TemplateDefinition `json:"items"`
}
