// Package gcp maps Google Cloud Deployment Manager resources to Config
// Connector objects.
//
// A DM configuration names Google Cloud resources by type
// (compute.v1.instance, gcp-types/storage-v1:buckets,
// sqladmin.v1beta4.instance) and gives each the body of the REST request
// that creates it as its properties. Config Connector (KCC) represents the
// same resources as Kubernetes objects (ComputeInstance, StorageBucket,
// SQLInstance) that its controller reconciles. Convert turns the expanded
// resources of one deployment into those objects: the type picks the kind,
// and the body is rewritten field by field into the kind's spec (renamed
// fields, lists of key/value, references between resources as KCC's
// {name: OBJECT} references), the resource's name becomes the object's (or
// spec.resourceID where it cannot be an object name, so that KCC adopts
// the resource DM created), zone and region become KCC's location fields
// and the project the cnrm.cloud.google.com/project-id annotation.
//
// The tables behind it are generated (zz_generated.go, by hack/gcpgen from
// kinds.yaml, KCC's CRDs and service mappings in third_party/kcc and
// Google's discovery documents in third_party/googleapis); rules.go maps
// what names alone cannot pair. The package sits between the engine and
// deploy and imports neither: it takes resources and returns objects.
package gcp

import (
	"sort"
	"strings"
)

// Resource is one DM resource after expansion: a primitive whose type is
// a Google Cloud type, with its layout path for errors.
type Resource struct {
	Name          string
	Type          string
	Properties    map[string]any
	Metadata      map[string]any // DM's metadata: dependsOn
	AccessControl map[string]any // DM's accessControl: gcpIamPolicy
	// Path is the resource's layout path (template resources down to
	// it), which errors name.
	Path []string
}

// Options are the settings of one conversion.
type Options struct {
	// Project is the Google Cloud project of resources whose properties
	// name none (properties.project); one of the two is required.
	Project string
	// DeletionPolicy is "" or "delete" (Config Connector's default: deleting
	// an object deletes the Google Cloud resource) or "abandon" (every
	// object carries cnrm.cloud.google.com/deletion-policy: abandon, and
	// deleting it leaves the resource).
	DeletionPolicy string
}

// Annotations Convert writes on objects. Every object carries
// ProjectAnnotation but those above projects (Project, Folder) and those of
// an organization (an organization's custom role, an access policy), which
// carry cnrm.cloud.google.com/organization-id (or a parent reference)
// instead: a project annotation would make them a project's.
const (
	ProjectAnnotation        = "cnrm.cloud.google.com/project-id"
	DeletionPolicyAnnotation = "cnrm.cloud.google.com/deletion-policy"
	// StateIntoSpecAnnotation (merge) is written on an object whose live
	// spec a deferred reference reads: with it, KCC writes the values
	// Google Cloud chose (an instance's internal IP) into the spec.
	StateIntoSpecAnnotation = "cnrm.cloud.google.com/state-into-spec"
)

// Deletion policies, as dm's --deletion-policy spells them.
const (
	PolicyAbandon = "abandon"
	PolicyDelete  = "delete"
)

// DeletionPolicyValue is the value of DeletionPolicyAnnotation that gives
// an object policy (PolicyAbandon or PolicyDelete): Config Connector
// reads "abandon" or "none", its default, which deletes the resource.
func DeletionPolicyValue(policy string) string {
	if policy == PolicyAbandon {
		return "abandon"
	}
	return "none"
}

// DeletionPolicyOf is the policy a Config Connector object's annotations
// give it: PolicyAbandon, or PolicyDelete (Config Connector's default,
// and what every other value means to it).
func DeletionPolicyOf(annotations map[string]string) string {
	if annotations[DeletionPolicyAnnotation] == "abandon" {
		return PolicyAbandon
	}
	return PolicyDelete
}

// Result is a converted deployment.
type Result struct {
	// Objects are the KCC objects (apiVersion, kind, metadata, spec) in
	// an order where each comes after those it references or depends on.
	Objects []map[string]any
	// Sources names, for each object, the DM resource it came from (IAM
	// objects: the resource whose accessControl or binding made them).
	Sources []string
	// Deferred are the values the objects can only take from live
	// objects, in the order of Objects.
	Deferred []Deferred
	// Warnings name the properties left out because the API that
	// Deployment Manager called ignored them too (output only fields,
	// fields the API lacks where it ignored those), one per property:
	// "resource NAME, type T: properties.X ...".
	Warnings []string

	byName map[string]*item
}

// Read is where the value of a reference $(ref.NAME.PATH) is once the
// deployment's objects exist.
type Read struct {
	// Ref is the reference as written, Resource its NAME.
	Ref      string
	Resource string
	// APIVersion, Kind and Name are the KCC object of NAME, and Path the
	// field of the live object that holds the value, in the form
	// status.observedState.address or spec.networkInterface[0].networkIp
	// (a spec field the object carries once KCC has written what Google
	// Cloud chose: the object is annotated state-into-spec: merge). Kind
	// is "" when NAME is not a Google Cloud resource of the deployment
	// (a Kubernetes object beside them): Path is then PATH as written,
	// and the caller resolves it as for any other resource.
	APIVersion, Kind, Name string
	Path                   string
}

// Deferred is a value one of the objects needs from a live object: the
// string at Field in Objects[Object] holds Ref, to be replaced by the value
// at Read.Path once that object is Ready. When the string is Ref alone the
// value replaces it keeping its type; inside a longer string it is
// formatted into it. Several Deferred may share one Field (a string holding
// several references): Template is that string as converted, the same for
// all of them.
type Deferred struct {
	Object   int
	Field    string // JSON Pointer (RFC 6901) in the object
	Template string
	Read
}

// TypeInfo is one supported DM type spelling.
type TypeInfo struct {
	// Type is the spelling (compute.v1.instance), Kind and APIVersion
	// the Config Connector kind it becomes.
	Type, APIVersion, Kind string
	// REST is the Google Cloud REST resource (v1.instances).
	REST string
	// Scope is the location the spelling implies where the kind has
	// several (zone, region or global: compute.v1.globalAddress), else "".
	Scope string
}

// Types lists every supported DM type spelling with its kind, sorted by
// spelling: dm convert --list-types.
func Types() []TypeInfo {
	out := make([]TypeInfo, 0, len(dmTypes))
	for _, t := range dmTypes {
		k := lookupKind(t.Kind)
		out = append(out, TypeInfo{Type: t.Type, APIVersion: k.APIVersion, Kind: k.Kind, REST: k.REST, Scope: t.Scope})
	}
	return out
}

// Kinds lists the Config Connector kinds Convert produces, as
// apiVersion and kind, sorted by kind: what a cluster needs CRDs for.
func Kinds() [][2]string {
	out := make([][2]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, [2]string{k.APIVersion, k.Kind})
	}
	return out
}

var (
	// compute.v1.instance, sqladmin.v1beta4.instance,
	// deploymentmanager.v2.virtual.enableService
	shortTypeRE = lazyRegexp(`^[a-z][a-z0-9]*\.(v\d+[a-z0-9]*|alpha|beta)\.[a-zA-Z][a-zA-Z0-9.]*$`)
	// gcp-types/compute-v1:instances
	gcpTypesRE = lazyRegexp(`^gcp-types/[a-z][a-z0-9]*-[a-z0-9]+:[a-zA-Z][a-zA-Z0-9.]*$`)
	// PROJECT/PROVIDER:COLLECTION (a type provider's type), PROVIDER
	// spelt anyhow (a placeholder <cluster-type> left in a sample), so
	// that it is refused rather than read as a Kubernetes object
	// and PROJECT too (YOUR_PROJECT_NAME in a sample)
	providerTypeRE = lazyRegexp(`^[A-Za-z][-A-Za-z0-9_.:]*[A-Za-z0-9]/[^/\s:]+:\S+$`)
)

// IsGCPType reports whether t is spelled as a Google Cloud DM type
// (compute.v1.instance, gcp-types/compute-v1:instances,
// sqladmin.v1beta4.instance) or a DM type provider's type
// (PROJECT/PROVIDER:COLLECTION), mapped or not: the types Convert answers
// for, with an object or an error saying why there is none.
func IsGCPType(t string) bool {
	if _, ok := lookupType(t); ok {
		return true
	}
	if _, ok := lookupUnsupported(t); ok {
		return true
	}
	return shortTypeRE().MatchString(t) || gcpTypesRE().MatchString(t) || providerTypeRE().MatchString(t)
}

// typeNames lists every supported spelling (for "did you mean").
func typeNames() []string {
	out := make([]string, len(dmTypes))
	for i, t := range dmTypes {
		out[i] = t.Type
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// layout formats a layout path for errors.
func layout(p []string) string { return strings.Join(p, " > ") }
