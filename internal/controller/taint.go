package controller

// Redaction by construction. A value marked secret when it enters (a
// property from a propertiesFrom Secret, a property the template's schema
// marks writeOnly or format: password, a Secret a chart looks up) must not
// reach status.outputs however the template transforms it: reversed,
// sliced, replaced, base64-encoded, escaped for JSON, HTML or YAML,
// concatenated. Looking for the value in the output misses every such
// form, and the template languages (Jinja, Go templates, Python, Helm) are
// not ours to instrument value by value. So the template runs twice more
// blind: with every marked value replaced by a stand-in of the same type
// that owes nothing to the real value, a different stand-in each run. What
// the template made the same in all three runs does not depend on a marked
// value; an output that differs reads Redacted (one whose very name
// differs is left out), and so does every field of a rendered object that
// differs, in the live object a status template reads. A blind run that
// fails marks everything the template rendered.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/manifest"
)

// blindSet names a set of stand-ins: the two blind runs use different
// ones.
type blindSet int

const (
	blindA blindSet = iota + 1
	blindB
)

// standIns makes the stand-ins of one blind run, numbered in the order
// they are asked for, so that two secrets never share one.
type standIns struct {
	set blindSet
	mu  sync.Mutex
	n   int
}

func (s *standIns) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.n
}

// value is v with every leaf replaced by a stand-in of its type: the
// shape of a marked value (a mapping's keys, a list's length, a leaf's
// type) is kept, its content is not.
func (s *standIns) value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out[k] = s.value(x[k])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.value(e)
		}
		return out
	case nil:
		return nil
	case bool:
		return s.set == blindA
	case int:
		return int(s.number())
	case int64:
		return s.number()
	case uint64:
		return uint64(s.number())
	case float64:
		return float64(s.number()) + 0.5
	}
	return s.string()
}

// string is a string stand-in. The two sets differ in length, case and
// every character, so that a slice, an upper() or a length tells them
// apart.
func (s *standIns) string() string {
	n := s.next()
	if s.set == blindA {
		return fmt.Sprintf("blinda%dx", n)
	}
	return fmt.Sprintf("QQ-BLIND-%d-B-QQQ", n)
}

func (s *standIns) number() int64 {
	n := int64(s.next())
	if s.set == blindA {
		return 7001 + 2*n
	}
	return 90000017 + 3*n
}

// blindProps returns props with the value at each of marks replaced by
// stand-ins; props itself is left alone.
func blindProps(props map[string]any, marks [][]string, s *standIns) map[string]any {
	sorted := slices.Clone(marks)
	slices.SortFunc(sorted, func(a, b []string) int { return slices.Compare(a, b) })
	out := props
	for _, p := range sorted {
		out = replaceAt(out, p, s.value)
	}
	return out
}

// replaceAt returns v with the value at path p replaced by f of it,
// copying what it changes; a path v does not hold is skipped.
func replaceAt(v map[string]any, p []string, f func(any) any) map[string]any {
	if len(p) == 0 {
		return v
	}
	x, ok := v[p[0]]
	if !ok {
		return v
	}
	out := maps.Clone(v)
	if m, ok := x.(map[string]any); ok && len(p) > 1 {
		out[p[0]] = replaceAt(m, p[1:], f)
		return out
	}
	out[p[0]] = f(x)
	return out
}

// secretLookup reads the cluster for a chart's lookup; in a blind run the
// data of every Secret it returns is replaced by stand-ins, and in the
// real run it records that a Secret was read (then the blind runs are
// needed).
type secretLookup struct {
	inner engine.Lookup
	// blind, when set, replaces Secrets' data.
	blind *standIns
	// read records the Secrets looked up.
	read *lookedUp
}

// lookedUp records the values of the Secrets a real run's chart looked
// up: they are marked, and kept out of error messages.
type lookedUp struct {
	mu     sync.Mutex
	any    bool
	values []string
}

// add records the values of Secret o.
func (l *lookedUp) add(o map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.any = true
	if d, ok := o["data"].(map[string]any); ok {
		for _, v := range d {
			if s, ok := v.(string); ok {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					l.values = append(l.values, string(b))
				}
			}
		}
	}
	if d, ok := o["stringData"].(map[string]any); ok {
		for _, v := range d {
			if s, ok := v.(string); ok {
				l.values = append(l.values, s)
			}
		}
	}
}

func (l *lookedUp) read() (bool, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.any, slices.Clone(l.values)
}

func (l *secretLookup) Lookup(ctx context.Context, q engine.LookupQuery) (map[string]any, error) {
	obj, err := l.inner.Lookup(ctx, q)
	if err != nil || obj == nil {
		return obj, err
	}
	if q.APIVersion != "v1" || q.Kind != "Secret" {
		return obj, nil
	}
	if l.read != nil {
		if items, ok := obj["items"].([]any); ok {
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					l.read.add(m)
				}
			}
		} else {
			l.read.add(obj)
		}
	}
	if l.blind == nil {
		return obj, nil
	}
	blindSecret := func(o map[string]any) map[string]any {
		o = maps.Clone(o)
		for _, field := range []string{"data", "stringData"} {
			d, ok := o[field].(map[string]any)
			if !ok {
				continue
			}
			r := make(map[string]any, len(d))
			for _, k := range slices.Sorted(maps.Keys(d)) {
				v := l.blind.string()
				if field == "data" {
					v = base64.StdEncoding.EncodeToString([]byte(v))
				}
				r[k] = v
			}
			o[field] = r
		}
		// The last-applied annotation would carry the data again.
		if md, ok := o["metadata"].(map[string]any); ok {
			md = maps.Clone(md)
			delete(md, "annotations")
			delete(md, "managedFields")
			o["metadata"] = md
		}
		return o
	}
	if items, ok := obj["items"].([]any); ok {
		obj = maps.Clone(obj)
		out := make([]any, len(items))
		for i, it := range items {
			if m, ok := it.(map[string]any); ok {
				out[i] = blindSecret(m)
			} else {
				out[i] = it
			}
		}
		obj["items"] = out
		return obj, nil
	}
	return blindSecret(obj), nil
}

// taint is what of an expansion depends on a marked value.
type taint struct {
	// all: a blind run failed, so every field the template rendered and
	// every output is taken to depend on one.
	all bool
	// objects are the tainted fields of each rendered object.
	objects map[objectKey][]taintPath
	// outputs are the outputs that differ (Redacted) or whose names
	// differ (left out).
	outputs map[string]outputTaint
}

type outputTaint int

const (
	outputRedacted outputTaint = iota + 1
	outputDropped
)

// objectKey names a rendered object as the revision records it.
type objectKey struct {
	path, apiVersion, kind, name string
}

// taintPath is the path of a tainted field in a rendered object.
type taintPath []taintStep

// taintStep is a mapping's key, or (index >= 0) a list's element: the
// element named name when the rendered element has a name, else the
// index'th of a list of n.
type taintStep struct {
	key   string
	index int
	name  string
	n     int
}

func keyOf(mo *manifest.Object) objectKey {
	name, _ := valueAt(mo.Object, []string{"metadata", "name"})
	av, _ := mo.Object["apiVersion"].(string)
	k, _ := mo.Object["kind"].(string)
	s, _ := name.(string)
	return objectKey{path: strings.Join(mo.Path, "/"), apiVersion: av, kind: k, name: s}
}

func isSecret(mo manifest.Object) bool {
	return mo.Object["apiVersion"] == "v1" && mo.Object["kind"] == "Secret"
}

// blindRender renders the template again with props in place of the
// real properties (and with secretLookup's stand-ins for looked-up
// Secrets), as the objects and outputs of a manifest.
type blindRender func(ctx context.Context, props map[string]any, s *standIns) (*manifest.Manifest, error)

// taintOf compares the real manifest with two blind ones, rendered by
// render with props' marked values replaced.
func taintOf(ctx context.Context, real *manifest.Manifest, props map[string]any, marks [][]string, render blindRender) *taint {
	var blind [2]*manifest.Manifest
	for i, set := range []blindSet{blindA, blindB} {
		s := &standIns{set: set}
		m, err := render(ctx, blindProps(props, marks, s), s)
		if err != nil {
			return &taint{all: true}
		}
		blind[i] = m
	}
	t := &taint{objects: map[objectKey][]taintPath{}, outputs: map[string]outputTaint{}}
	// Objects are matched by layout path, kind and rank among those:
	// their names may be what differs.
	type slot struct {
		path, apiVersion, kind string
		rank                   int
	}
	index := func(m *manifest.Manifest) map[slot]*manifest.Object {
		out := map[slot]*manifest.Object{}
		seen := map[slot]int{}
		for i := range m.Objects {
			k := keyOf(&m.Objects[i])
			s := slot{path: k.path, apiVersion: k.apiVersion, kind: k.kind}
			s.rank = seen[s]
			seen[s]++
			out[s] = &m.Objects[i]
		}
		return out
	}
	a, b := index(blind[0]), index(blind[1])
	seen := map[slot]int{}
	for i := range real.Objects {
		mo := &real.Objects[i]
		k := keyOf(mo)
		s := slot{path: k.path, apiVersion: k.apiVersion, kind: k.kind}
		s.rank = seen[s]
		seen[s]++
		oa, oka := a[s]
		ob, okb := b[s]
		var paths []taintPath
		if !oka || !okb {
			paths = renderedLeaves(mo.Object)
		} else {
			paths = diffPaths(mo.Object, oa.Object, ob.Object, nil, nil)
		}
		if len(paths) > 0 {
			t.objects[k] = append(t.objects[k], paths...)
		}
	}
	outs := func(m *manifest.Manifest) map[string][]byte {
		out := map[string][]byte{}
		for _, o := range m.Outputs {
			out[o.Name] = outputJSON(o)
		}
		return out
	}
	oa, ob := outs(blind[0]), outs(blind[1])
	for _, o := range real.Outputs {
		va, oka := oa[o.Name]
		vb, okb := ob[o.Name]
		switch v := outputJSON(o); {
		case !oka || !okb:
			t.outputs[o.Name] = outputDropped
		case v == nil || string(v) != string(va) || string(va) != string(vb):
			t.outputs[o.Name] = outputRedacted
		}
	}
	return t
}

// outputJSON is an output's value and the live fields it reads, for
// comparison; nil when it cannot be encoded (then it counts as tainted).
func outputJSON(o manifest.Output) []byte {
	type read struct{ Field, Ref, Path string }
	reads := make([]read, 0, len(o.Deferred))
	for _, d := range o.Deferred {
		reads = append(reads, read{d.Field, d.Ref, d.Path})
	}
	b, err := json.Marshal(struct {
		Value any
		Reads []read
	}{o.Value, reads})
	if err != nil {
		return nil
	}
	return b
}

// diffPaths appends to out the paths below prefix where real, a and b
// are not all the same. A mapping whose keys differ, or a list whose
// length differs, is tainted whole: its keys or its length may be what
// tells.
func diffPaths(real, a, b any, prefix taintPath, out []taintPath) []taintPath {
	switch r := real.(type) {
	case map[string]any:
		ma, oka := a.(map[string]any)
		mb, okb := b.(map[string]any)
		if !oka || !okb || !sameKeys(r, ma) || !sameKeys(r, mb) {
			return append(out, slices.Clone(prefix))
		}
		for _, k := range slices.Sorted(maps.Keys(r)) {
			out = diffPaths(r[k], ma[k], mb[k], append(prefix[:len(prefix):len(prefix)], taintStep{key: k, index: -1}), out)
		}
		return out
	case []any:
		la, oka := a.([]any)
		lb, okb := b.([]any)
		if !oka || !okb || len(la) != len(r) || len(lb) != len(r) {
			return append(out, slices.Clone(prefix))
		}
		for i := range r {
			st := taintStep{index: i, n: len(r)}
			if m, ok := r[i].(map[string]any); ok {
				st.name, _ = m["name"].(string)
			}
			out = diffPaths(r[i], la[i], lb[i], append(prefix[:len(prefix):len(prefix)], st), out)
		}
		return out
	}
	if !reflect.DeepEqual(real, a) || !reflect.DeepEqual(a, b) {
		return append(out, slices.Clone(prefix))
	}
	return out
}

func sameKeys(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// renderedLeaves are the paths of every field of a rendered object but
// what names it (apiVersion, kind, metadata.name and namespace): an
// object the blind runs did not make is tainted whole, while the fields
// the cluster sets (its status) stay readable.
func renderedLeaves(obj map[string]any) []taintPath {
	var out []taintPath
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch k {
		case "apiVersion", "kind":
			continue
		case "metadata":
			md, ok := obj[k].(map[string]any)
			if !ok {
				break
			}
			for _, mk := range slices.Sorted(maps.Keys(md)) {
				if mk != "name" && mk != "namespace" {
					out = append(out, taintPath{{key: k, index: -1}, {key: mk, index: -1}})
				}
			}
			continue
		}
		out = append(out, taintPath{{key: k, index: -1}})
	}
	return out
}

// redactTainted returns the live object obj with the value at each of
// paths replaced by Redacted, copying what it changes.
func redactTainted(obj map[string]any, paths []taintPath) map[string]any {
	var v any = obj
	for _, p := range paths {
		v = redactStep(v, p)
	}
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func redactStep(v any, p taintPath) any {
	if len(p) == 0 {
		return Redacted
	}
	st := p[0]
	if st.index < 0 {
		m, ok := v.(map[string]any)
		if !ok {
			// The live object has another shape here than the one
			// rendered: whatever it holds may come from the secret.
			return Redacted
		}
		x, ok := m[st.key]
		if !ok {
			return v
		}
		m = maps.Clone(m)
		m[st.key] = redactStep(x, p[1:])
		return m
	}
	l, ok := v.([]any)
	if !ok {
		return Redacted
	}
	// The element is found by its name where it has one (the cluster may
	// have merged in others), else by its index in a list of the length
	// rendered; otherwise the whole list goes.
	i := -1
	if st.name != "" {
		for j, e := range l {
			if m, ok := e.(map[string]any); ok && m["name"] == st.name {
				if i >= 0 {
					return Redacted
				}
				i = j
			}
		}
	} else if len(l) == st.n {
		i = st.index
	}
	if i < 0 {
		return Redacted
	}
	l = slices.Clone(l)
	l[i] = redactStep(l[i], p[1:])
	return l
}

// taints caches the taint of expansions, keyed by an HMAC of everything
// it was computed from (the real properties among it): a resync whose
// inputs and rendering did not change does not render blind again, and
// the key tells nothing of the values.
type taints struct {
	key   []byte
	cache *lru.Cache[string, *taint]
}

// maxTaints bounds the taints cached.
const maxTaints = 1024

func newTaints() *taints {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	c, _ := lru.New[string, *taint](maxTaints)
	return &taints{key: k, cache: c}
}

// cacheKey is the HMAC of the values of parts, as JSON; "" when one
// cannot be encoded (then nothing is cached).
func (t *taints) cacheKey(parts ...any) string {
	h := hmac.New(sha256.New, t.key)
	enc := json.NewEncoder(h)
	for _, p := range parts {
		if err := enc.Encode(p); err != nil {
			return ""
		}
	}
	return string(h.Sum(nil))
}

// rendering is what a reconcile's real expansion was, for the blind runs.
type rendering struct {
	src    deploy.Source
	x      *expand.Result
	pinned string
	// cluster is what the real run's charts saw of the cluster; lookup its
	// Lookup (as the instance's account), which the blind runs read with
	// too, their Secrets' data replaced.
	cluster *engine.Cluster
	lookup  engine.Lookup
	// secrets records the Secrets a chart looked up.
	secrets lookedUp
}

// taintOf returns what of the applied expansion depends on the marked
// values of props: nil when nothing is marked.
func (r *InstanceReconciler) taintOf(ctx context.Context, a *applied, resolved, digest string) (*taint, error) {
	rd := a.rendering
	if rd == nil || rd.x == nil {
		return nil, nil
	}
	marked, err := r.schemaSecrets(ctx, resolved, digest)
	if err != nil {
		return nil, err
	}
	var marks [][]string
	for _, p := range slices.Concat(a.secret, marked) {
		if _, ok := valueAt(a.props, p); ok {
			marks = append(marks, p)
		}
	}
	opts := manifest.Options{Project: rd.src.Env["project"], DeletionPolicy: rd.src.DeletionPolicy}
	real, err := manifest.Of(rd.x, opts)
	if err != nil {
		return &taint{all: true}, nil
	}
	// A Secret among the objects marks what the template made of it
	// differently at each render (a random password): the blind renders
	// then differ there even with nothing else marked.
	looked, _ := rd.secrets.read()
	if len(marks) == 0 && !looked && !slices.ContainsFunc(real.Objects, isSecret) {
		return nil, nil
	}
	pinned := rd.pinned
	for _, ref := range rd.x.References {
		if ref.Ref == rd.src.Input.Ref && ref.Digest != "" && pinned == "" {
			pinned = ref.Resolved + "@" + ref.Digest
		}
	}
	var key string
	if r.taints != nil {
		key = r.taints.cacheKey(marks, a.props, rd.src, pinned, real)
		if t, ok := r.taints.cache.Get(key); ok && key != "" {
			return t, nil
		}
	}
	render := func(ctx context.Context, props map[string]any, s *standIns) (*manifest.Manifest, error) {
		var cluster *engine.Cluster
		if rd.cluster != nil {
			c := *rd.cluster
			if rd.lookup != nil {
				c.Lookup = &secretLookup{inner: rd.lookup, blind: s}
			}
			cluster = &c
		}
		src := rd.src
		src.Properties = props
		// A stand-in need not meet the schema's pattern or length: the
		// run only tells what depends on the value.
		src.SkipSchemaValidation = true
		x, err := r.expand(ctx, src, pinned, cluster)
		if err != nil {
			return nil, err
		}
		return manifest.Of(x, opts)
	}
	t := taintOf(ctx, real, a.props, marks, render)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// A blind render that failed may have failed for a while (the
	// registry unreachable): it is tried again at the next reconcile.
	if r.taints != nil && key != "" && !t.all {
		r.taints.cache.Add(key, t)
	}
	return t, nil
}
