// Package api defines registryd's JSON API: the wire types, an in-process
// Service that answers the API from a resolver (registryd serves it over
// HTTP; dm calls it directly when no --server is given), and a Client that
// answers the same calls from a running registryd.
//
// The package imports the standard library, dm's registry packages and the
// processing engine, but no HTTP router and no metrics, so that the dm
// binary stays quick to start.
//
// Routes (all GET unless noted; JSON unless noted; errors are
// {"error": "..."} with the status of derrors.HTTPStatus):
//
//	/v1/registries                          RegistryList
//	/v1/registries/{name}                   Registry with its findings; name has slashes (github.com/o/r)
//	POST /v1/registries/{name}/refresh      Registry after the refresh; needs Authorization: Bearer <admin token>
//	/v1/collections?registry=               CollectionList
//	/v1/templates?registry=&collection=&q=  TemplateList (q: a regular expression over "collection/name")
//	/v1/versions?ref=&registry=             Template: one template and its versions (ref without version)
//	/v1/template?ref=&registry=             TemplateVersion: one version with schema, example and findings
//	/v1/file?ref=&path=&registry=           raw content of one file of a version, ETag = its blob SHA
//	/v1/resolve?ref=&registry=              Resolution
//	/v1/search?q=&registry=                 SearchResults
//	POST /v1/expand                         ExpandRequest -> ExpandResult
//	/v1/index/changes?since=&wait=          IndexChanges, a long poll: answers when the state differs from since
//
// The registry parameter is [host/]owner/repo[/collection]. For the
// reference-taking routes it is the default registry that short references
// resolve against (the server's default when omitted); for the listing
// routes it selects the registry (and collection) to list (all when
// omitted).
package api

import (
	"time"
)

// Error is the body of every error answer.
type Error struct {
	Error string `json:"error"`
	// Kind names the error's kind where the status alone does not
	// (verification_failed and limit_exceeded are both 422), as
	// derrors.WireKind names it.
	Kind string `json:"kind,omitempty"`
}

// Finding is one lint finding of a registry.
type Finding struct {
	Path     string `json:"path"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// String formats the finding as dm lint prints it: "path: severity: message".
func (f Finding) String() string { return f.Path + ": " + f.Severity + ": " + f.Message }

// Registry statuses.
const (
	// StatusOK: the index is the source's current state as of the last
	// refresh.
	StatusOK = "ok"
	// StatusCached: the index was loaded from the cache directory and the
	// source has not confirmed it yet.
	StatusCached = "cached"
	// StatusStale: the last refresh failed; the last good index is served.
	StatusStale = "stale"
	// StatusIndexing: no index yet, the first one is being built.
	StatusIndexing = "indexing"
	// StatusError: no index, and building one failed.
	StatusError = "error"
)

// Registry describes one configured registry and its index.
type Registry struct {
	// Name is the reference prefix, such as github.com/acme/templates.
	Name string `json:"name"`
	// Kind is "github" or "local"; Location says where the registry is read.
	Kind     string `json:"kind"`
	Location string `json:"location"`
	// Default reports that short references resolve here.
	Default bool `json:"default,omitempty"`
	// Namespace is set for a registry of a namespaced Registry object: its
	// templates are for the TemplateInstances of that namespace only
	// (dm-controller refuses the others). Empty: visible everywhere (flags,
	// configuration file, ClusterRegistry).
	Namespace string `json:"namespace,omitempty"`
	// Status is one of the Status constants; Ready reports that an index is
	// being served.
	Status string `json:"status"`
	Ready  bool   `json:"ready"`
	// Version is the indexed commit SHA (GitHub) or listing hash (local).
	Version     string    `json:"version,omitempty"`
	Built       time.Time `json:"built,omitzero"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
	RetryAt     time.Time `json:"retry_at,omitzero"`
	// Counts of what the index holds.
	Collections  int `json:"collections"`
	Templates    int `json:"templates"`
	Versions     int `json:"versions"`
	FindingCount int `json:"finding_count"`
	ErrorCount   int `json:"error_count"`
	// Findings are listed only when one registry is asked for.
	Findings []Finding `json:"findings,omitempty"`
}

// HideLocalPath clears Location when it is a directory on registryd's
// host (a --registry-dir registry): the path says how the host is laid
// out, which only an administrator needs to know.
func (r *Registry) HideLocalPath() {
	if r.Kind == KindLocal {
		r.Location = ""
	}
}

// IndexChanges answers GET /v1/index/changes: every registry's indexed
// version (a commit SHA or a listing hash; "" before the first index) and
// a token naming that state, to pass as since in the next request.
type IndexChanges struct {
	Token      string            `json:"token"`
	Registries map[string]string `json:"registries"`
}

// RegistryList answers GET /v1/registries.
type RegistryList struct {
	// Default is the default registry, [host/]owner/repo[/collection], or
	// empty.
	Default    string     `json:"default,omitempty"`
	Registries []Registry `json:"registries"`
}

// Collection is a collection of a registry; Name is empty for the root
// collection.
type Collection struct {
	Registry  string `json:"registry"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	Mapped    bool   `json:"mapped,omitempty"`
	Templates int    `json:"templates"`
}

// CollectionList answers GET /v1/collections.
type CollectionList struct {
	Collections []Collection `json:"collections"`
}

// VersionInfo summarises one version directory of a template.
type VersionInfo struct {
	// Name is the directory name (v1); Version its canonical form (v1.0.0).
	Name       string `json:"name"`
	Version    string `json:"version"`
	Ref        string `json:"ref"`
	Digest     string `json:"digest"`
	Language   string `json:"language,omitempty"`
	Prerelease bool   `json:"prerelease,omitempty"`
	// Problem, when set, makes the version unusable.
	Problem string `json:"problem,omitempty"`
	// Signer is who signed the version and Refused why its registry's
	// policy refuses it; set only where a version is described with its
	// siblings (GET /v1/templates/{ref}) and the registry has a policy.
	Signer  string `json:"signer,omitempty"`
	Refused string `json:"refused,omitempty"`
	// RefusedReason is the refusal's reason (NoSignature, KeyNotTrusted, …).
	RefusedReason string `json:"refused_reason,omitempty"`
	// SignatureFile reports that the version has a signature file
	// (index.SignatureFile), which a mirror copies.
	SignatureFile bool `json:"signature_file,omitempty"`
}

// Template is a template and its versions, lowest first.
type Template struct {
	Registry   string `json:"registry"`
	Collection string `json:"collection"`
	Name       string `json:"name"`
	Path       string `json:"path"`
	// Ref is the full reference without a version.
	Ref string `json:"ref"`
	// Latest is the highest stable usable version, if any.
	Latest   string        `json:"latest,omitempty"`
	Versions []VersionInfo `json:"versions"`
}

// TemplateList answers GET /v1/templates.
type TemplateList struct {
	Templates []Template `json:"templates"`
}

// File is one file of a version directory; Path is relative to it and SHA
// is the git blob SHA-1 of the content.
type File struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	SHA  string `json:"sha"`
}

// Resolution answers GET /v1/resolve: a reference resolved to one version.
type Resolution struct {
	// Resolved is the canonical reference, such as
	// github.com/acme/templates/apps/redis:v1.1.0.
	Resolved string `json:"resolved"`
	// Requested is the reference as given.
	Requested string `json:"requested"`
	Registry  string `json:"registry"`
	// Namespace is the namespace of the Registry object the registry
	// comes from, "" for a registry visible everywhere.
	Namespace  string `json:"namespace,omitempty"`
	Collection string `json:"collection"`
	Template   string `json:"template"`
	// Version is canonical (v1.1.0).
	Version string `json:"version"`
	// Digest is sha256 over the version's sorted file paths and content
	// hashes: "sha256:<hex>".
	Digest string `json:"digest"`
	// Path is the version directory in the registry.
	Path  string `json:"path"`
	Files []File `json:"files"`
	// TemplateFile is the top-level template file, relative to Path.
	TemplateFile string `json:"template_file"`
	Language     string `json:"language"`
	// Schema and Example name the schema and example files, if any.
	Schema  string `json:"schema,omitempty"`
	Example string `json:"example,omitempty"`
	// Note explains a choice the request did not spell out, such as the
	// version chosen for a reference without one.
	Note string `json:"note,omitempty"`
	// Signer is who signed the version, as its registry's policy verified
	// it; "" where the registry verifies nothing or lets an unsigned
	// version through.
	Signer string `json:"signer,omitempty"`
}

// Pinned is the resolved version pinned to its digest: the reference that
// reads this version's files. Resolved alone names the highest patch of
// its MAJOR.MINOR, which may be a later one.
func (r *Resolution) Pinned() string { return r.Resolved + "@" + r.Digest }

// Property is one property of a template's schema.
type Property struct {
	Name        string `json:"name"`
	Type        string `json:"type,omitempty"`
	Default     any    `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// TemplateVersion answers GET /v1/template: one version with its schema,
// example and lint findings.
type TemplateVersion struct {
	Resolution
	// Signature is the version's signature file (index.SignatureFile),
	// when it has one: not among Files, read by its path as they are.
	Signature *File `json:"signature,omitempty"`
	// Title and Description come from the schema's info section (for an
	// OpenShift template without a schema, from its metadata).
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Properties come from the schema, in the file's order; Required
	// lists the required ones.
	Properties []Property `json:"properties,omitempty"`
	Required   []string   `json:"required,omitempty"`
	// SchemaError says why the schema could not be read, if it could not.
	SchemaError    string    `json:"schema_error,omitempty"`
	SchemaContent  string    `json:"schema_content,omitempty"`
	ExampleContent string    `json:"example_content,omitempty"`
	Findings       []Finding `json:"findings,omitempty"`
	// Versions are all versions of the template.
	Versions []VersionInfo `json:"versions"`
	// ExampleFile names the example file, as Resolution.Example does: the
	// JSON name "example" is the example's test result here.
	ExampleFile string `json:"example_file,omitempty"`
	// ExampleTest is the result of expanding the example, once registryd
	// has tested it; it hides Resolution.Example in JSON.
	ExampleTest *ExampleStatus `json:"example,omitempty"`
}

// ExampleStatus is the test of a version's example.yaml: registryd
// expands every version's example in the background after each index.
type ExampleStatus struct {
	// Status is "ok", "error" or "pending".
	Status string `json:"status"`
	// Error says why the example did not expand, with its layout path.
	Error string `json:"error,omitempty"`
	// Uses are the canonical references of the registry templates the
	// example expanded through, the version itself excluded.
	Uses []string `json:"uses,omitempty"`
}

// SearchResult is one template that matches a search.
type SearchResult struct {
	// Ref is the full reference without a version.
	Ref      string `json:"ref"`
	Registry string `json:"registry"`
	// Namespace is the registry's namespace, "" for one visible
	// everywhere.
	Namespace  string   `json:"namespace,omitempty"`
	Collection string   `json:"collection"`
	Template   string   `json:"template"`
	Latest     string   `json:"latest,omitempty"`
	Versions   []string `json:"versions"`
	// Title and Description are those of the latest version's schema.
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Match says what the worst-matching word of the query matched:
	// "name", "title", "collection", "tag", "property", "description" or
	// "path".
	Match string `json:"match"`
}

// SearchResults answers GET /v1/search.
type SearchResults struct {
	Results []SearchResult `json:"results"`
}

// Readiness answers GET /readyz.
type Readiness struct {
	Ready bool `json:"ready"`
	// NotReady names the registries without an index.
	NotReady []string `json:"not_ready,omitempty"`
	// Notes say what is degraded without failing readiness, such as an
	// unreachable apiserver while snapshots are served.
	Notes []string `json:"notes,omitempty"`
	Error string   `json:"error,omitempty"`
}
