package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RegistryGitHub names the GitHub repository a registry is read from.
type RegistryGitHub struct {
	// Owner is the repository's owner (user or organisation).
	// +kubebuilder:validation:MinLength=1
	// +optional
	Owner string `json:"owner,omitempty"`
	// Repo is the repository's name.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Repo string `json:"repo,omitempty"`
	// Branch is the tracked branch; default the repository's default
	// branch.
	// +optional
	Branch string `json:"branch,omitempty"`
	// APIURL is the REST API base URL, for GitHub Enterprise
	// (https://HOST/api/v3/); default registryd's --github-api.
	// +optional
	APIURL string `json:"apiURL,omitempty"`
}

// SecretKeyReference names one key of a Secret: in the Registry's
// namespace, or for a ClusterRegistry in registryd's namespace.
type SecretKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// IsZero reports whether no repository is named.
func (g RegistryGitHub) IsZero() bool { return g == RegistryGitHub{} }

// LocalSecretReference names a Secret: in the Registry's namespace, or
// for a ClusterRegistry in registryd's namespace.
type LocalSecretReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// RegistryOCI names an OCI registry: templates at
// HOST/PATH/[COLLECTION/]TEMPLATE, tagged with their versions.
type RegistryOCI struct {
	// URL is oci://HOST[:PORT]/PATH.
	// +kubebuilder:validation:Pattern=`^oci://[^/?#@]+(/[a-z0-9._/-]*)?$`
	URL string `json:"url"`
	// PlainHTTP speaks plain HTTP to the registry's host (an in-cluster
	// registry).
	// +optional
	PlainHTTP bool `json:"plainHTTP,omitempty"`
	// CredentialsSecretRef names a kubernetes.io/dockerconfigjson Secret
	// (its .dockerconfigjson key) holding the registry's credential;
	// default anonymous.
	// +optional
	CredentialsSecretRef *LocalSecretReference `json:"credentialsSecretRef,omitempty"`
}

// RegistryVerify is a registry's signature policy: every version resolved
// from the registry is verified against it before it is used, and one
// that fails is not served (registryd answers 422, dm-controller stalls
// the instance with reason VerificationFailed). A Registry's Secrets are
// in its own namespace; a ClusterRegistry's in registryd's.
type RegistryVerify struct {
	// KeySecretRef names the Secret key holding a PEM public key (ECDSA
	// P-256, as openssl or cosign write it) that signs versions.
	// +optional
	KeySecretRef *SecretKeyReference `json:"keySecretRef,omitempty"`
	// Identities are the keyless signers trusted: the OIDC issuer and the
	// certificate's subject, regular expressions matched against the
	// whole value (Flux's matchOIDCIdentity). They need
	// trustedRootSecretRef.
	// +optional
	Identities []OIDCIdentity `json:"identities,omitempty"`
	// TrustedRootSecretRef names the Secret key holding the Sigstore
	// trusted_root.json keyless signatures chain to: verification is
	// offline.
	// +optional
	TrustedRootSecretRef *SecretKeyReference `json:"trustedRootSecretRef,omitempty"`
	// Required refuses versions without a signature.
	// +optional
	Required bool `json:"required,omitempty"`
}

// OIDCIdentity is a keyless signer: regular expressions of its OIDC
// issuer and certificate subject.
type OIDCIdentity struct {
	// +kubebuilder:validation:MinLength=1
	Issuer string `json:"issuer"`
	// +kubebuilder:validation:MinLength=1
	Subject string `json:"subject"`
}

// RegistrySpec says where a registry's templates are read and how.
type RegistrySpec struct {
	// GitHub is the repository the registry is read from; set it or oci.
	// +optional
	GitHub RegistryGitHub `json:"github,omitempty"`
	// OCI is the OCI registry the registry is read from; set it or
	// github. spec.prefix is required with it.
	// +optional
	OCI *RegistryOCI `json:"oci,omitempty"`
	// Mirror is an OCI registry registryd pushes every version missing
	// there to, after each refresh that changed the index: an OCI copy
	// that air-gapped clusters resolve from. A tag holding other content
	// is never overwritten.
	// +optional
	Mirror *RegistryOCI `json:"mirror,omitempty"`
	// Prefix is the reference prefix the registry answers to; default
	// github.com/OWNER/REPO.
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// DefaultCollection is the collection short references within this
	// registry resolve against.
	// +optional
	DefaultCollection string `json:"defaultCollection,omitempty"`
	// TokenSecretRef names the Secret key holding the GitHub token.
	// +optional
	TokenSecretRef *SecretKeyReference `json:"tokenSecretRef,omitempty"`
	// WebhookSecretRef names the Secret key holding the secret of the
	// repository's GitHub webhook.
	// +optional
	WebhookSecretRef *SecretKeyReference `json:"webhookSecretRef,omitempty"`
	// RefreshInterval is how often the registry is refreshed without a
	// push; default registryd's --refresh.
	// +optional
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`
	// Suspend stops refreshing: the last index stays served.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Verify is the registry's signature policy.
	// +optional
	Verify *RegistryVerify `json:"verify,omitempty"`
}

// LintCounts counts a registry's lint findings by severity.
type LintCounts struct {
	// +optional
	Errors int `json:"errors,omitempty"`
	// +optional
	Warnings int `json:"warnings,omitempty"`
}

// ExampleCounts counts a registry's versions with examples by the result
// of their test.
type ExampleCounts struct {
	// +optional
	OK int `json:"ok,omitempty"`
	// +optional
	Error int `json:"error,omitempty"`
	// +optional
	Pending int `json:"pending,omitempty"`
}

// RegistryStatus is what registryd observed of a registry; only the
// holder of registryd's Lease writes it.
type RegistryStatus struct {
	// ObservedGeneration is the generation the conditions speak of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready and Stalled, as kstatus reads them.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Prefix is the reference prefix the registry answers to: spec.prefix
	// or its default.
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Commit is the commit the served index was read at.
	// +optional
	Commit string `json:"commit,omitempty"`
	// LastSuccessTime is when the registry was last indexed successfully.
	// +optional
	LastSuccessTime *metav1.Time `json:"lastSuccessTime,omitempty"`
	// Templates and Versions count what the served index holds.
	// +optional
	Templates int `json:"templates,omitempty"`
	// +optional
	Versions int `json:"versions,omitempty"`
	// Lint counts the index's lint findings.
	// +optional
	Lint LintCounts `json:"lint,omitempty"`
	// Examples counts the versions' example tests by result.
	// +optional
	Examples ExampleCounts `json:"examples,omitempty"`
}

// Registry is a template registry that registryd serves (with
// --watch-registries); its templates are visible to that namespace and to
// clients that name the registry fully.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=reg,categories=dm
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.status.prefix`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.commit`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Registry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RegistrySpec   `json:"spec"`
	Status RegistryStatus `json:"status,omitempty"`
}

// RegistryList is a list of Registries.
// +kubebuilder:object:root=true
type RegistryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Registry `json:"items"`
}

// ClusterRegistry is a template registry visible in every namespace; its
// Secrets are in registryd's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=creg,categories=dm
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.status.prefix`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.commit`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterRegistry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RegistrySpec   `json:"spec"`
	Status RegistryStatus `json:"status,omitempty"`
}

// ClusterRegistryList is a list of ClusterRegistries.
// +kubebuilder:object:root=true
type ClusterRegistryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterRegistry `json:"items"`
}
