package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/manifest"
)

// maxDescription bounds the error text a failed record keeps.
const maxDescription = 4096

// history reads a deployment's records, oldest first (nil if it has
// none). Actions that change the deployment read it with lockHistory.
func (c *Config) history(ctx context.Context, ns, name string) ([]*release.Record, error) {
	hist, err := c.History.History(ctx, ns, name)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the history of %s/%s: %w", ns, name, err)
	}
	return hist, nil
}

// resumable returns the latest revision of hist when a controller
// (controller, not "") recorded it and was interrupted applying it: the
// controller's next reconcile takes that revision over instead of
// recording one more, so that a controller killed mid-apply leaves no
// revision that nobody asked for. Else nil.
func resumable(hist []*release.Record, controller string) *release.Record {
	if controller == "" || len(hist) == 0 {
		return nil
	}
	last := hist[len(hist)-1]
	if last.Controller != controller || last.Status != release.StatusFailed || !strings.HasPrefix(last.Description, interruptedDescription) {
		return nil
	}
	return last
}

// nextRevision is one more than the highest revision in hist.
func nextRevision(hist []*release.Record) int {
	n := 0
	for _, r := range hist {
		n = max(n, r.Revision)
	}
	return n + 1
}

// pruneCandidates are the objects that may exist from earlier revisions:
// those of the last deployed revision and of every later (failed,
// interrupted) one, which may have been partly applied. With deleting,
// a deleting revision (an interrupted dm delete) counts as well.
func pruneCandidates(hist []*release.Record, deleting bool) []release.Resource {
	start := 0
	for i := len(hist) - 1; i >= 0; i-- {
		if s := hist[i].Status; s == release.StatusDeployed || s == release.StatusDeleting {
			start = i
			if s == release.StatusDeleting && !deleting {
				start = i + 1
			}
			break
		}
	}
	seen := map[identity]bool{}
	var out []release.Resource
	for _, r := range hist[start:] {
		if r.Status == release.StatusDeleting && !deleting {
			continue
		}
		for _, res := range r.Resources {
			id := idOf(refOf(res))
			if !seen[id] {
				seen[id] = true
				out = append(out, res)
			}
		}
	}
	return out
}

// owner says which dm deployment a live object belongs to, if any: its
// namespace and its LabelDeployment value (driver.DeploymentLabel).
func owner(m *metav1.PartialObjectMetadata) (ns, label string, dm bool) {
	l := m.GetLabels()
	if l[LabelManagedBy] != ManagedBy || l[LabelDeployment] == "" {
		return "", "", false
	}
	return m.GetAnnotations()[AnnotationNamespace], l[LabelDeployment], true
}

// apply applies p as a new revision of deployment name: the safety checks,
// the record, the objects wave by wave with deferred references filled,
// pruning, waiting, and the record's final status. rec carries the
// revision's input, layout and description.
func (c *Config) apply(ctx context.Context, name string, hist []*release.Record, p *plan, rec *release.Record, opts ApplyOptions) (*Result, error) {
	ns := c.namespace()
	cl := c.Cluster
	if err := p.prepare(ctx, cl); err != nil {
		return nil, err
	}
	res := &Result{Objects: p.unstructured(), Hooks: p.hookRuns()}
	if opts.DryRun == "client" {
		return res, nil
	}

	// One metadata read of every object involved: those to apply (for
	// adoption) and those of earlier revisions (for pruning).
	newIDs := map[identity]bool{}
	refs := make([]kube.ObjectRef, 0, len(p.objects))
	for _, o := range p.objects {
		refs = append(refs, o.ref())
		newIDs[idOf(o.ref())] = true
	}
	var gone []kube.ObjectRef
	for _, r := range pruneCandidates(hist, false) {
		if ref := refOf(r); !newIDs[idOf(ref)] {
			gone = append(gone, ref)
		}
	}
	hooks := p.actionHooks(p.action)
	var hookRefs []kube.ObjectRef
	for _, o := range hooks {
		hookRefs = append(hookRefs, o.ref())
	}
	live, err := cl.Existing(ctx, slices.Concat(refs, gone, hookRefs))
	if err != nil {
		return nil, fmt.Errorf("reading existing objects: %w", err)
	}
	if err := checkOwnership(slices.Concat(p.objects, hooks), live, ns, name, opts.Adopt); err != nil {
		return nil, err
	}
	markUnchanged(p, hist, live, opts)
	var prune []kube.ObjectRef
	for _, ref := range gone {
		m := live[ref]
		if m == nil {
			continue
		}
		if ons, olabel, ok := owner(m); ok && ons == ns && olabel == driver.DeploymentLabel(name) {
			prune = append(prune, ref)
		}
	}
	if err := c.checkCRDs(ctx, prune, opts.PruneCRDs, "pruning"); err != nil {
		return nil, err
	}
	if opts.SkipUnchanged && opts.DryRun == "" && len(prune) == 0 {
		if prev := sameInputs(hist, rec, len(p.objects)); prev != nil {
			same, err := c.applySame(ctx, p, live, opts)
			if err != nil {
				return res, err
			}
			if same {
				res.Record, res.Unchanged = prev, true
				return res, nil
			}
		}
	}

	if opts.DryRun == "server" {
		return res, c.dryRunServer(ctx, p, live, opts.ForceConflicts)
	}

	if opts.CreateNamespace {
		nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := cl.Apply(ctx, []*unstructured.Unstructured{nsObj}, kube.ApplyOptions{}); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}

	now := c.now()
	rec.Name, rec.Namespace = name, ns
	rec.Revision = nextRevision(hist)
	rec.Status = release.StatusPending
	rec.Resources = p.resources()
	rec.Objects = objectMaps(p.objects)
	rec.Hooks = objectMaps(p.hooks)
	if p.outputs != nil || rec.Outputs == nil {
		rec.Outputs = p.recordOutputs()
	}
	rec.Created, rec.Updated = now, now
	rec.DMVersion = c.DMVersion
	rec.Controller = opts.Controller
	rec.Lease = c.newLease(operations[p.action], opts.Controller)
	desc := rec.Description
	if err := c.acquire(ctx, name, hist, rec, opts.Controller); err != nil {
		return nil, err
	}
	actx, h, err := c.holdLease(ctx, rec)
	if err != nil {
		return nil, err
	}
	res.Record = rec
	c.logf("dm: %s: applying %d objects", rec, len(p.objects))

	deadline := time.Now().Add(opts.timeout())
	var applied []*object
	// The action's pre- hooks (none when p.action is "").
	err = c.runHooks(actx, p, "pre-"+p.action, opts.ForceConflicts, deadline)
	if err == nil {
		applied, err = c.applyWaves(actx, p, kube.ApplyOptions{Force: opts.ForceConflicts}, time.Now().Add(opts.referenceTimeout()))
	}
	if err == nil && len(prune) > 0 {
		if err = cl.Delete(actx, prune, kube.DeleteOptions{}); err != nil {
			err = fmt.Errorf("pruning: %w", err)
		} else {
			res.Pruned = prune
			for _, r := range prune {
				c.logf("dm: pruned %s", r)
			}
		}
	}
	if err == nil && opts.Wait {
		err = c.wait(actx, p, opts.timeout())
	}
	if err == nil {
		// After the wait, as Helm runs post-install hooks once the
		// objects are ready.
		err = c.runHooks(actx, p, "post-"+p.action, opts.ForceConflicts, time.Now().Add(opts.timeout()))
	}
	if err != nil {
		return res, c.fail(ctx, name, hist, rec, h, applied, err, opts)
	}

	rec.Status = release.StatusDeployed
	rec.Description = desc
	rec.Resources = p.resources()       // with the resourceVersions applied
	rec.Objects = objectMaps(p.objects) // deferred references filled
	rec.Hooks = objectMaps(p.hooks)
	rec.Updated = c.now()
	if err := h.finish(ctx, rec); err != nil {
		if errors.Is(err, errLeaseLost) {
			return res, err
		}
		return res, fmt.Errorf("recording %s deployed: %w", rec, err)
	}
	for _, r := range hist {
		if r.Status == release.StatusDeployed {
			c.supersede(ctx, r)
		}
	}
	if max := opts.historyMax(); max > 0 && len(hist)+1 > max {
		if err := driver.Prune(ctx, c.History, ns, name, max); err != nil {
			c.logf("dm: warning: %v", err)
		}
	}
	return res, nil
}

// supersede marks r, deployed before the revision just deployed,
// superseded. The next action may have started (the lease is released):
// a record it already superseded is left as it is.
func (c *Config) supersede(ctx context.Context, r *release.Record) {
	for attempt := 0; ; attempt++ {
		r.Status = release.StatusSuperseded
		r.Updated = c.now()
		err := c.History.Update(ctx, r)
		if err == nil {
			return
		}
		if errors.Is(err, driver.ErrConflict) && attempt == 0 {
			fresh, gerr := c.History.Get(ctx, r.Namespace, r.Name, r.Revision)
			if gerr == nil && fresh.Status == release.StatusDeployed && fresh.Lease == nil {
				*r = *fresh
				continue
			}
			if gerr == nil || errors.Is(gerr, driver.ErrNotFound) {
				return // superseded, or claimed, by the next action
			}
		}
		c.logf("dm: warning: marking %s superseded: %v", r, err)
		return
	}
}

// acquire records rec (pending, with its lease) as the next revision,
// create-only, having first claimed the latest revision (its lease for a
// moment), so that of this action and one that changes the latest
// revision itself (dm delete) only one goes on; or, for a controller,
// takes over the revision it was interrupted applying. Losing a race is
// errRaced: nothing was changed, and the action starts again.
func (c *Config) acquire(ctx context.Context, name string, hist []*release.Record, rec *release.Record, controller string) error {
	raced := func(err error) error {
		return &errRaced{derrors.Errorf(ErrInProgress, "another dm is deploying %s revision %d (%v); re-run", name, rec.Revision, err)}
	}
	if prev := resumable(hist, controller); prev != nil {
		rec.Revision, rec.StorageVersion = prev.Revision, prev.StorageVersion
		c.logf("dm: %s: taking over the revision the interrupted controller left", rec)
		if err := c.History.Update(ctx, rec); err != nil {
			if errors.Is(err, driver.ErrConflict) || errors.Is(err, driver.ErrNotFound) {
				return raced(err)
			}
			return fmt.Errorf("recording %s: %w", rec, err)
		}
		return nil
	}
	var latest *release.Record
	if len(hist) > 0 {
		latest = hist[len(hist)-1]
		latest.Lease = rec.Lease
		if err := c.History.Update(ctx, latest); err != nil {
			latest.Lease = nil
			if errors.Is(err, driver.ErrConflict) || errors.Is(err, driver.ErrNotFound) {
				return raced(err)
			}
			return fmt.Errorf("claiming %s: %w", latest, err)
		}
	}
	err := c.History.Create(ctx, rec)
	if latest != nil {
		// The new revision's lease holds the deployment from here.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		latest.Lease = nil
		if uerr := c.History.Update(wctx, latest); uerr != nil {
			c.logf("dm: warning: releasing the claim on %s (it expires by itself): %v", latest, uerr)
		}
		cancel()
	}
	if err != nil {
		if errors.Is(err, driver.ErrExists) || errors.Is(err, driver.ErrConflict) {
			return raced(err)
		}
		return fmt.Errorf("recording %s: %w", rec, err)
	}
	return nil
}

// fail records rec failed with what was applied, and with Atomic rolls
// back to the last deployed revision. A lease lost meanwhile is the error:
// the dm that took over owns the record, and nothing is written.
func (c *Config) fail(ctx context.Context, name string, hist []*release.Record, rec *release.Record, h *hold, applied []*object, cause error, opts ApplyOptions) error {
	// Record the failure even if ctx was canceled (Ctrl-C).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	rec.Status = release.StatusFailed
	rec.Description = truncate(cause.Error(), maxDescription)
	rec.Resources, rec.Objects = nil, nil
	for _, o := range applied {
		rec.Resources = append(rec.Resources, release.Resource{
			APIVersion: o.obj.GetAPIVersion(), Kind: o.obj.GetKind(), Namespace: o.obj.GetNamespace(),
			Name: o.obj.GetName(), Path: o.path, Template: o.template, ResourceVersion: o.rv,
		})
		rec.Objects = append(rec.Objects, o.obj.Object)
	}
	rec.Updated = c.now()
	err := fmt.Errorf("%s failed: %w", rec, cause)
	if uerr := h.finish(wctx, rec); uerr != nil {
		if errors.Is(uerr, errLeaseLost) {
			return uerr
		}
		err = errors.Join(err, fmt.Errorf("recording the failure: %w", uerr))
	}
	// A deployment that keeps failing (dm-controller retrying while a
	// Config Connector object is being made) would otherwise add a
	// revision per try without bound; the last deployed one is kept.
	if max := opts.historyMax(); max > 0 && len(hist)+1 > max {
		if perr := driver.Prune(wctx, c.History, c.namespace(), name, max); perr != nil {
			c.logf("dm: warning: %v", perr)
		}
	}
	if !opts.Atomic {
		return err
	}
	var target *release.Record
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Status == release.StatusDeployed {
			target = hist[i]
			break
		}
	}
	if target == nil {
		// Nothing to go back to: remove what this revision applied.
		c.logf("dm: --atomic: no earlier deployed revision; deleting what %s applied", rec)
		if _, derr := c.Delete(wctx, name, DeleteOptions{Controller: opts.Controller, WaitForLock: opts.WaitForLock}); derr != nil {
			return errors.Join(err, fmt.Errorf("--atomic: deleting: %w", derr))
		}
		return fmt.Errorf("%w; --atomic deleted the deployment", err)
	}
	ropts := opts
	ropts.Atomic = false
	r, rerr := c.Rollback(wctx, name, target.Revision, ropts)
	if rerr != nil {
		return errors.Join(err, fmt.Errorf("--atomic: rolling back to revision %d: %w", target.Revision, rerr))
	}
	return fmt.Errorf("%w; --atomic rolled back to revision %d (now revision %d)", err, target.Revision, r.Record.Revision)
}

// applyWaves applies p wave by wave, filling deferred references from the
// objects of earlier waves (waiting for them until deadline; a zero
// deadline leaves absent ones unfilled, for dry runs). Before a wave, the
// Config Connector objects its objects depend on (dependsOn) must be
// ready. It returns the objects applied.
func (c *Config) applyWaves(ctx context.Context, p *plan, aopts kube.ApplyOptions, deadline time.Time) ([]*object, error) {
	live := map[*object]*unstructured.Unstructured{}
	var applied []*object
	for w := 0; w < p.waves; w++ {
		var batch []*object
		for _, o := range p.objects {
			if o.wave == w {
				batch = append(batch, o)
			}
		}
		if len(batch) == 0 {
			continue
		}
		if !deadline.IsZero() {
			if err := c.waitAfter(ctx, batch, deadline); err != nil {
				return applied, err
			}
		}
		for _, o := range batch {
			if err := c.fill(ctx, o, live, deadline); err != nil {
				return applied, err
			}
		}
		byID := make(map[identity]*object, len(batch))
		for _, o := range batch {
			byID[idOf(o.ref())] = o
		}
		var send, shared []*unstructured.Unstructured
		var sharedObjs []*object
		for _, o := range batch {
			switch {
			case o.unchanged && !aopts.DryRun:
				applied = append(applied, o)
			case stateIntoSpec(o):
				shared = append(shared, o.obj)
				sharedObjs = append(sharedObjs, o)
			default:
				send = append(send, o.obj)
			}
		}
		out, err := c.Cluster.Apply(ctx, send, aopts)
		if len(shared) > 0 && err == nil {
			// Config Connector writes the values Google Cloud chose into
			// the spec of these objects (state-into-spec: merge): they are
			// kept, and dm's values, which KCC's fields may hold too, are
			// the desired ones.
			if err = c.mergeStateIntoSpec(ctx, sharedObjs); err == nil {
				force := aopts
				force.Force = true
				var more []kube.Applied
				more, err = c.Cluster.Apply(ctx, shared, force)
				out = append(out, more...)
			}
		}
		for _, a := range out {
			o := byID[idOf(a.Ref)]
			if o == nil {
				continue
			}
			applied = append(applied, o)
			if !aopts.DryRun {
				o.rv = a.ResourceVersion
			}
			if o.target {
				// Deferred references of later waves read it.
				u, err := a.Object()
				if err != nil {
					return applied, err
				}
				live[o] = u
			}
		}
		if err != nil {
			return applied, p.annotate(err)
		}
	}
	return applied, nil
}

// stateIntoSpec reports whether o is a Config Connector object into whose
// spec KCC writes the values Google Cloud chose (annotated
// state-into-spec: merge, because a deferred reference reads them).
func stateIntoSpec(o *object) bool {
	return o.gcp && o.obj.GetAnnotations()[gcp.StateIntoSpecAnnotation] == "merge"
}

// mergeStateIntoSpec gives each of objs the spec fields its live object has
// and it lacks: the values Config Connector wrote there (an instance's
// internal IP). Applying without them would remove them, KCC would write
// them again, and a controller that restores drift would never see the
// object settle. A field removed from the template therefore stays, as
// Config Connector's state-into-spec: merge documents.
func (c *Config) mergeStateIntoSpec(ctx context.Context, objs []*object) error {
	for _, o := range objs {
		live, err := c.Cluster.Get(ctx, o.ref())
		if errors.Is(err, derrors.NotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: reading the values Config Connector wrote into its spec: %w", o.where(), err)
		}
		if ls, ok := live.Object["spec"].(map[string]any); ok {
			if ws, ok := o.obj.Object["spec"].(map[string]any); ok {
				mergeLive(ws, ls)
			}
		}
	}
	return nil
}

// mergeLive copies into want the fields of live it lacks, recursively; a
// list takes live's items' fields when it has as many items.
func mergeLive(want, live any) any {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return want
		}
		for k, lv := range l {
			if wv, ok := w[k]; ok {
				w[k] = mergeLive(wv, lv)
			} else {
				w[k] = deepCopy(lv)
			}
		}
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return want
		}
		for i := range w {
			w[i] = mergeLive(w[i], l[i])
		}
	}
	return want
}

// waitAfter waits until the Config Connector objects that the objects of
// batch depend on (metadata.dependsOn) are ready: Deployment Manager made
// a resource once those it depends on existed, and a Config Connector
// object exists in Google Cloud once it is ready.
func (c *Config) waitAfter(ctx context.Context, batch []*object, deadline time.Time) error {
	var refs []kube.ObjectRef
	seen := map[*object]bool{}
	for _, o := range batch {
		for _, t := range o.after {
			if t.gcp && !seen[t] {
				seen[t] = true
				refs = append(refs, t.ref())
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	c.logf("dm: waiting for %d Config Connector objects that others depend on to be ready", len(refs))
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := c.Cluster.Wait(wctx, refs, nil); err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", err, derrors.Unavailable)
		}
		return fmt.Errorf("metadata.dependsOn: %w", err)
	}
	return nil
}

// markUnchanged finds the objects there is no need to PATCH: the last
// deployed revision applied exactly the same object, and the live object
// still has the resourceVersion that apply answered with, so nobody (no
// controller, no kubectl) has written it since. A PATCH would change
// nothing; skipping it makes an unchanged re-deploy cost one LIST per
// kind instead of one request per object. Objects with deferred
// references, or named by one, are always applied.
func markUnchanged(p *plan, hist []*release.Record, live map[kube.ObjectRef]*metav1.PartialObjectMetadata, opts ApplyOptions) {
	// A forced apply re-applies everything, unless it is a controller's
	// resync (SkipUnchanged), which forces only to restore drift.
	if (opts.ForceConflicts && !opts.SkipUnchanged) || opts.DryRun != "" {
		return
	}
	var prev *release.Record
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Status == release.StatusDeployed {
			prev = hist[i]
			break
		}
	}
	if prev == nil || len(prev.Objects) != len(prev.Resources) {
		return
	}
	type recorded struct {
		rv  string
		obj map[string]any
	}
	before := make(map[identity]recorded, len(prev.Resources))
	for i, r := range prev.Resources {
		if r.ResourceVersion != "" {
			before[idOf(refOf(r))] = recorded{r.ResourceVersion, prev.Objects[i]}
		}
	}
	for _, o := range p.objects {
		if len(o.deferred) > 0 || o.target {
			continue
		}
		b, ok := before[idOf(o.ref())]
		m := live[o.ref()]
		if !ok || m == nil || m.GetResourceVersion() != b.rv || !reflect.DeepEqual(b.obj, o.obj.Object) {
			continue
		}
		o.unchanged, o.rv = true, b.rv
	}
}

// sameInputs returns the latest revision when it is deployed with n
// objects and was made of the same input, properties, env and template
// versions as rec; else nil.
func sameInputs(hist []*release.Record, rec *release.Record, n int) *release.Record {
	if len(hist) == 0 {
		return nil
	}
	prev := hist[len(hist)-1]
	if prev.Status != release.StatusDeployed || len(prev.Resources) != n {
		return nil
	}
	// The record went through JSON in the history: compare in that form,
	// where an empty map and none are the same.
	type inputs struct {
		Input          release.Input      `json:"input"`
		Properties     map[string]any     `json:"properties,omitempty"`
		Env            map[string]string  `json:"env,omitempty"`
		References     []expand.Reference `json:"references,omitempty"`
		Project        string             `json:"project,omitempty"`
		DeletionPolicy string             `json:"deletionPolicy,omitempty"`
	}
	a, err1 := json.Marshal(inputs{prev.Input, prev.Properties, prev.Env, prev.References, prev.Project, prev.DeletionPolicy})
	b, err2 := json.Marshal(inputs{rec.Input, rec.Properties, rec.Env, rec.References, rec.Project, rec.DeletionPolicy})
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return nil
	}
	return prev
}

// applySame applies, without a record, the objects of p that markUnchanged
// could not skip (their resourceVersion moved: a controller wrote their
// status, or someone changed them), and reports whether the server changed
// none of them. A status update is then not a new revision; drift is
// restored here and recorded by the normal path that follows.
func (c *Config) applySame(ctx context.Context, p *plan, live map[kube.ObjectRef]*metav1.PartialObjectMetadata, opts ApplyOptions) (bool, error) {
	todo := false
	for _, o := range p.objects {
		todo = todo || !o.unchanged
	}
	if !todo {
		return true, nil
	}
	if _, err := c.applyWaves(ctx, p, kube.ApplyOptions{Force: opts.ForceConflicts}, time.Now().Add(opts.referenceTimeout())); err != nil {
		return false, err
	}
	for _, o := range p.objects {
		m := live[o.ref()]
		if m == nil || m.GetResourceVersion() != o.rv {
			return false, nil
		}
	}
	return true, nil
}

// managed refuses a person's action on a deployment that a controller
// manages: the controller would undo it.
func managed(hist []*release.Record, controller string) error {
	if len(hist) == 0 {
		return nil
	}
	latest := hist[len(hist)-1]
	if controller != "" {
		// A controller takes over neither people's deployments nor
		// another instance's.
		if latest.Controller == controller || liveRecord(hist) == nil {
			return nil
		}
		by := latest.Controller
		if by == "" {
			by = "dm deploy"
		}
		return fmt.Errorf("deployment %s/%s exists and is managed by %s; it is not taken over: %w", latest.Namespace, latest.Name, by, derrors.Conflict)
	}
	if latest.Controller == "" {
		return nil
	}
	return fmt.Errorf("deployment %s/%s is managed by dm-controller through %s; change (or delete) that instead: %w",
		latest.Namespace, latest.Name, latest.Controller, derrors.Conflict)
}

// fill replaces o's deferred references by the values of the live objects
// they read.
func (c *Config) fill(ctx context.Context, o *object, live map[*object]*unstructured.Unstructured, deadline time.Time) error {
	for _, d := range o.deferred {
		if _, ok := lookupLive(live, d); !ok && !deadline.IsZero() {
			if err := c.waitField(ctx, d, live, deadline); err != nil {
				return fmt.Errorf("%s: %w", o.where(), err)
			}
		}
	}
	return fillDeferred(o.obj.Object, o.deferred, live)
}

// fillDeferred replaces the references of ds, in the strings of obj at
// their fields, by the live values that are known.
func fillDeferred(obj map[string]any, ds []deferred, live map[*object]*unstructured.Unstructured) error {
	for _, d := range ds {
		cur, ok := manifest.PointerGet(obj, d.Field)
		s, isStr := cur.(string)
		if !ok || !isStr {
			continue // filled already by an earlier reference in the same string
		}
		v, err := expand.FillRefs(s, func(text, _, _ string) (any, bool, error) {
			for _, e := range ds {
				if e.Field == d.Field && e.Ref == text {
					v, ok := lookupLive(live, e)
					return v, ok, nil
				}
			}
			return nil, false, nil
		})
		if err != nil {
			return err
		}
		manifest.PointerSet(obj, d.Field, v)
	}
	return nil
}

// lookupLive returns the value d reads, if the live object has it (and,
// for a Config Connector object's status, once the object is ready).
func lookupLive(live map[*object]*unstructured.Unstructured, d deferred) (any, bool) {
	u := live[d.target]
	if u == nil {
		return nil, false
	}
	if d.Ready && kube.StatusOf(u).Status != kube.Current {
		return nil, false
	}
	return expand.LookupPath(u.Object, d.Path)
}

// waitField polls the object d reads until it has the field d reads (and
// is ready, for a Config Connector object).
func (c *Config) waitField(ctx context.Context, d deferred, live map[*object]*unstructured.Unstructured, deadline time.Time) error {
	t := d.target
	if d.Ready {
		c.logf("dm: waiting for %s to be ready and have %s (for %s)", t.ref(), d.Path, d.Ref)
	} else {
		c.logf("dm: waiting for %s to have %s (for %s)", t.ref(), d.Path, d.Ref)
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		u, err := c.Cluster.Get(ctx, t.ref())
		if err == nil {
			live[t] = u
			if _, ok := lookupLive(live, d); ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			why := "the field never appeared"
			switch {
			case err != nil:
				why = err.Error()
			case d.Ready:
				st := kube.StatusOf(u)
				if st.Status != kube.Current {
					why = fmt.Sprintf("it is not ready: %s: %s", st.Status, st.Message)
					// Config Connector has yet to make the resource: the
					// next run may find it ready.
					return fmt.Errorf("deferred reference %s: %s has no %s after the timeout (%s): %w", d.Ref, t.where(), d.Path, why, derrors.Unavailable)
				}
				why = "the field never appeared in the ready object"
			}
			return fmt.Errorf("deferred reference %s: %s has no %s after the timeout (%s): %w", d.Ref, t.where(), d.Path, why, derrors.LimitExceeded)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deferred reference %s: waiting for %s: %w", d.Ref, t.where(), ctx.Err())
		case <-tick.C:
		}
	}
}

// wait waits until every object of p is Current, printing one line per
// status change.
func (c *Config) wait(ctx context.Context, p *plan, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	refs := make([]kube.ObjectRef, len(p.objects))
	for i, o := range p.objects {
		refs[i] = o.ref()
	}
	err := c.Cluster.Wait(wctx, refs, func(s kube.Status) {
		if s.Message != "" {
			c.logf("dm: %s: %s: %s", s.Ref, s.Status, s.Message)
		} else {
			c.logf("dm: %s: %s", s.Ref, s.Status)
		}
	})
	if err != nil {
		return fmt.Errorf("waiting %s for the objects to be ready: %w", timeout, p.annotate(err))
	}
	return nil
}

// checkOwnership refuses objects that exist and belong to no dm deployment
// (unless adopt) or to another one.
func checkOwnership(objs []*object, live map[kube.ObjectRef]*metav1.PartialObjectMetadata, ns, name string, adopt bool) error {
	var errs []error
	for _, o := range objs {
		m := live[o.ref()]
		if m == nil {
			continue
		}
		ons, oname, ok := owner(m)
		switch {
		case ok && ons == ns && oname == driver.DeploymentLabel(name):
		case ok:
			errs = append(errs, fmt.Errorf("%s exists and belongs to dm deployment %s/%s; it is not taken over: %w", o.where(), ons, oname, derrors.Conflict))
		case !adopt:
			errs = append(errs, fmt.Errorf("%s exists and no dm deployment owns it; re-run with --adopt to take it over: %w", o.where(), derrors.Conflict))
		}
	}
	return errors.Join(errs...)
}

// checkCRDs refuses to delete CRDs among refs that still have custom
// resources, unless allowed.
func (c *Config) checkCRDs(ctx context.Context, refs []kube.ObjectRef, allowed bool, doing string) error {
	if allowed {
		return nil
	}
	deleting := make(map[identity]bool, len(refs))
	for _, ref := range refs {
		deleting[idOf(ref)] = true
	}
	var errs []error
	for _, ref := range refs {
		if ref.Group != "apiextensions.k8s.io" || ref.Kind != "CustomResourceDefinition" {
			continue
		}
		crd, err := c.Cluster.Get(ctx, ref)
		if errors.Is(err, derrors.NotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", doing, ref, err)
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		crs, err := c.customResources(ctx, plural+"."+group, scope == "Namespaced", deleting)
		if err != nil {
			return fmt.Errorf("%s %s: listing its custom resources (--prune-crds skips this check): %w", doing, ref, err)
		}
		if len(crs) > 0 {
			errs = append(errs, fmt.Errorf("%s %s would delete its %d custom resources (such as %s); re-run with --prune-crds to allow it: %w",
				doing, ref, len(crs), kube.RefOf(crs[0]), derrors.Conflict))
		}
	}
	return errors.Join(errs...)
}

// customResources lists the custom resources of a kind (cluster-wide, or
// for a namespaced kind in every namespace) other than those in except,
// which are being deleted anyway.
func (c *Config) customResources(ctx context.Context, kind string, namespaced bool, except map[identity]bool) ([]*unstructured.Unstructured, error) {
	namespaces := []string{""}
	if namespaced {
		nss, err := c.Cluster.List(ctx, "", "", []string{"namespaces"})
		if err != nil {
			return nil, err
		}
		namespaces = namespaces[:0]
		for _, ns := range nss {
			namespaces = append(namespaces, ns.GetName())
		}
	}
	var out []*unstructured.Unstructured
	for _, ns := range namespaces {
		crs, err := c.Cluster.List(ctx, ns, "", []string{kind})
		if err != nil {
			return nil, err
		}
		for _, cr := range crs {
			if !except[idOf(kube.RefOf(cr))] {
				out = append(out, cr)
			}
		}
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
