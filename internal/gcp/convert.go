package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// item is one DM resource being converted.
type item struct {
	index   int
	res     *Resource
	kind    *kindInfo
	scope   string // zone, region, global or "" (from the type spelling)
	gcpName string // the Google Cloud name
	objName string // metadata.name
	project string
	// location is the resource's zone, region or location as the body
	// gives it ("" if none): what RESTName's {location} means.
	location string
	parent   string

	obj      map[string]any
	extra    []extraObject  // IAM objects it makes
	deps     []int          // items it must come after
	deferred []Deferred     // Object is filled when ordered
	merge    bool           // a deferred reference reads its live spec
	ann      map[string]any // annotations its rule set (IAM members take them too)
	warnings []string       // properties left out, as the API ignored them
	err      error
}

// extraObject is an object a resource makes beside its own (IAM members).
type extraObject struct {
	obj      map[string]any
	deferred []Deferred
	deps     []int // the resources it references beside its own
	// before says the resource's own object references it (a disk made
	// for an instance): it comes first.
	before bool
}

// converter converts one deployment.
type converter struct {
	opts   Options
	items  []*item
	byName map[string]*item
}

// Error is a conversion error of one resource, naming it, its type and its
// layout path.
type Error struct {
	Resource, Type string
	Path           []string
	Err            error
}

func (e *Error) Error() string {
	where := e.Resource
	if len(e.Path) > 0 && layout(e.Path) != e.Resource {
		where += " (" + layout(e.Path) + ")"
	}
	return fmt.Sprintf("resource %s, type %s: %v", where, e.Type, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Convert maps the resources of one deployment, all together (references
// between them need the whole set), to Config Connector objects. Every
// resource must be of a Google Cloud type (IsGCPType). It fails naming every
// resource it cannot convert (each an *Error wrapping
// derrors.InvalidArgument): an unsupported type (with the nearest supported
// spellings), a property with no KCC field (with the fields the kind
// takes), a type with no KCC equivalent (and what to do instead), a
// reference KCC cannot read.
func Convert(res []Resource, opts Options) (*Result, error) {
	switch opts.DeletionPolicy {
	case "", "delete", "abandon":
	default:
		return nil, derrors.Errorf(derrors.InvalidArgument, "deletion policy %q: want abandon or delete", opts.DeletionPolicy)
	}
	c := &converter{opts: opts, byName: map[string]*item{}}
	// A copy of the resources in the forms the conversion reads; res is
	// not modified.
	res = slices.Clone(res)
	for i := range res {
		res[i].Properties, _ = deepCopy(res[i].Properties).(map[string]any)
		res[i].Metadata, _ = deepCopy(res[i].Metadata).(map[string]any)
		res[i].AccessControl, _ = deepCopy(res[i].AccessControl).(map[string]any)
	}
	for i := range res {
		it := &item{index: i, res: &res[i]}
		c.items = append(c.items, it)
		if prev, ok := c.byName[res[i].Name]; ok {
			it.err = invalid("another resource is named %s too (%s)", res[i].Name, layout(prev.res.Path))
			continue
		}
		c.byName[res[i].Name] = it
	}
	for _, it := range c.items {
		if it.err == nil {
			it.err = c.identify(it)
		}
	}
	c.assignNames()
	for _, it := range c.items {
		if it.err == nil {
			it.err = c.convert(it)
		}
	}
	var errs []error
	// One missing --project is said once, naming the resources it leaves
	// without a project, not once for each.
	var noProject []string
	for _, it := range c.items {
		switch {
		case it.err == errNoProject:
			noProject = append(noProject, it.res.Name)
			if len(noProject) > 1 {
				continue
			}
			fallthrough
		case it.err != nil:
			errs = append(errs, &Error{Resource: it.res.Name, Type: it.res.Type, Path: it.res.Path, Err: it.err})
		}
	}
	if len(noProject) > 1 {
		errs = slices.DeleteFunc(errs, func(err error) bool { return errors.Is(err, errNoProject) })
		errs = append([]error{invalid("no project: the properties of %s name none; give --project PROJECT_ID (templates read it as env.project)", plural(noProject, "resource"))}, errs...)
	}
	if len(errs) > 0 {
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, fmt.Errorf("%d of %d resources cannot be converted to Config Connector objects:\n%w", len(errs), len(res), errors.Join(errs...))
	}
	return c.result()
}

// invalid is an error wrapping derrors.InvalidArgument.
// errNoProject marks a resource whose properties name no project while
// none was given: Convert says so once for all of them.
var errNoProject = invalid("no project: its properties name none; give --project PROJECT_ID (templates read it as env.project)")

// plural names things: "resource vm", "resources vm, net".
func plural(names []string, thing string) string {
	if len(names) == 1 {
		return thing + " " + names[0]
	}
	return thing + "s " + strings.Join(names, ", ")
}

func invalid(format string, a ...any) error {
	return derrors.Errorf(derrors.InvalidArgument, format, a...)
}

// identify finds the kind, names, project and location of a resource:
// what references to it need before any is converted.
func (c *converter) identify(it *item) error {
	r := it.res
	t, ok := lookupType(r.Type)
	if !ok {
		if why, ok := lookupUnsupported(r.Type); ok {
			return invalid("type %s has no Config Connector equivalent: %s", r.Type, why)
		}
		if providerTypeRE().MatchString(r.Type) && !gcpTypesRE().MatchString(r.Type) {
			return invalid("type %s is a Deployment Manager type provider's type, which Config Connector has no equivalent of: for a Kubernetes API write the object with its own type (apps/v1/Deployment), for another API use its Config Connector kind", r.Type)
		}
		if isAction(r.Type) {
			return invalid("type %s is a Deployment Manager action (a method call), which Config Connector has no equivalent of: declare the state the call would make as a resource instead (an IAM binding: gcp-types/cloudresourcemanager-v1:virtual.projects.iamMemberBinding)", r.Type)
		}
		msg := fmt.Sprintf("type %s is not a supported Google Cloud type (dm convert --list-types lists them)", r.Type)
		if near := derrors.Near(r.Type, typeNames()); len(near) > 0 {
			msg += "; did you mean " + strings.Join(near, ", ") + "?"
		} else if near := nearBySuffix(r.Type); len(near) > 0 {
			msg += "; did you mean " + strings.Join(near, ", ") + "?"
		}
		return invalid("%s", msg)
	}
	it.kind = lookupKind(t.Kind)
	it.scope = t.Scope
	props := r.Properties
	if err := unwrap(it.kind, props); err != nil {
		return err
	}
	if it.kind.Kind == "ComputeSSLCertificate" && props["type"] == "MANAGED" {
		it.kind = lookupKind("ComputeManagedSSLCertificate") // Google-managed
	}
	// Project.
	switch p := props["project"].(type) {
	case string:
		it.project = p
	case nil:
		it.project = c.opts.Project
	default:
		return invalid("properties.project is %s, not a string", describe(p))
	}
	if hasRef(it.project) {
		return invalid("properties.project is %s: a project must be known before deploying (set it, or use --project)", it.project)
	}
	if r, ok := props["resource"].(string); ok && it.kind.Kind == "IAMPolicyMember" && strings.HasSuffix(it.res.Type, "virtual.projects.iamMemberBinding") && props["project"] == nil && !hasRef(r) {
		it.project = strings.TrimPrefix(r, "projects/") // virtual.projects.iamMemberBinding's project
	}
	if _, given := props["project"]; !given && it.project == c.opts.Project {
		// A project the body names otherwise (a parent projects/P/..., a
		// projectId or an App Engine app) is the resource's.
		for _, key := range []string{"parent", "projectId", "appsId", "name"} {
			s, _ := props[key].(string)
			if key == "appsId" && s != "" && !hasRef(s) {
				it.project = s
				break
			}
			if key == "projectId" && s != "" && !hasRef(s) && !strings.Contains(s, "/") {
				it.project = s
				break
			}
			if m := projectPathRE().FindStringSubmatch(s); m != nil && (key == "parent" || it.kind.Kind == "IAMServiceAccount") {
				it.project = m[1]
				break
			}
		}
	}
	if it.project == "" && !projectless[it.kind.Kind] {
		return errNoProject
	}
	// Location.
	for _, key := range []string{"zone", "region", "location"} {
		if s, ok := props[key].(string); ok && it.location == "" {
			it.location = lastSegment(s)
		}
	}
	if s, ok := props["parent"].(string); ok {
		it.parent = s
		if it.location == "" {
			if m := locationRE().FindStringSubmatch(s); m != nil {
				it.location = m[1]
			}
		}
	}
	// Name.
	name, err := gcpName(it)
	if err != nil {
		return err
	}
	it.gcpName = name
	return nil
}

// unwrap lifts a request body DM's properties wrap in one of the kind's
// wrappers (function: {...} beside parent and functionId, as the gRPC
// request names its body) into the properties themselves; a field both
// inside and beside it with different values is an error.
func unwrap(k *kindInfo, props map[string]any) error {
	for _, w := range k.Wrappers {
		inner, ok := props[w].(map[string]any)
		if !ok {
			continue
		}
		delete(props, w)
		for _, key := range sortedKeys(inner) {
			if prev, dup := props[key]; dup && !reflect.DeepEqual(prev, inner[key]) {
				return invalid("properties.%s.%s and properties.%s are both set, to %s and %s: properties.%s is the request body, whose fields are the resource's", w, key, key, describe(inner[key]), describe(prev), w)
			}
			props[key] = inner[key]
		}
	}
	return nil
}

// isAction says whether type t names a method of an API rather than a
// collection: gcp-types/compute-v1:compute.routers.patch,
// gcp-types/sqladmin-v1beta4:sql.users.delete (a method's ID begins with
// its API's name, or a prefix of it), where a collection is
// projects.locations.instances.
func isAction(t string) bool {
	api, coll, ok := strings.Cut(t, ":")
	if !ok || !actionRE().MatchString(coll) {
		return false
	}
	api = api[strings.LastIndexByte(api, '/')+1:]
	if i := strings.IndexByte(api, '-'); i > 0 {
		api = api[:i]
	}
	first, _, _ := strings.Cut(coll, ".")
	return strings.HasPrefix(api, first)
}

// projectless kinds are above projects: they need no project.
var projectless = map[string]bool{"Project": true, "Folder": true, "AccessContextManagerAccessPolicy": true}

var (
	projectPathRE = lazyRegexp(`^projects/([^/$()]+)(?:/|$)`)
	actionRE      = lazyRegexp(`^[a-z][a-z0-9]*\.[a-zA-Z.]+\.[a-z][a-zA-Z]*$`)
	locationRE    = lazyRegexp(`/locations/([^/]+)`)
)

// nearBySuffix suggests the spellings of the same resource in other APIs
// or versions: compute.v2.instance -> compute.v1.instance.
func nearBySuffix(t string) []string {
	i := strings.LastIndexAny(t, ".:")
	if i < 0 {
		return nil
	}
	suffix := strings.ToLower(t[i+1:])
	var out []string
	for _, d := range dmTypes {
		j := strings.LastIndexAny(d.Type, ".:")
		if strings.ToLower(d.Type[j+1:]) == suffix && strings.HasPrefix(d.Type, t[:2]) {
			out = append(out, d.Type)
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// gcpName is the resource's Google Cloud name: the first of its kind's
// name properties that is set (its last path segment), else the DM name.
func gcpName(it *item) (string, error) {
	for _, p := range it.kind.NameFrom {
		v, ok := getPath(it.res.Properties, p)
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return "", invalid("properties.%s is %s, not a name", p, describe(v))
		}
		if hasRef(s) {
			return "", invalid("properties.%s is %s: a name must be known before deploying", p, s)
		}
		if rules, ok := nameRules[it.kind.Kind]; ok {
			return rules(s)
		}
		return lastSegment(s), nil
	}
	if f, ok := defaultNames[it.kind.Kind]; ok {
		return f(it)
	}
	for _, w := range it.kind.Wrappers {
		// The ID under the collection's singular (function: my-fn), as
		// Deployment Manager's gcp-types took it.
		if s, ok := it.res.Properties[w].(string); ok && !hasRef(s) {
			return lastSegment(s), nil
		}
	}
	return it.res.Name, nil
}

// lastSegment is what follows the last slash: the name in a selfLink or a
// resource path.
func lastSegment(s string) string {
	return s[strings.LastIndexByte(s, '/')+1:]
}

var dnsSubdomainRE = lazyRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validObjectName says whether s may be an object's metadata.name.
func validObjectName(s string) bool {
	return len(s) <= 253 && dnsSubdomainRE().MatchString(s)
}

// shortHash is 8 hex digits of s's SHA-256.
func shortHash(s ...string) string {
	h := sha256.Sum256([]byte(strings.Join(s, "\x00")))
	return hex.EncodeToString(h[:4])
}

// sanitize makes an object name of s: lower case, runs of other characters
// as one dash, and a hash of s so that two names that sanitize alike stay
// apart.
func sanitize(s string, salt ...string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case r == '.' && b.Len() > 0 && !dash:
			b.WriteRune('.')
			dash = true
		default:
			if b.Len() > 0 && !dash {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	base := strings.TrimRight(b.String(), "-.")
	if len(base) > 200 {
		base = strings.TrimRight(base[:200], "-.")
	}
	if base == "" {
		base = "r"
	}
	return base + "-" + shortHash(append([]string{s}, salt...)...)
}

// assignNames gives each object its metadata.name: the Google Cloud name
// when it is a valid object name and no other object of its kind has it,
// else a sanitized unique form (and spec.resourceID carries the name).
func (c *converter) assignNames() {
	type key struct{ kind, name string }
	count := map[key]int{}
	for _, it := range c.items {
		if it.err != nil {
			continue
		}
		it.objName = it.gcpName
		if !validObjectName(it.objName) {
			it.objName = sanitize(it.gcpName)
		}
		count[key{it.kind.Kind, it.objName}]++
	}
	for _, it := range c.items {
		if it.err == nil && count[key{it.kind.Kind, it.objName}] > 1 {
			// The same Google Cloud name in two zones, regions or
			// parents: the DM names tell them apart.
			it.objName = sanitize(it.gcpName, it.res.Name)
		}
	}
}

// convert builds the object of one resource.
func (c *converter) convert(it *item) error {
	k := it.kind
	oc := &objConv{c: c, it: it, kind: k, spec: map[string]any{}}
	props, _ := deepCopy(it.res.Properties).(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	delete(props, "project")
	for _, p := range k.NameFrom {
		deletePath(props, p)
	}
	for _, w := range k.Wrappers {
		if s, ok := props[w].(string); ok {
			if hasRef(s) {
				return invalid("properties.%s is %s: a name must be known before deploying", w, s)
			}
			if lastSegment(s) != it.gcpName {
				return invalid("properties.%s names the resource %q, and its other name properties %q", w, lastSegment(s), it.gcpName)
			}
			delete(props, w)
		}
	}
	if err := oc.location(props); err != nil {
		return err
	}
	labels, err := oc.labels(props)
	if err != nil {
		return err
	}
	if rule, ok := rules[k.Kind]; ok {
		if err := rule(oc, props); err != nil {
			return err
		}
	}
	parts := map[string]any{}
	for _, pt := range k.Parts {
		if v, ok := getPath(props, pt.REST); ok {
			parts[pt.REST] = v
			deletePath(props, pt.REST)
		}
	}
	if err := oc.walkObject(props, "", nil); err != nil {
		return err
	}
	if k.has("projectRef") && oc.spec["projectRef"] == nil {
		oc.spec["projectRef"] = map[string]any{"external": it.project}
	}
	if k.has("resourceID") && it.objName != it.gcpName && oc.spec["resourceID"] == nil {
		oc.spec["resourceID"] = it.gcpName
	}
	if err := oc.applyDefaults(); err != nil {
		return err
	}
	if err := oc.checkRequired(); err != nil {
		return err
	}
	for k, v := range oc.extraLabels {
		if labels == nil {
			labels = map[string]any{}
		}
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	ann := c.annotations(it)
	for k, v := range oc.ann {
		if v == nil {
			delete(ann, k)
		} else {
			ann[k] = v
		}
	}
	it.ann = oc.ann
	md := map[string]any{"name": it.objName}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	// spec even when empty: some CRDs require it; a kind with no spec at
	// all (ComputeSharedVPCHostProject) takes none.
	it.obj = map[string]any{"apiVersion": k.APIVersion, "kind": k.Kind, "metadata": md}
	if len(k.Spec) > 0 || len(oc.spec) > 0 {
		it.obj["spec"] = oc.spec
	}
	it.deferred = oc.deferred
	for _, pt := range k.Parts {
		if v, ok := parts[pt.REST]; ok && v != nil {
			if err := c.parts(oc, pt, v, parts); err != nil {
				return err
			}
		}
	}
	if err := c.dependsOn(it); err != nil {
		return err
	}
	if err := c.accessControl(it); err != nil {
		return err
	}
	return nil
}

func (c *converter) annotations(it *item) map[string]any {
	a := map[string]any{}
	if it.project != "" {
		a[ProjectAnnotation] = it.project
	}
	if c.opts.DeletionPolicy == "abandon" {
		a[DeletionPolicyAnnotation] = "abandon"
	}
	return a
}

// dependsOn adds DM's metadata.dependsOn to the resource's dependencies.
func (c *converter) dependsOn(it *item) error {
	v, ok := it.res.Metadata["dependsOn"]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return invalid("metadata.dependsOn is %s, not a list of resource names", describe(v))
	}
	for _, e := range list {
		name, ok := e.(string)
		if !ok {
			return invalid("metadata.dependsOn holds %s, not a resource name", describe(e))
		}
		if dep, ok := c.byName[name]; ok && dep != it {
			it.deps = append(it.deps, dep.index)
		}
		// A name outside this set is a resource of another kind (a
		// Kubernetes object): its caller orders it.
	}
	return nil
}

// result orders the objects: each after those it references or depends
// on, otherwise in the order of the resources; an object's IAM members
// right after it.
func (c *converter) result() (*Result, error) {
	// The objects to order: each resource's own, then the objects it makes
	// (IAM members, parts), which come after it and after what they
	// reference.
	type node struct{ item, extra int } // extra -1: the resource's own
	var nodes []node
	first := make([]int, len(c.items)) // the node of each resource's own object
	for i, it := range c.items {
		first[i] = len(nodes)
		nodes = append(nodes, node{i, -1})
		for k := range it.extra {
			nodes = append(nodes, node{i, k})
		}
	}
	depsOf := func(n node) []int {
		it := c.items[n.item]
		var deps []int
		if n.extra < 0 {
			deps = it.deps
			for k, x := range it.extra {
				if x.before {
					deps = append(slices.Clone(deps), -1-k) // its own extra
				}
			}
		} else if x := it.extra[n.extra]; x.before {
			deps = x.deps
		} else {
			deps = append([]int{n.item}, x.deps...)
		}
		out := make([]int, 0, len(deps))
		for _, j := range deps {
			if j < 0 {
				out = append(out, first[n.item]+1+(-1-j))
				continue
			}
			out = append(out, first[j])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	order := make([]int, 0, len(nodes))
	state := make([]int8, len(nodes))
	var stack []int
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 2:
			return nil
		case 1:
			k := slices.Index(stack, i)
			var names []string
			for _, j := range stack[k:] {
				names = append(names, c.items[nodes[j].item].res.Name)
			}
			names = append(names, c.items[nodes[i].item].res.Name)
			it := c.items[nodes[i].item]
			return &Error{Resource: it.res.Name, Type: it.res.Type, Path: it.res.Path,
				Err: invalid("reference or dependsOn cycle: %s", strings.Join(names, " -> "))}
		}
		state[i] = 1
		stack = append(stack, i)
		for _, j := range depsOf(nodes[i]) {
			if j == i {
				continue
			}
			if err := visit(j); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = 2
		order = append(order, i)
		return nil
	}
	for i := range nodes {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	r := &Result{byName: c.byName}
	for _, it := range c.items {
		for _, w := range it.warnings {
			r.Warnings = append(r.Warnings, (&Error{Resource: it.res.Name, Type: it.res.Type, Path: it.res.Path, Err: errors.New(w)}).Error())
		}
	}
	add := func(it *item, obj map[string]any, deferred []Deferred) {
		n := len(r.Objects)
		r.Objects = append(r.Objects, obj)
		r.Sources = append(r.Sources, it.res.Name)
		for _, d := range deferred {
			d.Object = n
			r.Deferred = append(r.Deferred, d)
		}
	}
	for _, i := range order {
		n := nodes[i]
		it := c.items[n.item]
		if n.extra >= 0 {
			x := it.extra[n.extra]
			add(it, x.obj, x.deferred)
			continue
		}
		if it.merge && it.obj != nil {
			setAnnotation(it.obj, StateIntoSpecAnnotation, "merge")
		}
		if it.obj != nil {
			add(it, it.obj, it.deferred)
		}
	}
	return r, nil
}

// Lookup says where the value of a reference $(ref.NAME.PATH) to a
// resource of the deployment is: a value known now (v, ok true: the
// resource's name), or a field of its live object (for outputs: dm get
// shows them resolved). NAME not among the converted resources is an
// error wrapping derrors.NotFound.
func (r *Result) Lookup(ref string) (v any, ok bool, read Read, err error) {
	m := refRE().FindStringSubmatch(ref)
	if m == nil || m[0] != ref {
		return nil, false, Read{}, invalid("%q is not a reference $(ref.NAME.PATH)", ref)
	}
	it := r.byName[m[1]]
	if it == nil {
		return nil, false, Read{}, fmt.Errorf("%s: %w: no Google Cloud resource %s in the deployment", ref, derrors.NotFound, m[1])
	}
	return lookupRef(it, ref, strings.TrimPrefix(m[2], "."))
}

// setAnnotation sets an annotation of obj.
func setAnnotation(obj map[string]any, key, value string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return
	}
	a, _ := md["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		md["annotations"] = a
	}
	a[key] = value
}

// parts makes an object of kind pt.Kind of each item of the list v of a
// resource's body (a router's NATs, a cluster's node pools), or of each
// value of the map v (a table's column families by name, the key being
// the item's name), named after the resource and the item, referring to
// the resource's object and in its location. A map value that sets
// nothing makes no object: its key alone is the resource's (a column
// family without a garbage-collection rule). all are the resource's lists
// of parts, for rules that reference siblings (a BGP peer's interface).
func (c *converter) parts(oc *objConv, pt part, v any, all map[string]any) error {
	type entry struct {
		where, name string
		value       any
	}
	var entries []entry
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			entries = append(entries, entry{fmt.Sprintf("properties.%s[%d]", pt.REST, i), name, e})
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			if setsNothing(v[k]) {
				continue
			}
			entries = append(entries, entry{"properties." + pt.REST + "." + k, k, v[k]})
		}
	default:
		return invalid("properties.%s is %s, not a list or a map", pt.REST, describe(v))
	}
	it := oc.it
	pk := lookupKind(pt.Kind)
	for _, e := range entries {
		m, ok := deepCopy(e.value).(map[string]any)
		if !ok {
			return invalid("%s is %s, not an object", e.where, describe(e.value))
		}
		if _, isList := v.([]any); isList {
			delete(m, "name") // a map value's name is its key
		}
		objName := it.objName + "-" + e.name
		if e.name == "" {
			b, _ := json.Marshal(e.value)
			objName = it.objName + "-" + shortHash(string(b))
		}
		if !validObjectName(objName) {
			objName = sanitize(objName)
		}
		body := m
		if pt.As != "" {
			body = map[string]any{pt.As: m}
		}
		x, err := c.partObject(oc, pk, body, e.name, objName, nil, all)
		if err != nil {
			return fmt.Errorf("%s (a %s): %w", e.where, pk.Kind, err)
		}
		it.extra = append(it.extra, x)
	}
	return nil
}

// setsNothing says whether v is null or an object all of whose fields set
// nothing.
func setsNothing(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !setsNothing(e) {
				return false
			}
		}
		return true
	}
	return false
}

// partObject converts body, a part of oc's resource, into an object of
// kind pk named objName (Google Cloud name name), referring to the
// resource's object and in its location.
func (c *converter) partObject(oc *objConv, pk *kindInfo, body map[string]any, name, objName string, labels, siblings map[string]any) (extraObject, error) {
	it := oc.it
	var deps []int
	poc := &objConv{c: c, it: it, kind: pk, spec: map[string]any{}, parent: oc, siblings: siblings, deps: &deps, partName: name}
	if rule, ok := partRules[pk.Kind]; ok {
		if err := rule(poc, body); err != nil {
			return extraObject{}, err
		}
	}
	if err := poc.walkObject(body, "", nil); err != nil {
		return extraObject{}, err
	}
	if err := poc.applyDefaults(); err != nil {
		return extraObject{}, err
	}
	for _, f := range pk.Spec {
		if f.Type == tRef && f.Target == it.kind.Kind && !strings.ContainsAny(f.Path, ".[") && poc.spec[f.Path] == nil {
			poc.spec[f.Path] = map[string]any{"name": it.objName}
		}
	}
	for _, key := range []string{"zone", "region", "location"} {
		if !pk.has(key) || poc.spec[key] != nil {
			continue
		}
		for _, from := range []string{key, "location", "region", "zone"} {
			if l, ok := oc.spec[from].(string); ok {
				poc.spec[key] = l
				break
			}
		}
	}
	if pk.has("projectRef") && poc.spec["projectRef"] == nil {
		poc.spec["projectRef"] = map[string]any{"external": it.project}
	}
	if pk.has("resourceID") && name != "" && name != objName {
		poc.spec["resourceID"] = name
	}
	if err := poc.checkRequired(); err != nil {
		return extraObject{}, err
	}
	ann := c.annotations(it)
	for k, v := range oc.ann {
		if v == nil {
			delete(ann, k)
		} else {
			ann[k] = v
		}
	}
	md := map[string]any{"name": objName}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	obj := map[string]any{"apiVersion": pk.APIVersion, "kind": pk.Kind, "metadata": md, "spec": poc.spec}
	return extraObject{obj: obj, deferred: poc.deferred, deps: deps}, nil
}
