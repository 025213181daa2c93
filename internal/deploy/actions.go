package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/manifest"
	"github.com/dmhq/dm/internal/manifest/adopt"
)

// DeployOptions are Deploy's options.
type DeployOptions struct {
	ApplyOptions
	// Name is the deployment's name.
	Name string
	// Source is what to deploy.
	Source Source
	// Upgrade updates the deployment if it exists (helm upgrade --install).
	Upgrade bool
	// NameDefaulted says that Name is a default (the configuration
	// file's or template's name), not one the user gave: Google Cloud
	// resources whose names read env.deployment are then refused, naming
	// them and --name, since Deployment Manager named them after the
	// deployment it had.
	NameDefaulted bool
}

// Deploy deploys a new deployment: revision 1, or the next revision when
// the history holds only failed or interrupted revisions or a deployment
// deleted with --keep-history. A deployment that exists is an error that
// points to dm update, unless Upgrade.
func (c *Config) Deploy(ctx context.Context, opts DeployOptions) (*Result, error) {
	return retryRaced(opts.WaitForLock, func(until time.Time) (*Result, error) { return c.deploy(ctx, opts, until) })
}

func (c *Config) deploy(ctx context.Context, opts DeployOptions, until time.Time) (*Result, error) {
	ns := c.namespace()
	// What to deploy does not depend on the history: the history is read
	// while the templates expand. Only the expansion's warnings wait, so
	// that the two do not write the log at once.
	type read struct {
		hist []*release.Record
		err  error
	}
	histc := make(chan read, 1)
	go func() {
		hist, err := c.actionHistory(ctx, ns, opts.Name, opts.DryRun, lock{until: until, refuse: func(hist []*release.Record) error {
			if liveRecord(hist) != nil {
				return managed(hist, opts.Controller)
			}
			return nil
		}})
		histc <- read{hist, err}
	}()
	src := opts.Source
	x, err := c.expandSource(ctx, opts.Name, &src)
	h := <-histc
	if h.err != nil {
		return nil, h.err
	}
	if liveRecord(h.hist) != nil {
		if err := managed(h.hist, opts.Controller); err != nil {
			return nil, err
		}
	}
	if live := liveRecord(h.hist); live != nil && !opts.Upgrade {
		return nil, fmt.Errorf("deployment %s exists in namespace %s (revision %d, %s); change it with dm update %s, or deploy with --upgrade: %w",
			opts.Name, ns, live.Revision, live.Status, opts.Name, derrors.AlreadyExists)
	}
	if err != nil {
		return nil, err
	}
	if opts.NameDefaulted {
		if err := c.checkDeploymentName(ctx, opts, src, x); err != nil {
			return nil, err
		}
	}
	c.warn(x)
	if liveRecord(h.hist) != nil {
		return c.update(ctx, opts.Name, h.hist, src, x, opts.ApplyOptions)
	}
	return c.release(ctx, opts.Name, h.hist, src, x, "Deploy complete", opts.ApplyOptions)
}

// checkDeploymentName refuses a deployment named by default whose Google
// Cloud resources' names read env.deployment: src (as expanded into x) is
// expanded again under another name and the names compared.
func (c *Config) checkDeploymentName(ctx context.Context, opts DeployOptions, src Source, x *expanded) error {
	var sources []string
	if src.Input.Ref == "" && src.Input.Chart == nil {
		sources = append(sources, src.Input.Config)
		for _, b := range src.Input.Imports {
			sources = append(sources, b)
		}
	}
	return adopt.CheckDeploymentName(x.x, opts.Name, "--name", gcp.Options{Project: src.Project}, sources, func(d string) (*expand.Result, error) {
		probe := src
		probe.Deployment = d
		if probe.Input.Ref != "" && opts.Source.Name == "" {
			probe.Name = d // a reference's resource is named after the deployment
		}
		return c.Expander.Expand(ctx, probe)
	})
}

// liveRecord returns the latest revision of a deployment that is deployed
// (some revision was deployed and it was not deleted since), or nil.
func liveRecord(hist []*release.Record) *release.Record {
	for i := len(hist) - 1; i >= 0; i-- {
		switch hist[i].Status {
		case release.StatusDeleting:
			return nil
		case release.StatusDeployed, release.StatusSuperseded:
			return hist[len(hist)-1]
		}
	}
	return nil
}

// UpdateOptions are Update's options.
type UpdateOptions struct {
	ApplyOptions
	Name string
	// Source, when its Input has a Ref or Config, is what to deploy;
	// otherwise the latest revision's input is expanded again (a reference re-resolves:
	// redis:v1 picks up a new patch release).
	Source Source
	// ReuseProperties merges Source.Properties over the latest
	// revision's properties instead of replacing them.
	ReuseProperties bool
}

// Update deploys a new revision of an existing deployment and prunes the
// objects the new revision no longer has.
func (c *Config) Update(ctx context.Context, opts UpdateOptions) (*Result, error) {
	return retryRaced(opts.WaitForLock, func(until time.Time) (*Result, error) { return c.updateOnce(ctx, opts, until) })
}

func (c *Config) updateOnce(ctx context.Context, opts UpdateOptions, until time.Time) (*Result, error) {
	ns := c.namespace()
	hist, err := c.actionHistory(ctx, ns, opts.Name, opts.DryRun, lock{until: until, refuse: refuseManaged(opts.Controller)})
	if err != nil {
		return nil, err
	}
	if len(hist) == 0 {
		return nil, fmt.Errorf("deployment %s not found in namespace %s; deploy it with dm deploy: %w", opts.Name, ns, derrors.NotFound)
	}
	if err := managed(hist, opts.Controller); err != nil {
		return nil, err
	}
	src := opts.Source
	latest := hist[len(hist)-1]
	if src.Input.Ref == "" && src.Input.Config == "" {
		if ch := latest.Input.Chart; ch != nil && len(ch.Files) == 0 && latest.Input.Ref == "" && latest.Input.Config == "" {
			// An imported Helm release whose chart was not recorded: there
			// is nothing to render again.
			return nil, fmt.Errorf("deployment %s was imported from %s (chart %s %s) without the chart's files (a chart with subcharts, which Helm's record does not keep, or an import by an older dm), so dm update needs a template reference or configuration to deploy instead: %w",
				opts.Name, ch.From, ch.Name, ch.Version, derrors.InvalidArgument)
		}
		// The same input, expanded where this dm expands now.
		srv := src.Input.Server
		src.Input = latest.Input
		src.Input.Server = srv
		if src.Name == "" {
			src.Name = topName(latest.Layout)
		}
	}
	if src.Project == "" && src.Env["project"] == "" {
		src.Project = latest.Project
	}
	if src.DeletionPolicy == "" {
		src.DeletionPolicy = latest.DeletionPolicy
	}
	if opts.ReuseProperties {
		props := deepCopy(latest.Properties)
		merged, _ := props.(map[string]any)
		if merged == nil {
			merged = map[string]any{}
		}
		mergeValues(merged, src.Properties)
		src.Properties = merged
	}
	x, err := c.expand(ctx, opts.Name, &src)
	if err != nil {
		return nil, err
	}
	return c.update(ctx, opts.Name, hist, src, x, opts.ApplyOptions)
}

func (c *Config) update(ctx context.Context, name string, hist []*release.Record, src Source, x *expanded, opts ApplyOptions) (*Result, error) {
	res, err := c.release(ctx, name, hist, src, x, "Update complete", opts)
	if res == nil || len(hist) == 0 {
		return res, err
	}
	res.Previous = topResolved(hist[len(hist)-1])
	return res, err
}

// release applies src, expanded as x, as the next revision.
// actionHistory reads the history for an action: waiting for a holder
// (lockHistory) unless it is a dry run, which changes nothing.
func (c *Config) actionHistory(ctx context.Context, ns, name, dryRun string, lk lock) ([]*release.Record, error) {
	if dryRun != "" {
		return c.history(ctx, ns, name)
	}
	return c.lockHistory(ctx, ns, name, lk)
}

// refuseManaged is the refusal of an action on a deployment that the
// holder of its lease (dm-controller, for another instance or for a
// person's dm) manages: it is refused once the holder is done in any
// case, so it is refused at once.
func refuseManaged(controller string) func([]*release.Record) error {
	return func(hist []*release.Record) error {
		if len(hist) == 0 {
			return nil
		}
		return managed(hist, controller)
	}
}

func (c *Config) release(ctx context.Context, name string, hist []*release.Record, src Source, ex *expanded, desc string, opts ApplyOptions) (*Result, error) {
	x, p := ex.x, ex.p
	if resolved := resolvedRef(x.References, src.Input.Ref); resolved != "" {
		prev := ""
		if len(hist) > 0 {
			prev = topResolved(hist[len(hist)-1])
		}
		switch {
		case prev == "":
			c.logf("dm: %s resolved to %s", src.Input.Ref, resolved)
		case prev != resolved:
			c.logf("dm: %s now resolves to %s (was %s)", src.Input.Ref, resolved, prev)
		default:
			c.logf("dm: %s still resolves to %s", src.Input.Ref, resolved)
		}
	}
	rec := &release.Record{
		Description:    desc,
		Input:          src.Input,
		Properties:     src.Properties,
		Env:            src.Env,
		References:     x.References,
		Layout:         x.Layout,
		Project:        src.Project,
		DeletionPolicy: src.DeletionPolicy,
	}
	// Hooks run as Helm's: install hooks when nothing is deployed, upgrade
	// hooks over a live revision.
	p.action = actionInstall
	if liveRecord(hist) != nil {
		p.action = actionUpgrade
	}
	res, err := c.apply(ctx, name, hist, p, rec, opts)
	if res != nil {
		res.Ref, res.Resolved = src.Input.Ref, topResolved(rec)
	}
	return res, err
}

// expanded is a source expanded: the engine's result and the objects made
// of it.
type expanded struct {
	x *expand.Result
	p *plan
}

// expand expands src as deployment name, makes its objects and logs the
// engine's warnings.
func (c *Config) expand(ctx context.Context, name string, src *Source) (*expanded, error) {
	x, err := c.expandSource(ctx, name, src)
	if err != nil {
		return nil, err
	}
	c.warn(x)
	return x, nil
}

// warn logs the engine's warnings and the conversion's.
func (c *Config) warn(x *expanded) {
	for _, w := range slices.Concat(x.x.Warnings, x.p.warnings) {
		c.logf("dm: warning: %s", w)
	}
}

// expandSource is expand without the log.
func (c *Config) expandSource(ctx context.Context, name string, src *Source) (*expanded, error) {
	src.Deployment = name
	src.Namespace = c.namespace()
	if src.Input.Ref != "" && src.Name == "" {
		// A template deployed by reference is one resource named after
		// the deployment, so two deployments of one template differ.
		src.Name = name
	}
	if src.Project != "" {
		// Templates read the project as env.project.
		src.Env = maps.Clone(src.Env)
		if src.Env == nil {
			src.Env = map[string]string{}
		}
		src.Env["project"] = src.Project
	}
	xsrc := *src
	if isChartInput(src.Input) {
		xsrc.Input = chartInput(src.Input)
	}
	x, err := c.Expander.Expand(ctx, xsrc)
	if err != nil {
		return nil, err
	}
	if src.Project == "" && manifest.HasGCP(x) {
		src.Project = src.Env["project"]
		if src.Project == "" {
			// As Config Connector resolves it: the namespace's
			// annotation; templates read it too, so they expand again.
			if src.Project = c.namespaceProject(ctx); src.Project != "" {
				return c.expandSource(ctx, name, src)
			}
		}
	}
	p, err := objectsOf(x, name, src.Namespace, manifest.Options{Project: src.Project, DeletionPolicy: src.DeletionPolicy})
	if err != nil {
		return nil, err
	}
	return &expanded{x, p}, nil
}

// namespaceProject is the Google Cloud project the deployment's namespace
// names in its cnrm.cloud.google.com/project-id annotation, or "" (none,
// or the namespace cannot be read).
func (c *Config) namespaceProject(ctx context.Context) string {
	u, err := c.Cluster.Get(ctx, kube.ObjectRef{Version: "v1", Kind: "Namespace", Name: c.namespace()})
	if err != nil {
		return ""
	}
	return u.GetAnnotations()[gcp.ProjectAnnotation]
}

// isChartInput reports whether in is an imported Helm release's recorded
// chart, to render again.
func isChartInput(in release.Input) bool {
	return in.Chart != nil && len(in.Chart.Files) > 0 && in.Ref == "" && in.Config == ""
}

// chartInput is what the expander renders for a recorded chart: its files
// as imports under a directory named after the chart, and their
// Chart.yaml as the reference, so that the expander renders it with the
// helm engine the program attached (as the deployment's resource, the
// release name).
func chartInput(in release.Input) release.Input {
	dir := in.Chart.Name
	if dir == "" || strings.ContainsAny(dir, `/\`) || dir == "." || dir == ".." {
		dir = "chart"
	}
	imports := make(map[string]string, len(in.Chart.Files))
	for p, c := range in.Chart.Files {
		imports[dir+"/"+p] = c
	}
	return release.Input{Ref: dir + "/Chart.yaml", Imports: imports, Registry: in.Registry, Server: in.Server}
}

// topResolved is the canonical reference the input's reference resolved
// to, if the input is a reference.
func topResolved(r *release.Record) string { return resolvedRef(r.References, r.Input.Ref) }

// resolvedRef is the canonical reference ref resolved to among refs.
func resolvedRef(refs []expand.Reference, ref string) string {
	if ref == "" {
		return ""
	}
	for _, r := range refs {
		if r.Ref == ref {
			return r.Resolved
		}
	}
	return ""
}

// topName is the name of the single top resource of a layout (the
// resource name a reference was expanded as), or "".
func topName(l expand.Layout) string {
	if len(l.Resources) == 1 {
		return l.Resources[0].Name
	}
	return ""
}

// Rollback deploys a new revision with the objects revision applied (not
// a new expansion). revision 0 means the revision before the current one.
func (c *Config) Rollback(ctx context.Context, name string, revision int, opts ApplyOptions) (*Result, error) {
	return retryRaced(opts.WaitForLock, func(until time.Time) (*Result, error) { return c.rollback(ctx, name, revision, opts, until) })
}

func (c *Config) rollback(ctx context.Context, name string, revision int, opts ApplyOptions, until time.Time) (*Result, error) {
	ns := c.namespace()
	hist, err := c.actionHistory(ctx, ns, name, opts.DryRun, lock{until: until, refuse: refuseManaged(opts.Controller)})
	if err != nil {
		return nil, err
	}
	if len(hist) == 0 {
		return nil, fmt.Errorf("deployment %s not found in namespace %s: %w", name, ns, derrors.NotFound)
	}
	if err := managed(hist, opts.Controller); err != nil {
		return nil, err
	}
	var target *release.Record
	if revision == 0 {
		for i := len(hist) - 1; i >= 0 && target == nil; i-- {
			if hist[i].Status == release.StatusSuperseded {
				target = hist[i]
			}
		}
		if target == nil {
			return nil, fmt.Errorf("deployment %s has no earlier deployed revision to roll back to; name one (dm history %s): %w", name, name, derrors.NotFound)
		}
	} else {
		for _, r := range hist {
			if r.Revision == revision {
				target = r
			}
		}
		if target == nil {
			return nil, fmt.Errorf("deployment %s has no revision %d (dm history %s): %w", name, revision, name, derrors.NotFound)
		}
	}
	if len(target.Objects) == 0 {
		return nil, fmt.Errorf("%s applied no objects; there is nothing to roll back to: %w", target, derrors.InvalidArgument)
	}
	rec := &release.Record{
		Description:    fmt.Sprintf("Rollback to %d", target.Revision),
		Input:          target.Input,
		Properties:     target.Properties,
		Env:            target.Env,
		References:     target.References,
		Layout:         target.Layout,
		Project:        target.Project,
		DeletionPolicy: target.DeletionPolicy,
		Outputs:        target.Outputs,
	}
	// The target's rollback hooks run, as Helm runs the target release's.
	p := planOfRecord(target)
	p.action = actionRollback
	return c.apply(ctx, name, hist, p, rec, opts)
}

// DeleteOptions are Delete's options.
type DeleteOptions struct {
	// KeepHistory keeps the records (the latest marked deleting).
	KeepHistory bool
	// Wait waits until the objects are gone, up to Timeout.
	Wait    bool
	Timeout time.Duration
	// PruneCRDs allows deleting CRDs that still have custom resources.
	PruneCRDs bool
	// Controller is set by dm-controller, which may delete a deployment
	// it manages (see ApplyOptions.Controller).
	Controller string
	// WaitForLock is as for ApplyOptions.
	WaitForLock time.Duration
	// DeletionPolicy, when set (gcp.PolicyAbandon or gcp.PolicyDelete,
	// gcloud's deployments delete --delete-policy), is written on every
	// Config Connector object of the deployment before anything is
	// deleted, so that Config Connector abandons or deletes every Google
	// Cloud resource as it says, whatever each object carried.
	DeletionPolicy string
	// Confirm, when set and DeletionPolicy is not, is called before
	// anything changes with the Config Connector objects whose Google
	// Cloud resources Config Connector would delete with them (their
	// policy is not abandon), when there are any; an error stops the
	// deletion and is returned.
	Confirm func(objs []kube.ObjectRef) error
}

// Delete deletes a deployment's objects, in reverse order, and its
// history unless KeepHistory. Only objects that carry the deployment's
// labels and appear in its records are deleted.
//
// The latest record, marked deleting, carries the delete's lease until the
// objects are gone: no other action applies meanwhile.
func (c *Config) Delete(ctx context.Context, name string, opts DeleteOptions) ([]kube.ObjectRef, error) {
	return retryRaced(opts.WaitForLock, func(until time.Time) ([]kube.ObjectRef, error) {
		return c.deleteDeployment(ctx, name, opts, until)
	})
}

// deleteDeployment implements Delete.
func (c *Config) deleteDeployment(ctx context.Context, name string, opts DeleteOptions, until time.Time) ([]kube.ObjectRef, error) {
	ns := c.namespace()
	hist, err := c.lockHistory(ctx, ns, name, lock{until: until, refuse: refuseManaged(opts.Controller)})
	if err != nil {
		return nil, err
	}
	if len(hist) == 0 {
		return nil, fmt.Errorf("deployment %s not found in namespace %s: %w", name, ns, derrors.NotFound)
	}
	if err := managed(hist, opts.Controller); err != nil {
		return nil, err
	}
	cands := pruneCandidates(hist, true)
	refs := make([]kube.ObjectRef, 0, len(cands))
	for _, r := range cands {
		refs = append(refs, refOf(r))
	}
	live, err := c.Cluster.Existing(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("reading existing objects: %w", err)
	}
	var del []kube.ObjectRef
	for i := len(refs) - 1; i >= 0; i-- {
		m := live[refs[i]]
		if m == nil {
			continue
		}
		if ons, olabel, ok := owner(m); ok && ons == ns && olabel == driver.DeploymentLabel(name) {
			del = append(del, refs[i])
		} else {
			c.logf("dm: %s is no longer labelled as part of %s; left in place", refs[i], name)
		}
	}
	if err := c.checkCRDs(ctx, del, opts.PruneCRDs, "deleting"); err != nil {
		return nil, err
	}
	if err := c.deletionPolicy(ctx, del, live, opts); err != nil {
		return nil, fmt.Errorf("deleting %s (nothing was deleted): %w", name, err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	hooks, err := c.deleteHookPlan(ctx, hist, name)
	if err != nil {
		return nil, err
	}
	latest := hist[len(hist)-1]
	before := *latest
	latest.Status = release.StatusDeleting
	latest.Description = "Deleting"
	latest.Updated = c.now()
	latest.Lease = c.newLease(operations[actionDelete], opts.Controller)
	if err := c.History.Update(ctx, latest); err != nil {
		if errors.Is(err, driver.ErrConflict) || errors.Is(err, driver.ErrNotFound) {
			return nil, &errRaced{derrors.Errorf(ErrInProgress, "another dm changed %s while this one was about to delete it; re-run", latest)}
		}
		return nil, fmt.Errorf("recording %s deleting: %w", latest, err)
	}
	actx, h, err := c.holdLease(ctx, latest)
	if err != nil {
		return nil, err
	}
	// The record's final write runs even if ctx was canceled (Ctrl-C).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if hooks != nil {
		if err := c.runHooks(actx, hooks, "pre-"+actionDelete, false, time.Now().Add(timeout)); err != nil {
			// Nothing was deleted: the record is as it was.
			latest.Status, latest.Description, latest.Updated = before.Status, before.Description, c.now()
			return nil, errors.Join(fmt.Errorf("deleting %s (nothing was deleted): %w", name, err), h.finish(wctx, latest))
		}
	}
	if err := c.Cluster.Delete(actx, del, kube.DeleteOptions{Wait: opts.Wait, Timeout: timeout}); err != nil {
		// Marked deleting: the next dm delete goes on.
		return nil, errors.Join(fmt.Errorf("deleting %s: %w", name, err), h.finish(wctx, latest))
	}
	for _, r := range del {
		c.logf("dm: deleted %s", r)
	}
	if hooks != nil {
		if err := c.runHooks(actx, hooks, "post-"+actionDelete, false, time.Now().Add(timeout)); err != nil {
			// The objects are gone; the history stays, marked deleting,
			// for the next dm delete to remove.
			return del, errors.Join(fmt.Errorf("deleting %s: the objects were deleted, but: %w", name, err), h.finish(wctx, latest))
		}
	}
	if opts.KeepHistory {
		latest.Description = "Deleted"
		latest.Updated = c.now()
		if err := h.finish(wctx, latest); err != nil {
			return del, fmt.Errorf("recording %s deleted: %w", latest, err)
		}
		return del, nil
	}
	// The records go, the latest (holding the lease) last.
	if err := h.release(); err != nil {
		return del, err
	}
	var errs []error
	for _, r := range hist {
		if err := c.History.Delete(ctx, ns, name, r.Revision); err != nil && !errors.Is(err, derrors.NotFound) {
			errs = append(errs, err)
		}
	}
	return del, errors.Join(errs...)
}

// deletionPolicy applies opts.DeletionPolicy to the Config Connector
// objects of del (live holds their metadata), or asks opts.Confirm about
// those whose Google Cloud resources deleting them deletes.
func (c *Config) deletionPolicy(ctx context.Context, del []kube.ObjectRef, live map[kube.ObjectRef]*metav1.PartialObjectMetadata, opts DeleteOptions) error {
	var kcc, deleting []kube.ObjectRef
	for _, r := range del {
		if !kube.IsConfigConnector(r.Group) {
			continue
		}
		kcc = append(kcc, r)
		if m := live[r]; m != nil && gcp.DeletionPolicyOf(m.Annotations) != gcp.PolicyAbandon {
			deleting = append(deleting, r)
		}
	}
	switch {
	case opts.DeletionPolicy != "":
		if opts.DeletionPolicy != gcp.PolicyAbandon && opts.DeletionPolicy != gcp.PolicyDelete {
			return derrors.Errorf(derrors.InvalidArgument, "deletion policy %q: want %s or %s", opts.DeletionPolicy, gcp.PolicyAbandon, gcp.PolicyDelete)
		}
		if len(kcc) == 0 {
			return nil
		}
		value := gcp.DeletionPolicyValue(opts.DeletionPolicy)
		if _, err := c.Cluster.Annotate(ctx, kcc, gcp.DeletionPolicyAnnotation, value); err != nil {
			return err
		}
		does := "deletes"
		if opts.DeletionPolicy == gcp.PolicyAbandon {
			does = "leaves"
		}
		c.logf("dm: %d Config Connector objects annotated %s: %s: Config Connector %s their Google Cloud resources", len(kcc), gcp.DeletionPolicyAnnotation, value, does)
	case opts.Confirm != nil && len(deleting) > 0:
		return opts.Confirm(deleting)
	}
	return nil
}

// deleteHookPlan returns the delete hooks of the deployed revision of
// hist, prepared and checked (an existing object that is not this
// deployment's is refused), or nil when it has none.
func (c *Config) deleteHookPlan(ctx context.Context, hist []*release.Record, name string) (*plan, error) {
	var deployed *release.Record
	for i := len(hist) - 1; i >= 0 && deployed == nil; i-- {
		if hist[i].Status == release.StatusDeployed {
			deployed = hist[i]
		}
	}
	if deployed == nil || len(deployed.Hooks) == 0 {
		return nil, nil
	}
	p := planOfRecord(deployed)
	p.objects, p.action = nil, actionDelete
	hooks := p.actionHooks(actionDelete)
	if len(hooks) == 0 {
		return nil, nil
	}
	if err := p.prepare(ctx, c.Cluster); err != nil {
		return nil, err
	}
	refs := make([]kube.ObjectRef, len(hooks))
	for i, o := range hooks {
		refs[i] = o.ref()
	}
	live, err := c.Cluster.Existing(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("reading existing hooks: %w", err)
	}
	if err := checkOwnership(hooks, live, c.namespace(), name, false); err != nil {
		return nil, err
	}
	return p, nil
}

// mergeValues merges src into dst, recursing into mappings both have.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
