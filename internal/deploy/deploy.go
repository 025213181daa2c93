// Package deploy applies expanded templates to a Kubernetes cluster and
// keeps their history: deploy, update, rollback and delete a deployment,
// and read back what is deployed (list, get, history, manifest, diff, and
// DM's types and instances over the recorded layouts).
//
// It is to dm what Helm's pkg/action is to helm: cmd/dm parses flags and
// prints; the actions here do the work with three parts given to them: an
// Expander (in-process, or a registryd through --server: registryd expands,
// dm applies with the user's own credentials), a Cluster (package kube) and
// a history Driver (package driver).
//
// # Safety
//
// Every object dm applies carries the label app.kubernetes.io/managed-by=dm,
// the label dm.io/deployment=NAME and the annotations
// dm.io/deployment-namespace and dm.io/template. An object that exists and
// that no dm deployment owns is refused unless Adopt; an object of another
// dm deployment is always refused. Pruning and deleting touch only objects
// that carry this deployment's labels AND appear in its records, checked
// against the live objects. A CustomResourceDefinition that still has
// custom resources is pruned or deleted only with PruneCRDs.
//
// # Concurrency
//
// A revision's record is created (create-only, status pending) before
// anything is applied, so of two concurrent actions on one deployment
// exactly one records a revision; the record carries the lease of the
// action applying it, which renews it until its final write. Another
// action waits for a live lease (WaitForLock) and takes over one nobody
// has renewed for its duration: a dm that died blocks the next one for
// that long at most, and a live one is never preempted. See lease.go.
package deploy

import (
	"context"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
)

// Labels and annotations dm puts on every object it applies.
const (
	// LabelManagedBy is the Kubernetes recommended label; dm sets it to
	// ManagedBy.
	LabelManagedBy = driver.LabelManagedBy
	ManagedBy      = "dm"
	// LabelDeployment holds the deployment's name, or for a name longer
	// than 63 characters a hash of it (driver.DeploymentLabel).
	LabelDeployment = driver.LabelDeployment
	// AnnotationNamespace holds the namespace of the deployment (whose
	// history records the object), which differs from the object's own
	// for cluster-scoped objects and objects a template places elsewhere.
	AnnotationNamespace = "dm.io/deployment-namespace"
	// AnnotationTemplate holds the canonical reference (with version) of
	// the template that made the object.
	AnnotationTemplate = "dm.io/template"
	// AnnotationPath holds the object's path in the layout.
	AnnotationPath = "dm.io/layout-path"
)

// DefaultTimeout bounds --wait and the wait for deferred references.
const DefaultTimeout = 5 * time.Minute

// Source is what to expand: a template reference with properties, or a
// configuration with its imports.
type Source struct {
	Input      release.Input
	Properties map[string]any
	// Name is the resource name of a template given by reference.
	Name string
	// Deployment and Namespace reach templates as env.deployment and
	// env.namespace.
	Deployment string
	Namespace  string
	// Env adds keys to, or overrides keys of, every template's env
	// (--env); it is recorded with the revision.
	Env map[string]string
	// Strict makes properties a template's schema does not define an
	// error rather than a warning.
	Strict bool
	// SkipSchemaValidation applies schemas' defaults without validating
	// properties (--skip-schema-validation).
	SkipSchemaValidation bool
	// Project is the Google Cloud project of the Config Connector objects
	// made of Google Cloud resources (--project); templates read it as
	// env.project. Without one: env.project when Env gives it, else the
	// project of the last revision (Update), else the namespace's
	// cnrm.cloud.google.com/project-id annotation, as Config Connector
	// resolves it.
	Project string
	// DeletionPolicy is what deleting the Config Connector objects does
	// to their Google Cloud resources: "delete" (Config Connector's
	// default) or "abandon" (they are left); "" keeps the last revision's.
	DeletionPolicy string
}

// Expander expands a Source. cmd/dm expands in-process or asks a
// registryd.
type Expander interface {
	Expand(ctx context.Context, src Source) (*expand.Result, error)
}

// ExpandFunc adapts a function to Expander.
type ExpandFunc func(ctx context.Context, src Source) (*expand.Result, error)

// Expand calls f.
func (f ExpandFunc) Expand(ctx context.Context, src Source) (*expand.Result, error) {
	return f(ctx, src)
}

// Cluster is what the actions need of a cluster; *kube.Client implements
// it.
type Cluster interface {
	Namespace() string
	Prepare(ctx context.Context, objs []*unstructured.Unstructured) error
	Apply(ctx context.Context, objs []*unstructured.Unstructured, opts kube.ApplyOptions) ([]kube.Applied, error)
	Get(ctx context.Context, ref kube.ObjectRef) (*unstructured.Unstructured, error)
	Existing(ctx context.Context, refs []kube.ObjectRef) (map[kube.ObjectRef]*metav1.PartialObjectMetadata, error)
	Delete(ctx context.Context, refs []kube.ObjectRef, opts kube.DeleteOptions) error
	Statuses(ctx context.Context, refs []kube.ObjectRef) ([]kube.Status, error)
	Wait(ctx context.Context, refs []kube.ObjectRef, progress func(kube.Status)) error
	Diff(ctx context.Context, objs []*unstructured.Unstructured, gone []kube.ObjectRef) (string, bool, error)
	List(ctx context.Context, namespace, selector string, kinds []string) ([]*unstructured.Unstructured, error)
	TakeOverFields(ctx context.Context, refs []kube.ObjectRef, managers []string) error
	Annotate(ctx context.Context, refs []kube.ObjectRef, key, value string) ([]kube.ObjectRef, error)
}

var _ Cluster = (*kube.Client)(nil)

// Config holds what every action works with.
type Config struct {
	// Cluster is the cluster; History stores the records (in the
	// cluster, as Secrets, for dm).
	Cluster Cluster
	History driver.Driver
	// Expander expands sources for Deploy, Update and Diff.
	Expander Expander
	// Namespace is the deployment's namespace (-n); default the
	// Cluster's.
	Namespace string
	// Log receives progress and notes (stderr for dm); nil discards.
	Log io.Writer
	// DMVersion is recorded with every revision.
	DMVersion string
	// Now returns the time; nil means time.Now. Leases never compare
	// it with another machine's: they run on the monotonic clock.
	Now func() time.Time
	// Holder identifies this process in the leases its actions take;
	// Host and PID default to this machine's and process's. dm-controller
	// sets its pod.
	Holder release.Holder
	// Lease times those leases.
	Lease LeaseOptions
}

func (c *Config) namespace() string {
	if c.Namespace != "" {
		return c.Namespace
	}
	return c.Cluster.Namespace()
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return time.Now().UTC()
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// ApplyOptions are the options of the actions that apply objects.
type ApplyOptions struct {
	// DryRun is "", "client" (print what would be applied, contact the
	// cluster only to read) or "server" (dry-run applies of the objects
	// and of the action's hooks, which are not waited for; no record).
	// Either way Result lists the objects and the hooks.
	DryRun string
	// Wait waits until every object is ready (kstatus Current).
	Wait bool
	// Timeout bounds Wait and the wait for deferred references; default
	// DefaultTimeout.
	Timeout time.Duration
	// ReferenceTimeout, if set, bounds instead the wait for the objects a
	// wave reads or depends on (deferred references, dependsOn): past it,
	// an object not ready yet is an error wrapping derrors.Unavailable,
	// for a controller to try again later rather than hold a worker.
	ReferenceTimeout time.Duration
	// ForceConflicts takes over fields other field managers own.
	ForceConflicts bool
	// Adopt takes over existing objects that no dm deployment owns.
	Adopt bool
	// Atomic rolls back to the last deployed revision on failure.
	Atomic bool
	// PruneCRDs allows pruning CRDs that still have custom resources.
	PruneCRDs bool
	// CreateNamespace creates the deployment's namespace first.
	CreateNamespace bool
	// HistoryMax bounds the revisions kept; default
	// driver.DefaultHistoryMax, negative keeps all.
	HistoryMax int
	// Controller is set by dm-controller: it names the object that
	// manages the deployment, is recorded with the revision, and lets the
	// action change a deployment a controller manages (people are
	// refused: the controller would undo their change).
	Controller string
	// WaitForLock is how long to wait for another action on the
	// deployment that holds it (its lease is live) to finish; default
	// DefaultWaitForLock, negative does not wait. Telling a holder that
	// died from a live one takes watching its lease for up to its
	// duration, which a lease nobody renews is watched for in any case.
	WaitForLock time.Duration
	// SkipUnchanged writes nothing when the last revision is deployed
	// with the same input, properties, env and template digests and every
	// object is unchanged in the cluster (its resourceVersion is the one
	// recorded): the result's Record is that revision and Unchanged is
	// set. A controller's resync uses it, with ForceConflicts to take back
	// the fields someone changed (drift).
	SkipUnchanged bool
}

func (o *ApplyOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// referenceTimeout is ReferenceTimeout, else timeout.
func (o *ApplyOptions) referenceTimeout() time.Duration {
	if o.ReferenceTimeout > 0 {
		return o.ReferenceTimeout
	}
	return o.timeout()
}

func (o *ApplyOptions) historyMax() int {
	switch {
	case o.HistoryMax == 0:
		return driver.DefaultHistoryMax
	case o.HistoryMax < 0:
		return 0
	}
	return o.HistoryMax
}

// Hook is a hook as an action runs it: at one event, in the tier of its
// weight.
type Hook struct {
	// Event is the event it runs at: pre-install, post-upgrade, ...
	Event string
	// Weight is its helm.sh/hook-weight: the event's hooks run in tiers
	// of one weight, lowest first.
	Weight int
	// Path is its path in the layout.
	Path   string
	Object *unstructured.Unstructured
}

// Result is the outcome of an action that applies objects.
type Result struct {
	// Record is the new revision (nil for dry runs).
	Record *release.Record
	// Objects are the objects applied (or that would be, for dry runs).
	Objects []*unstructured.Unstructured
	// Hooks are the hooks the action ran (or would run, for dry runs):
	// the pre- event's, then the post- event's, each in tier order. A
	// hook of both events appears under each. Test hooks never run.
	Hooks []Hook
	// Pruned are the objects deleted because the revision no longer has
	// them.
	Pruned []kube.ObjectRef
	// Ref is the input's reference as written; Resolved is the
	// canonical reference it resolved to, and Previous what the previous
	// revision used (Update).
	Ref, Resolved, Previous string
	// Unchanged is set when SkipUnchanged found nothing to do: Record is
	// the deployed revision, and nothing was written.
	Unchanged bool
}
