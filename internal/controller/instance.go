package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/instance"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/resolve"
)

// InstanceReconciler reconciles TemplateInstances.
type InstanceReconciler struct {
	client  client.Client
	clients *clients
	// caps are the cluster's capabilities, for the charts instances
	// render.
	caps  *capabilities
	opts  Options
	log   *slog.Logger
	drift *driftWatcher
	// kind is where the instance's finalizer and status are written: a
	// TemplateInstance, or an object of a kind a TemplateDefinition
	// defines, seen as a TemplateInstance.
	kind instanceKind
	// secretPaths caches, by version, the paths of the properties its
	// schema marks secret (schemaSecrets); nil caches nothing.
	secretPaths *lru.Cache[string, [][]string]
	// taints caches what of an expansion depends on a secret (taintOf);
	// nil caches nothing.
	taints *taints
	// accounts watches, as instances' accounts, what the controller's own
	// account does not read; nil watches nothing so.
	accounts *accountWatches
	// defRegistry is DefaultRegistry parsed: the roll-out policies'
	// references and the instances' are compared qualified with it.
	defRegistry resolve.Registry
}

// Reconcile brings one instance to its desired state and writes its status.
func (r *InstanceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ti := &v1alpha1.TemplateInstance{}
	if err := r.client.Get(ctx, req.NamespacedName, ti); err != nil {
		if apierrors.IsNotFound(err) && r.accounts != nil {
			// Gone: what it watched is no longer needed for it.
			ti.Namespace, ti.Name = req.Namespace, req.Name
			r.accounts.release(r.kind.controllerName(ti))
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return r.reconcile(ctx, ti)
}

// reconcile brings ti to its desired state and writes its status through
// r.kind.
func (r *InstanceReconciler) reconcile(ctx context.Context, ti *v1alpha1.TemplateInstance) (ctrl.Result, error) {
	log := r.log.With("instance", ti.Namespace+"/"+ti.Name)
	// A registryd serves the instance its own namespace's registries (and
	// those visible everywhere): the controller asks for them by name,
	// with its own token, and registryd checks that it may get them.
	ctx = api.ForNamespace(ctx, ti.Namespace)
	if !ti.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, ti, log)
	}
	if ti.Spec.Suspend {
		// Nothing is applied or pruned while suspended; the status says
		// only that this generation was seen.
		before := ti.Status.DeepCopy()
		ti.Status.ObservedGeneration = ti.Generation
		return ctrl.Result{}, r.writeStatus(ctx, ti, before)
	}
	if !controllerutil.ContainsFinalizer(ti, Finalizer) {
		if err := r.kind.setFinalizer(ctx, ti, true); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	before := ti.Status.DeepCopy()
	res, err := r.apply(ctx, ti, log)
	ti.Status.ObservedGeneration = ti.Generation
	requeue := interval(ti)
	if err != nil {
		r.failed(ti, err)
	} else {
		requeue = min(requeue, r.observe(ctx, ti, res))
	}
	if werr := r.writeStatus(ctx, ti, before); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if err != nil {
		log.Info("reconcile failed", "err", err)
		// The rate limiter backs off per instance.
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// interval is the instance's resync interval.
func interval(ti *v1alpha1.TemplateInstance) time.Duration {
	if ti.Spec.Interval != nil && ti.Spec.Interval.Duration > 0 {
		return ti.Spec.Interval.Duration
	}
	return DefaultInterval
}

// unreadyRequeue is how soon an instance whose objects are not all ready
// is looked at again, besides the watch on those objects.
const unreadyRequeue = 15 * time.Second

// applied is what a successful apply left for the status.
type applied struct {
	res   *deploy.Result
	cfg   *deploy.Config
	props map[string]any
	// secret are the paths of props that came from Secrets.
	secret [][]string
	// rendering is the expansion applied, for taintOf.
	rendering *rendering
	// hold is what a roll-out policy allowed; nil when none governs.
	hold *waveHold

	taintOnce sync.Once
	taint     *taint
	taintErr  error
}

// tainted returns what of the expansion applied depends on a marked
// value, computed once (blind runs) and only when asked: by the outputs,
// or by a status template.
func (r *InstanceReconciler) tainted(ctx context.Context, a *applied, resolved, digest string) (*taint, error) {
	a.taintOnce.Do(func() { a.taint, a.taintErr = r.taintOf(ctx, a, resolved, digest) })
	return a.taint, a.taintErr
}

// user is the Kubernetes user the instance applies as.
func (r *InstanceReconciler) user(ti *v1alpha1.TemplateInstance) (string, error) {
	return instance.User(ti, r.opts.DefaultServiceAccount)
}

// config returns the deploy configuration of the instance: the cluster and
// the history (Secrets in the instance's namespace) as its ServiceAccount.
// The controller itself writes no Secret: its account needs no right to
// write Secrets anywhere.
func (r *InstanceReconciler) config(ctx context.Context, ti *v1alpha1.TemplateInstance, expander deploy.Expander) (*deploy.Config, error) {
	user, err := r.user(ti)
	if err != nil {
		return nil, err
	}
	k, err := r.clients.as(ctx, user, ti.Namespace)
	if err != nil {
		return nil, err
	}
	return &deploy.Config{
		Cluster:   k,
		History:   driver.NewSecrets(k.Dynamic()),
		Expander:  expander,
		Namespace: ti.Namespace,
		Log:       logWriter{r.log.With("instance", ti.Namespace+"/"+ti.Name)},
		DMVersion: r.opts.DMVersion,
		// The leases it takes name the pod; each names the instance.
		Holder: release.Holder{Pod: r.opts.Pod},
	}, nil
}

// apply expands and applies the instance.
func (r *InstanceReconciler) apply(ctx context.Context, ti *v1alpha1.TemplateInstance, log *slog.Logger) (*applied, error) {
	pinned := ""
	var cluster *engine.Cluster
	// The real expansion is kept for the blind runs that tell what of it
	// depends on a secret (taintOf).
	rd := &rendering{}
	cfg, err := r.config(ctx, ti, deploy.ExpandFunc(func(ctx context.Context, src deploy.Source) (*expand.Result, error) {
		x, err := r.expand(ctx, src, pinned, cluster)
		rd.src, rd.x, rd.pinned = src, x, pinned
		return x, err
	}))
	if err != nil {
		return nil, err
	}
	user, _ := r.user(ti) // config checked it
	if r.accounts != nil {
		// Held even when this reconcile fails: a Secret that is created
		// or fixed later reconciles it.
		r.accounts.hold(ctx, r.kind.controllerName(ti), "sources", r.secretSources(user, ti))
	}
	if cluster, err = r.cluster(user); err != nil {
		return nil, err
	}
	if rd.lookup = cluster.Lookup; cluster.Lookup != nil {
		cluster.Lookup = &secretLookup{inner: cluster.Lookup, read: &rd.secrets}
	}
	rd.cluster = cluster
	props, secret, err := r.properties(ctx, ti, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	if ti.Spec.UpdatePolicy == v1alpha1.UpdateManual {
		if pinned, err = r.pinned(ctx, ti, cfg, props); err != nil {
			return nil, err
		}
	}
	// A roll-out policy decides which patch the instance runs: the exact
	// version is expanded, recorded as the instance's own reference.
	hold, err := r.rolloutHold(ctx, ti)
	if err != nil {
		return nil, err
	}
	if hold != nil {
		pinned = hold.pin
	}
	res, err := cfg.Deploy(ctx, deploy.DeployOptions{
		Name:    ti.Name,
		Upgrade: true,
		Source:  instance.Source(ti, props, r.opts.DefaultRegistry, r.opts.Server),
		// Forced: drift is restored, whoever changed the fields.
		// A Config Connector object that is not ready yet (its Google
		// Cloud resource being made) is waited for briefly, then the
		// instance is tried again: a worker is not held for minutes.
		ApplyOptions: deploy.ApplyOptions{Controller: r.kind.controllerName(ti), SkipUnchanged: true, ForceConflicts: true,
			ReferenceTimeout: referenceWait},
	})
	if err != nil {
		return nil, r.scrubbed(ctx, ti.Spec.Template, rd, props, secret, err)
	}
	if res.Unchanged {
		log.Debug("unchanged", "revision", res.Record.Revision)
	} else {
		log.Info("applied", "revision", res.Record.Revision, "resolved", res.Resolved, "objects", len(res.Objects))
	}
	return &applied{res: res, cfg: cfg, props: props, secret: secret, rendering: rd, hold: hold}, nil
}

// pinned returns the exact version the last deployed revision resolved
// (as reference@digest),
// when it was made of the same spec (template, properties, env): Manual
// keeps it, and the registry's newer patches wait for a spec change.
func (r *InstanceReconciler) pinned(ctx context.Context, ti *v1alpha1.TemplateInstance, cfg *deploy.Config, props map[string]any) (string, error) {
	hist, err := cfg.History.History(ctx, ti.Namespace, ti.Name)
	if errors.Is(err, driver.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the history of %s/%s: %w", ti.Namespace, ti.Name, err)
	}
	for i := len(hist) - 1; i >= 0; i-- {
		rec := hist[i]
		if rec.Status != release.StatusDeployed {
			continue
		}
		if rec.Input.Ref != ti.Spec.Template || !sameJSON(rec.Properties, props) || !sameJSON(rec.Env, ti.Spec.Env) {
			return "", nil
		}
		// ref:vX.Y.Z would resolve to a higher patch: the digest pins.
		for _, r := range rec.References {
			if r.Ref == rec.Input.Ref && r.Digest != "" {
				return r.Resolved + "@" + r.Digest, nil
			}
		}
		return "", nil
	}
	return "", nil
}

// sameJSON compares two values as JSON, the history's went through it,
// where an empty mapping and none are the same.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	norm := func(s []byte) string {
		if string(s) == "{}" {
			return "null"
		}
		return string(s)
	}
	return err1 == nil && err2 == nil && norm(ja) == norm(jb)
}

// expand expands src through the controller's expander, charts seeing
// cluster (the instance's: capabilities, lookup as its account); with
// pinned, the reference expanded is pinned (the exact version resolved
// before) and the references are reported as if src's had been, so that
// the revision records the instance's own reference.
func (r *InstanceReconciler) expand(ctx context.Context, src deploy.Source, pinned string, cluster *engine.Cluster) (*expand.Result, error) {
	ref := src.Input.Ref
	if pinned != "" {
		ref = pinned
	}
	x, err := r.opts.Expander.Expand(ctx, &api.ExpandRequest{
		Ref: ref, Properties: src.Properties, Name: src.Name,
		Deployment: src.Deployment, Namespace: src.Namespace, Registry: src.Input.Registry,
		Env: src.Env, Strict: src.Strict, SkipSchemaValidation: src.SkipSchemaValidation, Cluster: cluster,
	})
	if err != nil {
		return nil, err
	}
	if pinned != "" {
		for i := range x.References {
			if x.References[i].Ref == pinned {
				x.References[i].Ref = src.Input.Ref
			}
		}
		// The layout names the template as it was expanded too: renamed,
		// the objects' dm.io/template is the resolved version, as
		// unpinned, and a pin alone makes no new revision.
		for _, n := range x.Layout.Resources {
			if n.Type == pinned {
				n.Type = src.Input.Ref
			}
		}
	}
	return x, nil
}

// properties merges spec.properties and then each propertiesFrom source,
// read as the instance's ServiceAccount; secret are the paths of the
// values that came from Secrets, which status templates do not see.
func (r *InstanceReconciler) properties(ctx context.Context, ti *v1alpha1.TemplateInstance, cl deploy.Cluster) (map[string]any, [][]string, error) {
	return instance.Properties(ctx, ti, cl)
}

// observe fills the status of an applied instance: what was applied and
// whether every object is ready. It returns how soon to look again.
func (r *InstanceReconciler) observe(ctx context.Context, ti *v1alpha1.TemplateInstance, a *applied) time.Duration {
	rec := a.res.Record
	ti.Status.Revision = rec.Revision
	ti.Status.Resolved = a.res.Resolved
	if ti.Status.Resolved == "" {
		ti.Status.Resolved = resolvedOf(rec)
	}
	ti.Status.Digest = ""
	for _, ref := range rec.References {
		if ref.Resolved == ti.Status.Resolved {
			ti.Status.Digest = ref.Digest
		}
	}
	inv := make([]v1alpha1.ObjectReference, 0, len(rec.Resources))
	refs := make([]kube.ObjectRef, 0, len(rec.Resources))
	for _, res := range rec.Resources {
		inv = append(inv, v1alpha1.ObjectReference{APIVersion: res.APIVersion, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name})
		gv, _ := parseAPIVersion(res.APIVersion)
		refs = append(refs, kube.ObjectRef{Group: gv[0], Version: gv[1], Kind: res.Kind, Namespace: res.Namespace, Name: res.Name})
	}
	ti.Status.Inventory = inv
	user, _ := r.user(ti) // apply checked it
	r.drift.watch(ctx, r.kind.controllerName(ti), user, refs)

	meta.RemoveStatusCondition(&ti.Status.Conditions, v1alpha1.ConditionStalled)
	sts, err := a.cfg.Statuses(ctx, rec)
	if err != nil {
		setCondition(ti, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Progressing", "reading the objects' status: "+err.Error())
		setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionFalse, "Progressing", "reading the objects' status: "+err.Error())
		return unreadyRequeue
	}
	if msg := unready(sts); msg != "" {
		setCondition(ti, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Progressing", msg)
		setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionFalse, "Progressing", msg)
		return unreadyRequeue
	}
	st, err := r.runStatus(ctx, ti, a, ti.Status.Resolved, ti.Status.Digest)
	if err != nil {
		msg := truncate(err.Error(), maxMessage)
		setCondition(ti, v1alpha1.ConditionStalled, metav1.ConditionTrue, "StatusTemplateError", msg)
		meta.RemoveStatusCondition(&ti.Status.Conditions, v1alpha1.ConditionReconciling)
		setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionFalse, "StatusTemplateError", msg)
		return interval(ti)
	}
	outputs, err := r.outputs(ctx, a, ti.Status.Resolved, ti.Status.Digest)
	if err != nil {
		msg := "reading the outputs: " + truncate(err.Error(), maxMessage)
		setCondition(ti, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Progressing", msg)
		setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionFalse, "Progressing", msg)
		return unreadyRequeue
	}
	if st != nil {
		// The status template's outputs over the template's own.
		if outputs == nil {
			outputs = map[string]any{}
		}
		maps.Copy(outputs, st.outputs)
	}
	ti.Status.Outputs = nil
	if len(outputs) > 0 {
		b, err := json.Marshal(outputs)
		if err == nil {
			ti.Status.Outputs = &apiextensionsv1.JSON{Raw: b}
		}
	}
	if st != nil && st.hold {
		setCondition(ti, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "StatusTemplate", st.message)
		setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionFalse, "StatusTemplate", st.message)
		return unreadyRequeue
	}
	meta.RemoveStatusCondition(&ti.Status.Conditions, v1alpha1.ConditionReconciling)
	msg := fmt.Sprintf("revision %d of %s applied; %d objects ready", rec.Revision, orTemplate(ti.Status.Resolved, ti), len(sts))
	if h := a.hold; h != nil && h.held {
		setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonWaitingForWave, msg+"; "+h.message())
		return interval(ti)
	}
	setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded", msg)
	return interval(ti)
}

func orTemplate(resolved string, ti *v1alpha1.TemplateInstance) string {
	if resolved != "" {
		return resolved
	}
	return ti.Spec.Template
}

// resolvedOf is the resolved reference of a record's input.
func resolvedOf(rec *release.Record) string {
	for _, r := range rec.References {
		if r.Ref == rec.Input.Ref {
			return r.Resolved
		}
	}
	return ""
}

// parseAPIVersion splits group/version ("v1" has no group).
func parseAPIVersion(av string) ([2]string, bool) {
	if g, v, ok := strings.Cut(av, "/"); ok {
		return [2]string{g, v}, true
	}
	return [2]string{"", av}, true
}

// maxNamed is how many unready objects a message names before "and N
// more".
const maxNamed = 1

// unready names the objects that are not Current, "" when all are:
// "unready: Deployment web, and 3 more".
func unready(sts []kube.Status) string {
	var names, failed []string
	for _, s := range sts {
		switch {
		case s.Status == status.FailedStatus.String():
			// What failed, and why (a Config Connector object: KCC's
			// reason and message), comes first.
			why := "Failed"
			if s.Message != "" {
				why += ": " + s.Message
			}
			failed = append(failed, s.Ref.Kind+" "+s.Ref.Name+" ("+why+")")
		case s.Status != kube.Current:
			names = append(names, s.Ref.Kind+" "+s.Ref.Name)
		}
	}
	names = append(failed, names...)
	switch {
	case len(names) == 0:
		return ""
	case len(names) <= maxNamed:
		return "unready: " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("unready: %s, and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

// failed sets the conditions of a failed reconcile. What needs a human
// (a schema violation, a forbidden or conflicting object, a missing
// account) is Stalled; the rest (the registry or the cluster unreachable)
// is Reconciling, and the objects applied before stay as they are.
func (r *InstanceReconciler) failed(ti *v1alpha1.TemplateInstance, err error) {
	msg := truncate(err.Error(), maxMessage)
	if stalled(err) {
		setCondition(ti, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason(err), msg)
		meta.RemoveStatusCondition(&ti.Status.Conditions, v1alpha1.ConditionReconciling)
	} else {
		meta.RemoveStatusCondition(&ti.Status.Conditions, v1alpha1.ConditionStalled)
		setCondition(ti, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Retrying", msg+"; retrying (the objects applied before are kept)")
	}
	setCondition(ti, v1alpha1.ConditionReady, metav1.ConditionFalse, reason(err), msg)
}

// stalled tells whether err needs a human rather than time.
func stalled(err error) bool {
	switch {
	case errors.Is(err, deploy.ErrInProgress):
		// dm (or another reconcile) is changing the deployment: the
		// instance is tried again once it is done.
		return false
	case errors.Is(err, errNoAccount),
		errors.Is(err, errGroupNotAllowed),
		errors.Is(err, derrors.InvalidArgument),
		errors.Is(err, derrors.Conflict),
		errors.Is(err, derrors.LimitExceeded),
		errors.Is(err, derrors.NotFound),
		errors.Is(err, derrors.Ambiguous),
		errors.Is(err, derrors.VerificationFailed),
		apierrors.IsForbidden(err),
		apierrors.IsInvalid(err),
		apierrors.IsConflict(err):
		return true
	}
	return false
}

// referenceWait bounds how long a reconcile waits for an object its next
// wave reads (a Config Connector object's status): past it the instance
// is Reconciling and tried again with back-off.
const referenceWait = 15 * time.Second

// reason is the condition reason of an error.
func reason(err error) string {
	switch {
	case errors.Is(err, derrors.VerificationFailed):
		// Before the rest: a refused signature names its version and why.
		return "VerificationFailed"
	case errors.Is(err, errNoAccount):
		return "NoServiceAccount"
	case errors.Is(err, errGroupNotAllowed):
		return "GroupNotAllowed"
	case errors.Is(err, deploy.ErrInProgress):
		return "InProgress"
	case apierrors.IsForbidden(err):
		return "Forbidden"
	case apierrors.IsInvalid(err), errors.Is(err, derrors.InvalidArgument):
		return "Invalid"
	case errors.Is(err, derrors.Conflict), apierrors.IsConflict(err):
		return "Conflict"
	case errors.Is(err, derrors.LimitExceeded):
		return "LimitExceeded"
	case errors.Is(err, derrors.NotFound):
		return "NotFound"
	}
	return "Failed"
}

// maxMessage bounds a condition's message.
const maxMessage = 2048

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func setCondition(ti *v1alpha1.TemplateInstance, typ string, st metav1.ConditionStatus, reason, msg string) {
	setConditionOn(&ti.Status.Conditions, ti.Generation, typ, st, reason, msg)
}

// ready returns the Ready condition when it is True.
func ready(ti *v1alpha1.TemplateInstance) *metav1.Condition {
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

// writeStatus writes the status if it changed: an idle resync writes
// nothing.
func (r *InstanceReconciler) writeStatus(ctx context.Context, ti *v1alpha1.TemplateInstance, before *v1alpha1.TemplateInstanceStatus) error {
	if equality.Semantic.DeepEqual(before, &ti.Status) {
		return nil
	}
	if err := r.kind.writeStatus(ctx, ti); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	return nil
}

// finalize prunes what the instance rendered (deletionPolicy Delete) and
// releases the instance.
func (r *InstanceReconciler) finalize(ctx context.Context, ti *v1alpha1.TemplateInstance, log *slog.Logger) error {
	if !controllerutil.ContainsFinalizer(ti, Finalizer) {
		return nil
	}
	if ti.Spec.DeletionPolicy != v1alpha1.DeletionOrphan {
		cfg, err := r.config(ctx, ti, nil)
		if err == nil {
			_, err = cfg.Delete(ctx, ti.Name, deploy.DeleteOptions{Controller: r.kind.controllerName(ti)})
		}
		// Without an account nothing was applied.
		if err != nil && !errors.Is(err, derrors.NotFound) && !errors.Is(err, errNoAccount) {
			before := ti.Status.DeepCopy()
			r.failed(ti, fmt.Errorf("pruning on deletion: %w", err))
			_ = r.writeStatus(ctx, ti, before)
			return err
		}
		log.Info("deleted; pruned what it rendered")
	} else {
		log.Info("deleted; its objects are orphaned")
	}
	if r.accounts != nil {
		r.accounts.release(r.kind.controllerName(ti))
	}
	return client.IgnoreNotFound(r.kind.setFinalizer(ctx, ti, false))
}

// logWriter turns deploy's log lines into debug records.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = logWriter{}
