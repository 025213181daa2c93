package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ApplyOptions modify Apply.
type ApplyOptions struct {
	// Force takes over fields owned by other field managers (--force-conflicts).
	Force bool
	// DryRun asks the server to validate and admit without persisting.
	DryRun bool
	// Recreate, with DryRun, checks each object as the server would create
	// it anew rather than as an apply over the object that exists: a
	// dry-run create under a name the server generates from the object's
	// (metadata.generateName), since the name is taken. It is for objects
	// the real run deletes first (Helm's before-hook-creation hooks).
	// Without DryRun it is an error.
	Recreate bool
}

// Applied is the result of applying one object.
type Applied struct {
	Ref ObjectRef
	// ResourceVersion is the object's as the server returned it.
	ResourceVersion string
	// Created is true when the object did not exist before.
	Created bool
	// raw is the server's answer, decoded by Object only: most callers
	// need the resource version alone, and decoding a hundred answers
	// into maps cost a deploy more CPU than encoding their requests.
	raw []byte
	// given is the object as given, for those the server cannot check.
	given *unstructured.Unstructured
}

// Object returns the object as the server returned it. In a dry run, a
// custom resource whose CustomResourceDefinition is in the same call (and
// so not in the cluster) cannot be checked by the server: Object is then
// the object as given.
func (a *Applied) Object() (*unstructured.Unstructured, error) {
	if a.given != nil {
		return a.given, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(a.raw); err != nil {
		return nil, fmt.Errorf("%s: decoding the server's answer: %w", a.Ref, err)
	}
	return u, nil
}

// Apply server-side applies objs (which Prepare has seen) tier by tier; the
// objects of a tier go in parallel, at most Config.Concurrency at a time.
// Objects that depend on each other within a tier (the engine's $(ref)
// order) must be passed in separate calls, one per dependency wave. Applied
// CRDs are waited for until Established and discovered (at most CRDTimeout)
// before the next tier or the return. In a dry run, objects the server cannot check because their CRD or
// their namespace is created in the same call (or, for namespaces, an
// earlier dry run of this Client) are returned as given. Every failed
// object gives one ObjectError, all joined; an object of a tier is not
// applied when an earlier tier failed. The results are in the order of
// objs, for the objects that were applied.
func (c *Client) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) ([]Applied, error) {
	if opts.Recreate && !opts.DryRun {
		// Nothing deletes the old objects first here: a create would fail.
		return nil, errors.New("kube: ApplyOptions.Recreate is for dry runs only")
	}
	results := make([]*Applied, len(objs))
	errs := make([]error, len(objs))
	var pending []*unstructured.Unstructured // CRDs applied, not yet known Established
	var failed bool
	for _, tier := range byTier(objs, (*unstructured.Unstructured).GroupVersionKind) {
		if failed {
			break
		}
		if len(pending) > 0 && !opts.DryRun {
			if err := c.waitEstablished(ctx, pending); err != nil {
				return collect(results), err
			}
			pending = nil
		}
		parallel(c.cfg.Concurrency, tier, func(i int) {
			results[i], errs[i] = c.apply(ctx, objs[i], opts)
			if _, ok := c.dryRunNamespaces.Load(objs[i].GetNamespace()); ok && opts.DryRun && namespaceMissing(errs[i]) {
				// Its namespace is created in this dry run, so the server
				// cannot check it: pass it through.
				results[i], errs[i] = passThrough(objs[i])
			}
		})
		for _, i := range tier {
			if errs[i] != nil {
				failed = true
				errs[i] = &ObjectError{Ref: RefOf(objs[i]), Err: errs[i]}
				continue
			}
			if _, _, isCRD := crdDefines(objs[i]); isCRD {
				pending = append(pending, objs[i])
			}
			if gk := objs[i].GroupVersionKind().GroupKind(); opts.DryRun && gk.Group == "" && gk.Kind == "Namespace" && results[i].Created {
				c.dryRunNamespaces.Store(objs[i].GetName(), true)
			}
		}
	}
	if len(pending) > 0 && !opts.DryRun && !failed {
		// The next call (the next dependency wave) may hold their resources.
		if err := c.waitEstablished(ctx, pending); err != nil {
			return collect(results), err
		}
	}
	return collect(results), errors.Join(errs...)
}

func collect(results []*Applied) []Applied {
	out := make([]Applied, 0, len(results))
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// apply server-side applies one object. It PATCHes through the raw REST
// client rather than the dynamic one to learn from the status code whether
// the object was created, without a GET first.
func (c *Client) apply(ctx context.Context, obj *unstructured.Unstructured, opts ApplyOptions) (*Applied, error) {
	data, err := json.Marshal(applyConfiguration(obj.Object))
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	for attempt := 0; ; attempt++ {
		start := time.Now()
		m, err := c.mapping(ctx, obj.GroupVersionKind())
		if err != nil && opts.DryRun && meta.IsNoMatchError(err) {
			// Its CRD is in this dry run, so the server cannot check it.
			return passThrough(obj)
		}
		if err != nil {
			return nil, err
		}
		var a *Applied
		if opts.Recreate {
			a, err = c.createAnew(ctx, m, obj)
		} else {
			a, err = c.patch(ctx, m, obj, data, opts)
		}
		if err != nil && attempt == 0 && resourceGone(err) {
			// Discovery (from the disk cache, or before a CRD was
			// deleted) names a resource the server no longer serves.
			c.refreshBefore(start)
			continue
		}
		return a, err
	}
}

func (c *Client) patch(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured, data []byte, opts ApplyOptions) (*Applied, error) {
	req := c.raw.Patch(types.ApplyPatchType).
		AbsPath(objectPath(m, obj.GetNamespace(), obj.GetName())).
		Param("fieldManager", c.cfg.FieldManager).
		Param("fieldValidation", metav1.FieldValidationStrict).
		Body(data)
	if opts.Force {
		req = req.Param("force", "true")
	}
	if opts.DryRun {
		req = req.Param("dryRun", metav1.DryRunAll)
	}
	res := req.Do(ctx)
	var code int
	res.StatusCode(&code)
	data, err := body(res)
	if err != nil {
		return nil, applyError(err)
	}
	var head struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("decoding the server's response: %w", err)
	}
	return &Applied{Ref: RefOf(obj), ResourceVersion: head.Metadata.ResourceVersion, Created: code == http.StatusCreated, raw: data}, nil
}

// createAnew dry-run creates obj under a name the server generates from
// its own, for ApplyOptions.Recreate. The server validates and admits it
// as a new object, with strict field validation as an apply.
func (c *Client) createAnew(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured) (*Applied, error) {
	u := &unstructured.Unstructured{Object: applyConfiguration(obj.Object)}
	u = u.DeepCopy()
	u.SetGenerateName(obj.GetName())
	u.SetName("")
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	res := c.raw.Post().
		AbsPath(objectPath(m, obj.GetNamespace(), "")).
		Param("fieldManager", c.cfg.FieldManager).
		Param("fieldValidation", metav1.FieldValidationStrict).
		Param("dryRun", metav1.DryRunAll).
		Body(data).
		Do(ctx)
	data, err = body(res)
	if err != nil {
		return nil, err
	}
	return &Applied{Ref: RefOf(obj), Created: true, raw: data}, nil
}

// passThrough is the result of a dry run for an object the server cannot
// check: a copy of it, as new.
func passThrough(obj *unstructured.Unstructured) (*Applied, error) {
	data, err := json.Marshal(applyConfiguration(obj.Object))
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return &Applied{Ref: RefOf(obj), Created: true, given: out}, nil
}

// namespaceMissing reports whether err is the server's NotFound for a
// namespace.
func namespaceMissing(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != metav1.StatusReasonNotFound {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// resourceGone reports whether err is a NotFound for an apply, which
// creates missing objects: so the resource itself is not served (unless it
// is the namespace that is missing).
func resourceGone(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != metav1.StatusReasonNotFound {
		return false
	}
	return !namespaceMissing(err)
}

// serverSet are the metadata fields only the server sets. An object read
// back from the cluster (a rollback's recorded objects) carries them, and
// server-side apply refuses managedFields and takes resourceVersion as a
// precondition.
var serverSet = []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"}

// applyConfiguration returns obj without the server-set metadata fields,
// sharing what it does not change.
func applyConfiguration(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	var strip bool
	for _, f := range serverSet {
		if _, ok := md[f]; ok {
			strip = true
		}
	}
	if !strip {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	md2 := make(map[string]any, len(md))
	for k, v := range md {
		md2[k] = v
	}
	for _, f := range serverSet {
		delete(md2, f)
	}
	out["metadata"] = md2
	return out
}

// applyError makes a server error about an apply readable: conflicts list
// each field with its manager and say how to take them over.
func applyError(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != metav1.StatusReasonConflict {
		return err
	}
	var fields []string
	if d := status.Status().Details; d != nil {
		for _, cause := range d.Causes {
			if cause.Type == metav1.CauseTypeFieldManagerConflict {
				// The message is `conflict with "manager"`, maybe `using v1`.
				owner := strings.TrimPrefix(cause.Message, "conflict with ")
				fields = append(fields, fmt.Sprintf("%s (owned by %s)", cause.Field, owner))
			}
		}
	}
	if len(fields) == 0 {
		return err
	}
	return &conflictError{err: err, fields: fields}
}

// conflictError is a server-side apply conflict.
type conflictError struct {
	err    error
	fields []string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("conflict with other field managers: %s; rerun with --force-conflicts to take these fields over",
		strings.Join(e.fields, ", "))
}

func (e *conflictError) Unwrap() error { return e.err }

// crdMapping is the mapping of CustomResourceDefinitions, which need no
// discovery.
var crdMapping = &meta.RESTMapping{
	Resource:         schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	GroupVersionKind: crdGroupKind.WithVersion("v1"),
	Scope:            meta.RESTScopeRoot,
}

// CRDTimeout bounds the wait for applied CRDs to be established and
// discovered, which takes the apiserver a second or two.
const CRDTimeout = 2 * time.Minute

// waitEstablished waits until every CRD is Established and its kind is in
// discovery, reading discovery once per round for all of them. A CRD whose
// names are not accepted (they clash with another's) fails at once.
func (c *Client) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, CRDTimeout)
	defer cancel()
	errs := make([]error, len(crds))
	established := make([]bool, len(crds))
	todo := indexes(len(crds))
	for delay := 20 * time.Millisecond; len(todo) > 0; delay = min(2*delay, 500*time.Millisecond) {
		parallel(c.cfg.Concurrency, todo, func(i int) {
			if established[i] {
				return
			}
			live, err := c.getObject(ctx, crdMapping, "", crds[i].GetName())
			switch {
			case err != nil && ctx.Err() == nil:
				errs[i] = fmt.Errorf("waiting to be established: %w", err)
			case err == nil && conditionFalse(live, "NamesAccepted") != "":
				errs[i] = fmt.Errorf("not established: names not accepted: %s", conditionFalse(live, "NamesAccepted"))
			case err == nil:
				established[i] = conditionTrue(live, "Established")
			}
		})
		var next []int
		ready := false
		for _, i := range todo {
			if errs[i] == nil {
				next = append(next, i)
				ready = ready || established[i]
			}
		}
		todo = next
		if ready {
			c.refresh()
			d, err := c.discover(ctx)
			if err != nil {
				return err
			}
			next = next[:0:0]
			for _, i := range todo {
				gk, _, _ := crdDefines(crds[i])
				if !established[i] {
					next = append(next, i)
				} else if _, err := d.mapper.RESTMapping(gk, servedVersion(crds[i])); err != nil {
					next = append(next, i)
				}
			}
			todo = next
		}
		if len(todo) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			for _, i := range todo {
				gk, _, _ := crdDefines(crds[i])
				errs[i] = fmt.Errorf("waiting for kind %s to be established: %w", gk, ctx.Err())
			}
			todo = nil
		case <-time.After(delay):
		}
	}
	var all []error
	for i, err := range errs {
		if err != nil {
			all = append(all, &ObjectError{Ref: RefOf(crds[i]), Err: err})
		}
	}
	return errors.Join(all...)
}

// servedVersion is the first served version of a CRD object.
func servedVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if v, ok := v.(map[string]any); ok && v["served"] == true {
			name, _ := v["name"].(string)
			return name
		}
	}
	return ""
}

// conditionFalse returns the message (or reason) of obj's status condition
// typ when its status is "False", else "".
func conditionFalse(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == typ && c["status"] == "False" {
			for _, k := range []string{"message", "reason"} {
				if msg, _ := c[k].(string); msg != "" {
					return msg
				}
			}
			return "False"
		}
	}
	return ""
}

// conditionTrue reports whether obj has status condition typ with status "True".
func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == typ {
			return c["status"] == "True"
		}
	}
	return false
}
