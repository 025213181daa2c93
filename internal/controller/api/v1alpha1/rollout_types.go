package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FailurePolicy says what a failed wave does to its instances.
// +kubebuilder:validation:Enum=Rollback;Halt
type FailurePolicy string

const (
	// FailureRollback moves the failed wave's instances back to the
	// patch they ran before.
	FailureRollback FailurePolicy = "Rollback"
	// FailureHalt leaves them on the failed patch and stops the roll-out.
	FailureHalt FailurePolicy = "Halt"
)

// WaveState is where a wave of a roll-out is.
// +kubebuilder:validation:Enum=Pending;Progressing;Soaking;Promoted;Failed;RolledBack;Halted
type WaveState string

const (
	// WavePending waits for the waves before it.
	WavePending WaveState = "Pending"
	// WaveProgressing: its instances take the patch; not all are Ready.
	WaveProgressing WaveState = "Progressing"
	// WaveSoaking: every instance is Ready; the soak time runs.
	WaveSoaking WaveState = "Soaking"
	// WavePromoted: soaked; the next wave goes.
	WavePromoted WaveState = "Promoted"
	// WaveFailed: an instance failed or the deadline passed.
	WaveFailed WaveState = "Failed"
	// WaveRolledBack: failed, and its instances run the patch before.
	WaveRolledBack WaveState = "RolledBack"
	// WaveHalted: failed (failurePolicy Halt), or aborted before it went.
	WaveHalted WaveState = "Halted"
)

// Condition types of a roll-out policy besides Ready and Stalled.
const (
	// ConditionProgressing is True while a patch rolls out.
	ConditionProgressing = "Progressing"
)

// Wave is one step of a roll-out: the instances it moves and how long
// they must be Ready before the next wave goes.
type Wave struct {
	// Name names the wave in the status, events and conditions.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Selector selects, by their labels, the instances of the wave;
	// with percent, a share of those.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Percent (0-100) is the share of the instances the policy covers
	// that the wave takes (of those its selector selects, with one),
	// chosen by a stable hash of namespace/name. Without a selector and a
	// percent the wave takes every instance no earlier wave took.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`
	// SoakTime is how long every instance of the wave must be Ready
	// before the next wave goes.
	// +optional
	SoakTime metav1.Duration `json:"soakTime,omitempty"`
	// Deadline bounds the time from the wave's start until every
	// instance is Ready; past it the wave fails. Zero: no deadline.
	// +optional
	Deadline metav1.Duration `json:"deadline,omitempty"`
}

// RolloutPolicySpec is how the patches of one template MAJOR.MINOR reach
// the instances: in waves.
type RolloutPolicySpec struct {
	// Template is a template reference without its patch
	// (github.com/acme/templates/web:v1.2), or a short one resolved
	// against the controller's default registry.
	// +kubebuilder:validation:MinLength=1
	Template string `json:"template"`
	// Waves are the roll-out's steps, in order. An instance no wave
	// selects is in the last wave.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Waves []Wave `json:"waves"`
	// FailurePolicy is Rollback (a failed wave's instances go back to the
	// patch before) or Halt (they stay; the roll-out stops).
	// +kubebuilder:default=Rollback
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	// Paused stops promotion: the current wave's instances keep the
	// patch, no further wave goes.
	// +kubebuilder:default=false
	// +optional
	Paused bool `json:"paused"`
}

// WaveStatus is one wave of the roll-out in progress.
type WaveStatus struct {
	Name string `json:"name"`
	// +optional
	State WaveState `json:"state,omitempty"`
	// Instances are the wave's instances, NAMESPACE/NAME, sorted (an
	// instance of a TemplateDefinition's kind too: its deployment has
	// that namespace and name, as a TemplateInstance's does).
	// +optional
	Instances []string `json:"instances,omitempty"`
	// StartedAt is when the wave's instances were moved.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// ReadyAt is when every instance of the wave was first Ready: the
	// soak time counts from it.
	// +optional
	ReadyAt *metav1.Time `json:"readyAt,omitempty"`
	// Message says why a wave failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutPolicyStatus is the roll-out's state, all of it: a restarted or
// failed-over controller resumes from it.
type RolloutPolicyStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Version is the patch rolling out (or rolled out last), such as
	// v1.2.5.
	// +optional
	Version string `json:"version,omitempty"`
	// VersionDigest is Version's digest: an instance is pinned to it.
	// +optional
	VersionDigest string `json:"versionDigest,omitempty"`
	// Previous is the patch the fleet ran before Version: what a failed
	// wave rolls back to, and what later waves keep meanwhile.
	// +optional
	Previous string `json:"previous,omitempty"`
	// PreviousDigest is Previous's digest.
	// +optional
	PreviousDigest string `json:"previousDigest,omitempty"`
	// Waves are the waves of Version's roll-out.
	// +optional
	Waves []WaveStatus `json:"waves,omitempty"`
	// WaveStates is the waves' states in order, comma-separated
	// (Promoted,Soaking,Pending): what kubectl get shows.
	// +optional
	WaveStates string `json:"waveStates,omitempty"`
	// FailedVersions are the patches that failed under this policy: no
	// instance it covers takes them.
	// +optional
	FailedVersions []string `json:"failedVersions,omitempty"`
	// Aborted is True when a person aborted Version's roll-out: every
	// moved instance is back on Previous.
	// +optional
	Aborted bool `json:"aborted,omitempty"`
	// Conditions are Ready, Progressing and Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TemplateRolloutPolicy rolls the patches of one template MAJOR.MINOR out
// to the instances of every namespace, in waves.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=trp,categories=dm
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.template`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Waves",type=string,JSONPath=`.status.waveStates`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Failed",type=string,priority=1,JSONPath=`.status.failedVersions`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type TemplateRolloutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutPolicySpec   `json:"spec"`
	Status RolloutPolicyStatus `json:"status,omitempty"`
}

// TemplateRolloutPolicyList is a list of TemplateRolloutPolicies.
// +kubebuilder:object:root=true
type TemplateRolloutPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TemplateRolloutPolicy `json:"items"`
}

// RolloutPolicy rolls the patches of one template MAJOR.MINOR out to the
// instances of its namespace, in waves, in place of a
// TemplateRolloutPolicy for the same template.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rp,categories=dm
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.template`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Waves",type=string,JSONPath=`.status.waveStates`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Failed",type=string,priority=1,JSONPath=`.status.failedVersions`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type RolloutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutPolicySpec   `json:"spec"`
	Status RolloutPolicyStatus `json:"status,omitempty"`
}

// RolloutPolicyList is a list of RolloutPolicies.
// +kubebuilder:object:root=true
type RolloutPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutPolicy `json:"items"`
}
