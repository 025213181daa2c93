// Package release defines the record dm keeps of each revision of a
// deployment: what the user asked for, what the engine made of it, what was
// applied and how it went. Storage drivers (package driver) persist records;
// the deploy actions create and update them.
//
// A record is written once per revision, with status pending, before anything
// is applied, and then updated to deployed or failed. While a dm applies it,
// the record carries that dm's Lease, renewed as it goes: another dm waits for
// a live lease and takes over one nobody renews, so that an interrupted dm
// blocks the next one for one lease duration at most, and a live one is never
// preempted.
package release

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/expand/layout"
)

// Format is the version of the stored form of a Record. Drivers write it
// with every record and refuse to read a record of another version, so a
// future format change is detected instead of misread.
const Format = 1

// Status of a revision.
type Status string

// The statuses a revision goes through. A revision is created pending, then
// becomes deployed or failed; a newer deployed revision makes the previous
// deployed one superseded; deleting marks a deployment whose objects are
// being removed (dm delete --keep-history leaves it).
const (
	// StatusPending means the revision is being applied, by the holder of
	// its Lease. One whose lease has expired (or that has none: an older
	// dm's) was left by an interrupted dm: the next action on the
	// deployment turns it into failed ("interrupted").
	StatusPending Status = "pending"
	// StatusDeployed means every object of the revision was applied.
	StatusDeployed Status = "deployed"
	// StatusFailed means applying the revision failed; Description says why.
	StatusFailed Status = "failed"
	// StatusSuperseded means a later revision was deployed.
	StatusSuperseded Status = "superseded"
	// StatusDeleting means the deployment's objects are being deleted.
	StatusDeleting Status = "deleting"
)

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusDeployed, StatusFailed, StatusSuperseded, StatusDeleting:
		return true
	}
	return false
}

// Record is one revision of one deployment.
type Record struct {
	// Name and Namespace identify the deployment; Revision counts from 1.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	// Status is where the revision stands.
	Status Status `json:"status"`
	// Description says what happened: "Deploy complete", "Rollback to 3",
	// or the error.
	Description string `json:"description,omitempty"`
	// Input is what the user asked for, enough to expand it again.
	Input Input `json:"input"`
	// Properties are the properties given (after merging --values and
	// --properties).
	Properties map[string]any `json:"properties,omitempty"`
	// Env holds the --env values given, if any.
	Env map[string]string `json:"env,omitempty"`
	// References are the registry templates the expansion resolved, with
	// their versions and digests.
	References []layout.Reference `json:"references,omitempty"`
	// Layout is the expansion's tree of resources.
	Layout layout.Layout `json:"layout"`
	// Resources has one entry per applied object, in apply order.
	Resources []Resource `json:"resources,omitempty"`
	// Objects are the objects as applied: labels, annotations and
	// namespace set, deferred references filled. Rollback applies them
	// again without expanding.
	Objects []map[string]any `json:"objects,omitempty"`
	// Hooks are the revision's hook objects (helm.sh/hook), labelled as
	// applied, of every event: they are neither pruned nor deleted with
	// the deployment, but a rollback runs its target's rollback hooks and
	// a delete the deployed revision's delete hooks.
	Hooks []map[string]any `json:"hooks,omitempty"`
	// Created is when the revision was first recorded, Updated when its
	// record last changed.
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// DMVersion is the version of dm that wrote the revision.
	DMVersion string `json:"dmVersion,omitempty"`
	// Controller names the object that manages the deployment in the
	// cluster ("TemplateInstance ns/name") when dm-controller applied the
	// revision; dm update, rollback and delete refuse such a deployment.
	Controller string `json:"controller,omitempty"`
	// Project and DeletionPolicy are the Google Cloud settings the
	// revision's Config Connector objects were made with (dm deploy
	// --project, --deletion-policy; the project as resolved): dm update
	// without them keeps them.
	Project        string `json:"project,omitempty"`
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
	// Outputs are the deployment's outputs (DM's outputs: a
	// configuration's, or its template's), each with the fields of live
	// objects it reads: dm get shows them filled.
	Outputs []Output `json:"outputs,omitempty"`
	// Lease is set while an action holds the deployment through this
	// record: a deploy, update or rollback applying this (pending)
	// revision, a delete deleting the objects of this (deleting) one, or,
	// for a moment, an action claiming the latest revision before it
	// records the next. The final write of the action clears it. Drivers
	// keep it beside the status, outside the body, so that a renewal is a
	// small write.
	Lease *Lease `json:"lease,omitempty"`
	// StorageVersion is the driver's optimistic-concurrency token (for
	// Secrets, derived from the head Secret's resourceVersion) from when
	// the record was read or last written. It is opaque, and not part of
	// the stored record.
	StorageVersion string `json:"-"`
}

// Lease says who holds a record and how long its hold lasts without a
// renewal, as a coordination.k8s.io Lease does for a leader. The times are
// the holder's clock and are only shown: a waiter never compares them with
// its own clock (machines' clocks differ). It watches Renewals instead, and
// counts the lease expired once it has seen no renewal for Duration on its
// own monotonic clock, as client-go's leader election does.
type Lease struct {
	// Holder is who holds it.
	Holder Holder `json:"holder"`
	// Operation is what the holder is doing: deploy, update, rollback,
	// delete or import.
	Operation string `json:"operation,omitempty"`
	// Duration is how long the lease lasts without a renewal, and
	// RenewPeriod how often the holder renews it (both as Go's
	// time.Duration, nanoseconds).
	Duration    time.Duration `json:"duration"`
	RenewPeriod time.Duration `json:"renewPeriod"`
	// Acquired is when the holder took the lease, Renewed when it last
	// renewed it (the holder's clock).
	Acquired time.Time `json:"acquired"`
	Renewed  time.Time `json:"renewed"`
	// Renewals counts the renewals: each one changes it.
	Renewals int64 `json:"renewals,omitempty"`
}

// Holder identifies the process (and, in dm-controller, the instance) that
// holds a lease.
type Holder struct {
	// ID is random, new for each lease taken: it tells two actions of one
	// process apart, and a restarted process from the one that died.
	ID   string `json:"id"`
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Pod is dm-controller's pod (NAMESPACE/NAME, or NAME), and Instance
	// the object whose reconcile holds the lease ("TemplateInstance
	// ns/name").
	Pod      string `json:"pod,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// String names the holder for people: "dm pid 4242 on host ci-7 (lease
// 1a2b3c4d)", or "dm-controller pod dm/dm-controller-x7 for TemplateInstance
// shop/web (pid 1, on host dm-controller-x7, lease 1a2b3c4d)".
func (h Holder) String() string {
	var where []string
	if h.PID != 0 {
		where = append(where, "pid "+strconv.Itoa(h.PID))
	}
	if h.Host != "" {
		where = append(where, "on host "+h.Host)
	}
	if h.Pod != "" || h.Instance != "" {
		s := "dm-controller"
		if h.Pod != "" {
			s += " pod " + h.Pod
		}
		if h.Instance != "" {
			s += " for " + h.Instance
		}
		return s + " (" + strings.Join(append(where, "lease "+h.ID), ", ") + ")"
	}
	s := "dm"
	if len(where) > 0 {
		s += " " + strings.Join(where, " ")
	}
	return s + " (lease " + h.ID + ")"
}

// Input is what the user asked to deploy: a template reference, or a
// configuration with its imports.
type Input struct {
	// Ref is a template reference as written (redis:v1) and Registry the
	// default registry short references resolved against.
	Ref      string `json:"ref,omitempty"`
	Registry string `json:"registry,omitempty"`
	// Config is a configuration (YAML or JSON), ConfigName its name in
	// errors and Imports the files sent with it, by path.
	Config     string            `json:"config,omitempty"`
	ConfigName string            `json:"configName,omitempty"`
	Imports    map[string]string `json:"imports,omitempty"`
	// Server is the URL of the registryd that resolved and expanded, if
	// any.
	Server string `json:"server,omitempty"`
	// Chart is set for a deployment adopted from a Helm release (dm import
	// helm): the chart it was installed from. With its Files, and neither
	// Ref nor Config, it is the input: dm update renders the chart again.
	Chart *Chart `json:"chart,omitempty"`
}

// Chart names the Helm chart an imported deployment was installed from.
type Chart struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion,omitempty"`
	// From names the Helm record imported: "helm release NAME revision N".
	From string `json:"from,omitempty"`
	// Files are the chart's files as Helm's record kept them, by path
	// relative to the chart (Chart.yaml, values.yaml, templates/...);
	// none when the chart cannot be rendered from the record (it has
	// subcharts, which Helm does not record).
	Files map[string]string `json:"files,omitempty"`
}

// Resource is one applied object of a revision.
type Resource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Path is the object's layout path, such as "frontend/web/svc".
	Path string `json:"path,omitempty"`
	// Template is the canonical template reference (with version) of the
	// object's layout node.
	Template string `json:"template,omitempty"`
	// ResourceVersion is the object's resourceVersion right after dm
	// applied it. When the live object still has it and the next revision
	// applies the same object, dm skips the PATCH: nothing changed it.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// String names the revision as "namespace/name revision N".
func (r *Record) String() string {
	return fmt.Sprintf("%s/%s revision %d", r.Namespace, r.Name, r.Revision)
}

// Output is one of a deployment's outputs: Value holds the references of
// Reads until they are filled from the live objects.
type Output struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
	Reads []Read `json:"reads,omitempty"`
}

// Read is a field of a live object that an output holds: Ref
// ($(ref.NAME.PATH)), in the string at Field (a JSON Pointer into the
// output's value, "" for the whole value), is the value at Path of the
// object.
type Read struct {
	Field      string `json:"field,omitempty"`
	Ref        string `json:"ref"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Path       string `json:"path"`
	// Ready: the value is read once the object is ready (a Config
	// Connector object's status).
	Ready bool `json:"ready,omitempty"`
}
