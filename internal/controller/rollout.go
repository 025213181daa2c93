package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"golang.org/x/mod/semver"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/rollout"
)

// ReasonWaitingForWave is the Ready reason of an instance a roll-out
// policy keeps on the patch before, until its wave goes.
const ReasonWaitingForWave = "WaitingForWave"

// rolloutPoll is how often a roll-out under way is looked at besides the
// watches: the instances of defined kinds are not watched by it.
const rolloutPoll = 5 * time.Second

// rolloutResync is how often an idle policy asks the registry for a new
// patch besides the registry's notifications.
const rolloutResync = 10 * time.Minute

// policy is a TemplateRolloutPolicy or a RolloutPolicy, seen alike.
type policy struct {
	obj    client.Object
	spec   *v1alpha1.RolloutPolicySpec
	status *v1alpha1.RolloutPolicyStatus
}

// kind is the policy's kind, for messages.
func (p policy) kind() string {
	if p.obj.GetNamespace() == "" {
		return "TemplateRolloutPolicy"
	}
	return "RolloutPolicy"
}

// name is the policy as messages name it: KIND NAME or KIND NS/NAME.
func (p policy) name() string {
	if ns := p.obj.GetNamespace(); ns != "" {
		return p.kind() + " " + ns + "/" + p.obj.GetName()
	}
	return p.kind() + " " + p.obj.GetName()
}

func asPolicy(o client.Object) policy {
	switch p := o.(type) {
	case *v1alpha1.TemplateRolloutPolicy:
		return policy{obj: p, spec: &p.Spec, status: &p.Status}
	case *v1alpha1.RolloutPolicy:
		return policy{obj: p, spec: &p.Spec, status: &p.Status}
	}
	panic(fmt.Sprintf("not a roll-out policy: %T", o))
}

// policies lists the policies an instance of namespace ns may be governed
// by (every namespace's when ns is ""), with their series; a policy whose
// template does not parse governs nothing.
func policies(ctx context.Context, c client.Reader, ns string, def resolve.Registry) ([]policy, []rollout.Policy, error) {
	var cl v1alpha1.TemplateRolloutPolicyList
	if err := c.List(ctx, &cl); err != nil {
		return nil, nil, fmt.Errorf("listing TemplateRolloutPolicies: %w", err)
	}
	var nl v1alpha1.RolloutPolicyList
	opts := []client.ListOption{}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, &nl, opts...); err != nil {
		return nil, nil, fmt.Errorf("listing RolloutPolicies: %w", err)
	}
	var ps []policy
	var rs []rollout.Policy
	add := func(p policy) {
		s, err := rollout.PolicySeries(p.spec.Template, def)
		if err != nil || !p.obj.GetDeletionTimestamp().IsZero() {
			return
		}
		ps = append(ps, p)
		rs = append(rs, rollout.Policy{Namespace: p.obj.GetNamespace(), Name: p.obj.GetName(), Series: s})
	}
	for i := range cl.Items {
		add(asPolicy(&cl.Items[i]))
	}
	for i := range nl.Items {
		add(asPolicy(&nl.Items[i]))
	}
	return ps, rs, nil
}

// followsPatches reports whether ti follows its series' patches: a
// policy may move it. Manual, suspended and deleted instances are left
// alone; a reference pinned by digest or to an exact version has no
// series.
func followsPatches(ti *v1alpha1.TemplateInstance, def resolve.Registry) (rollout.Series, string, bool) {
	if ti.Spec.UpdatePolicy == v1alpha1.UpdateManual || ti.Spec.Suspend || !ti.DeletionTimestamp.IsZero() {
		return "", "", false
	}
	return rollout.SeriesOf(ti.Spec.Template, def)
}

// waveHold is what a governing policy allows an instance.
type waveHold struct {
	policy string
	// version is the patch the instance may run; pin the exact reference
	// (reference:version) expanded.
	version, pin string
	held         bool
	wave         string
	rolling      string
}

// message is the Ready message of a held instance.
func (h *waveHold) message() string {
	w := ""
	if h.wave != "" {
		w = ", wave " + h.wave
	}
	return fmt.Sprintf("held at %s by %s%s while %s rolls out", h.version, h.policy, w, h.rolling)
}

// rolloutHold returns what the policy governing ti allows it; nil when no
// policy governs it.
func (r *InstanceReconciler) rolloutHold(ctx context.Context, ti *v1alpha1.TemplateInstance) (*waveHold, error) {
	series, floor, ok := followsPatches(ti, r.defRegistry)
	if !ok {
		return nil, nil
	}
	ps, rs, err := policies(ctx, r.client, ti.Namespace, r.defRegistry)
	if err != nil {
		return nil, err
	}
	i := rollout.Governing(ti.Namespace, series, rs)
	if i < 0 {
		return nil, nil
	}
	p := ps[i]
	base, _, _ := strings.Cut(string(series), ":")
	t := rollout.TargetOf(p.status, ti.Namespace+"/"+ti.Name)
	h := &waveHold{policy: p.name(), version: t.Version, held: t.Held, wave: t.Wave, rolling: p.status.Version}
	digest := t.Digest
	if h.version == "" {
		// The policy has not looked at the registry yet: the instance
		// keeps what it runs, so that no patch gets ahead of it.
		v := versionOf(ti.Status.Resolved, base)
		if v == "" {
			return nil, nil
		}
		h.version, digest = v, ti.Status.Digest
	}
	if floor != "" && semver.Compare(floor, h.version) > 0 {
		// The reference asks for a patch above the one the policy
		// allows: it resolves as it says.
		return nil, nil
	}
	// A version alone resolves to its highest patch: the digest pins it.
	h.pin = base + ":" + h.version
	if digest != "" {
		h.pin += "@" + digest
	}
	return h, nil
}

// versionOf is the version of resolved (host/owner/repo/t:v1.2.4) when it
// is a version of base (host/owner/repo/t), "" otherwise.
func versionOf(resolved, base string) string {
	b, v, ok := strings.Cut(resolved, ":")
	if !ok || b != base {
		return ""
	}
	return v
}

// RolloutReconciler moves the patches of one template MAJOR.MINOR through
// the waves of a TemplateRolloutPolicy (or of a RolloutPolicy): all of its
// state is the policy's status, so that a restarted or failed-over
// controller goes on from it.
type RolloutReconciler struct {
	client client.Client
	opts   Options
	def    resolve.Registry
	log    *slog.Logger
	events record.EventRecorder
	// namespaced is true for RolloutPolicies.
	namespaced bool
	// instances reconciles TemplateInstances; kinds those of defined
	// kinds.
	instances chan<- event.GenericEvent
	kinds     *definedKinds
	metrics   *rolloutMetrics
	now       func() time.Time
}

// covered is an instance a policy covers, with what it is.
type covered struct {
	obj client.Object
	// events reconciles it.
	events chan<- event.GenericEvent
	ti     *v1alpha1.TemplateInstance
}

// Reconcile steps one policy's roll-out on.
func (r *RolloutReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj client.Object = &v1alpha1.TemplateRolloutPolicy{}
	if r.namespaced {
		obj = &v1alpha1.RolloutPolicy{}
	}
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	p := asPolicy(obj)
	log := r.log.With("policy", p.name())
	before := p.status.DeepCopy()
	p.status.ObservedGeneration = obj.GetGeneration()
	series, err := rollout.PolicySeries(p.spec.Template, r.def)
	if err != nil {
		r.conditions(p, err)
		return ctrl.Result{}, r.writeStatus(ctx, p, before)
	}
	latest, digest, lerr := r.latest(ctx, obj.GetNamespace(), series)
	if lerr != nil {
		log.Info("reading the template's patches", "err", lerr)
	}
	cov, in, obs, err := r.covered(ctx, p, series)
	if err != nil {
		return ctrl.Result{}, err
	}
	out, err := rollout.Step(p.status, rollout.Input{Spec: p.spec, Latest: latest, LatestDigest: digest, Instances: in, Observed: obs, Now: r.now()})
	r.conditions(p, errors.Join(err, lerr))
	if !equality.Semantic.DeepEqual(before, p.status) {
		if err := r.writeStatus(ctx, p, before); err != nil {
			return ctrl.Result{}, err
		}
		// Told only once written: a conflict retries the step, and
		// events are not doubled.
		r.record(p, out.Events, cov)
		// The write comes back through the watch, and the next pass,
		// with a cache that has it, moves the instances.
		return ctrl.Result{RequeueAfter: requeueOf(p.status, out)}, nil
	}
	r.nudge(ctx, p, cov, obs)
	return ctrl.Result{RequeueAfter: requeueOf(p.status, out)}, nil
}

func requeueOf(st *v1alpha1.RolloutPolicyStatus, out rollout.Output) time.Duration {
	if !rollout.InProgress(st) {
		return rolloutResync
	}
	if out.RequeueAfter > 0 && out.RequeueAfter < rolloutPoll {
		return out.RequeueAfter
	}
	return rolloutPoll
}

// latest is the highest patch of series the registry publishes.
func (r *RolloutReconciler) latest(ctx context.Context, ns string, series rollout.Series) (string, string, error) {
	if r.opts.Templates == nil {
		return "", "", errors.New("the controller describes no template versions")
	}
	tv, err := r.opts.Templates.Template(api.ForNamespace(ctx, ns), string(series), r.opts.DefaultRegistry)
	if err != nil {
		return "", "", err
	}
	if !series.InSeries(tv.Version) {
		return "", "", fmt.Errorf("%s resolved to %s, not one of its patches", series, tv.Version)
	}
	return tv.Version, tv.Digest, nil
}

// covered lists the instances p governs: TemplateInstances and instances
// of defined kinds that follow series' patches and for which p is the
// governing policy.
func (r *RolloutReconciler) covered(ctx context.Context, p policy, series rollout.Series) ([]covered, []rollout.Instance, map[string]rollout.Observed, error) {
	ns := p.obj.GetNamespace()
	_, rs, err := policies(ctx, r.client, ns, r.def)
	if err != nil {
		return nil, nil, nil, err
	}
	var cov []covered
	var tl v1alpha1.TemplateInstanceList
	if err := r.client.List(ctx, &tl, client.InNamespace(ns)); err != nil {
		return nil, nil, nil, fmt.Errorf("listing TemplateInstances: %w", err)
	}
	for i := range tl.Items {
		ti := &tl.Items[i]
		cov = append(cov, covered{obj: ti, events: r.instances, ti: ti})
	}
	if r.kinds != nil {
		var dl v1alpha1.TemplateDefinitionList
		if err := r.client.List(ctx, &dl); err != nil {
			return nil, nil, nil, fmt.Errorf("listing TemplateDefinitions: %w", err)
		}
		for i := range dl.Items {
			def := &dl.Items[i]
			if s, _, ok := rollout.SeriesOf(def.Spec.Template, r.def); !ok || s != series || def.Status.CRD != crdName(def) {
				continue
			}
			gvk := definedGVK(def)
			ch := r.kinds.events(gvk)
			if ch == nil {
				continue
			}
			il := &unstructured.UnstructuredList{}
			il.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.client.List(ctx, il, client.InNamespace(ns)); err != nil {
				return nil, nil, nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
			}
			for j := range il.Items {
				ti, err := asInstance(&il.Items[j], def)
				if err != nil {
					continue
				}
				cov = append(cov, covered{obj: &il.Items[j], events: ch, ti: ti})
			}
		}
	}
	base, _, _ := strings.Cut(string(series), ":")
	self := rollout.Policy{Namespace: ns, Name: p.obj.GetName(), Series: series}
	out := cov[:0]
	var in []rollout.Instance
	obs := map[string]rollout.Observed{}
	for _, c := range cov {
		ti := c.ti
		s, floor, ok := followsPatches(ti, r.def)
		if !ok || s != series || floor != "" && p.status.Version != "" && semver.Compare(floor, p.status.Version) > 0 {
			// Not this series, or asking for a patch above the policy's.
			continue
		}
		if i := rollout.Governing(ti.Namespace, series, rs); i < 0 || rs[i] != self {
			continue
		}
		out = append(out, c)
		in = append(in, rollout.Instance{Namespace: ti.Namespace, Name: ti.Name, Labels: ti.Labels})
		current := ti.Status.ObservedGeneration == ti.Generation
		rc := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
		o := rollout.Observed{
			Version: versionOf(ti.Status.Resolved, base),
			Ready:   current && rc != nil && rc.Status == metav1.ConditionTrue,
			Failed:  current && meta.IsStatusConditionTrue(ti.Status.Conditions, v1alpha1.ConditionStalled),
		}
		if rc != nil {
			o.Message = rc.Message
		}
		obs[ti.Namespace+"/"+ti.Name] = o
	}
	return out, in, obs, nil
}

// nudge reconciles the instances whose state is not yet what the policy
// allows them: another patch, or held and not saying so (or the reverse).
func (r *RolloutReconciler) nudge(ctx context.Context, p policy, cov []covered, obs map[string]rollout.Observed) {
	for _, c := range cov {
		key := c.ti.Namespace + "/" + c.ti.Name
		t := rollout.TargetOf(p.status, key)
		if t.Version == "" {
			continue
		}
		rc := meta.FindStatusCondition(c.ti.Status.Conditions, v1alpha1.ConditionReady)
		saysHeld := rc != nil && rc.Reason == ReasonWaitingForWave
		ready := rc != nil && rc.Status == metav1.ConditionTrue
		if obs[key].Version == t.Version && (!ready || saysHeld == t.Held) {
			continue
		}
		select {
		case c.events <- event.GenericEvent{Object: c.obj}:
		case <-ctx.Done():
			return
		}
	}
}

// conditions sets the policy's Ready, Progressing and Stalled.
func (r *RolloutReconciler) conditions(p policy, err error) {
	st := p.status
	gen := p.obj.GetGeneration()
	set := func(typ string, s metav1.ConditionStatus, reason, msg string) {
		setConditionOn(&st.Conditions, gen, typ, s, reason, truncate(msg, maxMessage))
	}
	switch {
	case err != nil && st.Version == "":
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, reason(err), err.Error())
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, reason(err), err.Error())
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionProgressing)
	case rollout.InProgress(st):
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
		msg := st.Version + " rolling out: " + waveSummary(st)
		if p.spec.Paused {
			msg += " (paused)"
		}
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut", msg)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut", msg)
	case rollout.Failed(st):
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionProgressing)
		why, msg := "WaveFailed", st.Version+" failed: "+waveSummary(st)
		if st.Aborted {
			why, msg = "Aborted", st.Version+" aborted: every moved instance is back on "+st.Previous
		}
		for _, w := range st.Waves {
			if w.Message != "" && !st.Aborted {
				msg += "; " + w.Message
			}
		}
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, why, msg+"; a newer patch starts a new roll-out")
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, why, msg)
	default:
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionProgressing)
		msg := "no patch rolling out"
		if st.Version != "" {
			msg = st.Version + " runs on every instance the policy covers"
		}
		if err != nil {
			msg += "; " + err.Error()
		}
		set(v1alpha1.ConditionReady, metav1.ConditionTrue, "RolledOut", msg)
	}
}

// waveSummary is "canary Promoted, half Soaking, rest Pending".
func waveSummary(st *v1alpha1.RolloutPolicyStatus) string {
	parts := make([]string, 0, len(st.Waves))
	for _, w := range st.Waves {
		parts = append(parts, w.Name+" "+string(w.State))
	}
	return strings.Join(parts, ", ")
}

// writeStatus writes the policy's status when it changed.
func (r *RolloutReconciler) writeStatus(ctx context.Context, p policy, before *v1alpha1.RolloutPolicyStatus) error {
	if equality.Semantic.DeepEqual(before, p.status) {
		return nil
	}
	if err := r.client.Status().Update(ctx, p.obj); err != nil {
		if apierrors.IsConflict(err) {
			return err // the queue tries again with the newer policy
		}
		return fmt.Errorf("writing the status of %s: %w", p.name(), err)
	}
	return nil
}

// record turns a step's events into events on the policy (and on the
// instances a failure names) and into metrics.
func (r *RolloutReconciler) record(p policy, evs []rollout.Event, cov []covered) {
	byKey := map[string]client.Object{}
	for _, c := range cov {
		byKey[c.ti.Namespace+"/"+c.ti.Name] = c.obj
	}
	for _, e := range evs {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.events.Event(p.obj, typ, e.Reason, e.Message)
		if r.metrics != nil {
			r.metrics.event(p, e.Reason)
		}
		if e.Reason == rollout.ReasonWaveFailed || e.Reason == rollout.ReasonWaveRolledBack {
			// The instances a failure concerns hear of it too; a wave that
			// goes does not write an event per instance.
			for _, k := range e.Instances {
				if o := byKey[k]; o != nil {
					r.events.Event(o, corev1.EventTypeWarning, e.Reason, p.name()+": "+e.Message)
				}
			}
		}
		r.log.Info("roll-out", "policy", p.name(), "reason", e.Reason, "msg", e.Message)
	}
}

// setupRollouts adds the two policy kinds' reconcilers to mgr: instances
// is the TemplateInstance controller's channel, kinds the defined kinds'.
// Registry changes reported to n (nil: none) look at every policy.
func setupRollouts(mgr ctrl.Manager, r *InstanceReconciler, kinds *definedKinds, instances chan<- event.GenericEvent, n *Notifier) error {
	m := newRolloutMetrics()
	// One pass over the registry changes feeds both kinds' controllers,
	// each keeping its own kind's policies.
	changed := [2]chan event.GenericEvent{make(chan event.GenericEvent, 64), make(chan event.GenericEvent, 64)}
	if n != nil {
		err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			policyChanges(ctx, mgr.GetClient(), n.policies, changed, r.log)
			return nil
		}))
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
	}
	for k, namespaced := range []bool{false, true} {
		rr := &RolloutReconciler{
			client: mgr.GetClient(), opts: r.opts, def: r.defRegistry, log: r.log,
			events: mgr.GetEventRecorderFor(FieldManager), namespaced: namespaced,
			instances: instances, kinds: kinds, metrics: m, now: time.Now,
		}
		var obj client.Object = &v1alpha1.TemplateRolloutPolicy{}
		name := "templaterolloutpolicy"
		if namespaced {
			obj, name = &v1alpha1.RolloutPolicy{}, "rolloutpolicy"
		}
		err := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			// Every change, its status too: dm rollout abort writes the
			// status, and the pass after the controller's own write moves
			// the instances from a cache that has it.
			For(obj).
			Watches(&v1alpha1.TemplateInstance{}, handler.EnqueueRequestsFromMapFunc(rr.governing)).
			WatchesRawSource(source.Channel(changed[k], &handler.EnqueueRequestForObject{})).
			WithOptions(controller.Options{SkipNameValidation: ptr(true)}).
			Complete(rr)
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
	}
	return nil
}

// policyChanges turns registry changes into events for every policy, of
// both kinds, until ctx ends: a new patch may start a roll-out.
func policyChanges(ctx context.Context, c client.Reader, in <-chan string, out [2]chan event.GenericEvent, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
		}
		var cl v1alpha1.TemplateRolloutPolicyList
		var nl v1alpha1.RolloutPolicyList
		if err := errors.Join(c.List(ctx, &cl), c.List(ctx, &nl)); err != nil {
			log.Warn("listing roll-out policies after a registry change", "err", err)
			continue
		}
		type sent struct {
			o  client.Object
			ch chan event.GenericEvent
		}
		var objs []sent
		for i := range cl.Items {
			objs = append(objs, sent{&cl.Items[i], out[0]})
		}
		for i := range nl.Items {
			objs = append(objs, sent{&nl.Items[i], out[1]})
		}
		for _, s := range objs {
			select {
			case s.ch <- event.GenericEvent{Object: s.o}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// governing maps an instance to the policy of the reconciler's kind that
// governs it.
func (r *RolloutReconciler) governing(ctx context.Context, o client.Object) []reconcile.Request {
	ti, ok := o.(*v1alpha1.TemplateInstance)
	if !ok {
		return nil
	}
	series, _, ok := rollout.SeriesOf(ti.Spec.Template, r.def)
	if !ok {
		return nil
	}
	_, rs, err := policies(ctx, r.client, ti.Namespace, r.def)
	if err != nil {
		return nil
	}
	i := rollout.Governing(ti.Namespace, series, rs)
	if i < 0 || (rs[i].Namespace != "") != r.namespaced {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: rs[i].Namespace, Name: rs[i].Name}}}
}
