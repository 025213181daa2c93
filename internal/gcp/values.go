package gcp

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// objConv converts one resource's properties into its object's spec.
type objConv struct {
	c        *converter
	it       *item
	kind     *kindInfo
	spec     map[string]any
	deferred []Deferred
	// extraLabels are labels a rule found elsewhere than properties.labels
	// (an instance template's properties.properties.labels).
	extraLabels map[string]any
	// ann are annotations a rule sets (nil: removes) over the usual ones.
	ann map[string]any
	// parent is the conversion of the resource whose body held this
	// part (a router's NAT), siblings that resource's lists of parts.
	parent   *objConv
	siblings map[string]any
	// partName is the part's name in that body: an item's name, a map
	// value's key (a column family's name).
	partName string
	// deps are the resources the object references (nil: its item's).
	deps *[]int
}

// addDep records that the object references resource j.
func (oc *objConv) addDep(j int) {
	d := oc.deps
	if d == nil {
		d = &oc.it.deps
	}
	if j != oc.it.index || oc.deps != nil {
		*d = append(*d, j)
	}
}

// seg is one step of a concrete KCC path: a field name, or a list index
// when key is "".
type seg struct {
	key string
	idx int
}

// concretize fills the [] of a KCC path pattern with idx, in order.
func concretize(pattern string, idx []int) ([]seg, error) {
	if pattern == "" {
		return nil, nil
	}
	var out []seg
	n := 0
	for _, part := range strings.Split(pattern, ".") {
		name := strings.TrimSuffix(part, "[]")
		out = append(out, seg{key: name})
		for ; strings.HasSuffix(part, "[]"); part = strings.TrimSuffix(part, "[]") {
			if n >= len(idx) {
				return nil, fmt.Errorf("internal error: %s has more lists than the REST path", pattern)
			}
			out = append(out, seg{idx: idx[n]})
			n++
		}
	}
	return out, nil
}

// pointer is the JSON Pointer of a spec path in the object.
func pointer(path []seg) string {
	var b strings.Builder
	b.WriteString("/spec")
	for _, s := range path {
		b.WriteByte('/')
		if s.key == "" {
			b.WriteString(strconv.Itoa(s.idx))
		} else {
			b.WriteString(escapePointer(s.key))
		}
	}
	return b.String()
}

// escapePointer escapes a key for a JSON Pointer (RFC 6901).
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// ensure returns the container at path in the spec, creating objects (and
// list items) on the way; last says what to create at the end (a map).
func (oc *objConv) ensure(path []seg) (map[string]any, error) {
	var cur any = oc.spec
	for i, s := range path {
		var next any
		switch c := cur.(type) {
		case map[string]any:
			if s.key == "" {
				return nil, fmt.Errorf("internal error: list index into an object at %s", pointer(path[:i+1]))
			}
			next = c[s.key]
			if next == nil {
				if i+1 < len(path) && path[i+1].key == "" {
					next = []any{}
				} else {
					next = map[string]any{}
				}
				c[s.key] = next
			}
			if l, ok := next.([]any); ok && i+1 < len(path) && path[i+1].key == "" {
				// Lists grow in place: write the grown list back.
				idx := path[i+1].idx
				for len(l) <= idx {
					l = append(l, map[string]any{})
				}
				c[s.key] = l
				next = l
			}
		case []any:
			if s.key != "" || s.idx >= len(c) {
				return nil, fmt.Errorf("internal error: bad list step at %s", pointer(path[:i+1]))
			}
			next = c[s.idx]
		default:
			return nil, fmt.Errorf("%s is already set to %s", pointer(path[:i]), describe(cur))
		}
		cur = next
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is already set to %s", pointer(path), describe(cur))
	}
	return m, nil
}

// set writes v at path in the spec.
func (oc *objConv) set(path []seg, v any) error {
	if len(path) == 0 {
		return fmt.Errorf("internal error: empty path")
	}
	last := path[len(path)-1]
	if last.key == "" {
		return fmt.Errorf("internal error: setting a list item at %s", pointer(path))
	}
	m, err := oc.ensure(path[:len(path)-1])
	if err != nil {
		return err
	}
	if prev, ok := m[last.key]; ok && !isEmptyMap(prev) {
		return invalid("%s would be set twice (to %s and to %s): two properties fill the same Config Connector field", pointer(path), describe(prev), describe(v))
	}
	m[last.key] = v
	return nil
}

func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// setPath sets v at a KCC path without lists (a.b.c).
func (oc *objConv) setPath(path string, v any) error {
	p, err := concretize(path, nil)
	if err != nil {
		return err
	}
	return oc.set(p, v)
}

// walkObject maps the fields of REST object m at REST path rest; idx are
// the list indices of the KCC lists on the way.
func (oc *objConv) walkObject(m map[string]any, rest string, idx []int) error {
	for _, key := range sortedKeys(m) {
		rp := joinREST(rest, key)
		v := m[key]
		if f := oc.kind.fate(rp); f != nil && v != nil {
			switch f.Fate {
			case fOutput:
				oc.warnf("%s is output only in %s: the API ignored it, and dm leaves it out", displayPath(rp), oc.kind.Schema)
				continue
			case fIgnored:
				if err := oc.checkIgnored(rp, v, f); err != nil {
					return err
				}
				oc.warnf("%s is left out: %s", displayPath(rp), f.Note)
				continue
			case fRefused:
				return oc.refused(rp, key, rest, f.Note)
			}
		}
		p := oc.kind.pair(rp)
		if p == nil {
			if oc.kind.fate(rp) == nil && oc.kind.IgnoreUnknown {
				// Not a field of the REST body at all, which this API
				// ignored: the resource DM made went without it.
				oc.warnf("%s is not a field of %s, which ignored it (%s): dm leaves it out%s", displayPath(rp), oc.kind.Schema, oc.kind.UnknownWhy, didYouMean(key, rest, oc.fieldsAt(rest)))
				continue
			}
			if oc.kind.fate(rp) == nil {
				return oc.refused(rp, key, rest, fmt.Sprintf("not a field of %s, which refused properties it lacks (%s)", oc.kind.Schema, oc.kind.UnknownWhy))
			}
			return oc.unknownField(rp, key, rest)
		}
		if shortFields[oc.kind.Kind][rp] {
			v = shortValue(v)
		}
		if err := oc.walkValue(v, rp, p, idx); err != nil {
			return err
		}
	}
	return nil
}

func joinREST(p, k string) string {
	if p == "" || strings.HasSuffix(p, ":") {
		return p + k
	}
	return p + "." + k
}

// displayPath is a REST path as an error shows it: properties.a.b[].c,
// without a variant's label.
func displayPath(rest string) string {
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		rest = rest[i+1:]
	}
	return "properties." + rest
}

// checkIgnored fails when an ignored field holds another value than the
// one it may take.
func (oc *objConv) checkIgnored(rp string, v any, f *restFate) error {
	if f.Value == "" {
		return nil
	}
	var want any
	if err := json.Unmarshal([]byte(f.Value), &want); err != nil {
		return fmt.Errorf("internal error: %s: ignored value %s: %w", rp, f.Value, err)
	}
	if reflect.DeepEqual(deepCopy(v), deepCopy(normalizeJSON(want))) {
		return nil
	}
	got := describe(v)
	if _, scalar := want.(string); !scalar {
		if b, err := json.Marshal(v); err == nil {
			got = string(b)
		}
	}
	return invalid("%s is %s: Config Connector's %s has no such field and takes only %s (%s)", displayPath(rp), got, oc.kind.Kind, strings.Trim(f.Value, `"`), f.Note)
}

// normalizeJSON turns json.Unmarshal's float64 whole numbers into int64,
// as the conversion holds them.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case float64:
		if n, ok := wholeNumber(x); ok {
			return n
		}
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeJSON(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeJSON(e)
		}
	}
	return v
}

// warnf records a warning about the resource being converted.
func (oc *objConv) warnf(format string, a ...any) {
	oc.it.warnings = append(oc.it.warnings, fmt.Sprintf(format, a...))
}

// refused is the error of a property Config Connector has no field for,
// saying why and what the kind takes there.
func (oc *objConv) refused(rp, key, parent, why string) error {
	msg := oc.unknownMessage(rp, key, parent)
	if why != "" && why != "Config Connector's "+oc.kind.Kind+" has no field for it" {
		msg += ": " + why
	}
	return invalid("%s", msg)
}

func (oc *objConv) unknownField(rp, key, parent string) error {
	return invalid("%s", oc.unknownMessage(rp, key, parent))
}

// unknownMessage says that REST field rp has no KCC field, and what the
// kind takes at its parent.
func (oc *objConv) unknownMessage(rp, key, parent string) string {
	fields := oc.fieldsAt(parent)
	msg := fmt.Sprintf("%s has no Config Connector field in %s", displayPath(rp), oc.kind.Kind)
	if near := didYouMean(key, parent, fields); near != "" {
		// A typo: the field meant, not the whole list.
		return msg + near
	}
	if len(fields) > 0 {
		what := oc.kind.Kind
		if parent != "" && !strings.HasSuffix(parent, ":") {
			what = displayPath(parent)
		}
		msg += " (" + what + " takes: " + strings.Join(fields, ", ") + ")"
	}
	return msg
}

// didYouMean suggests the fields at parent nearest key (derrors.Near):
// "; did you mean properties.canIpForward?", or "".
func didYouMean(key, parent string, fields []string) string {
	near := derrors.Near(key, fields)
	if len(near) == 0 {
		return ""
	}
	for i, n := range near {
		near[i] = displayPath(joinREST(parent, n))
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// fieldsAt lists the fields the kind takes at REST path parent ("" the
// body's top level), as people write them.
func (oc *objConv) fieldsAt(parent string) []string {
	fields := oc.kind.restChildren(parent)
	if parent == "" {
		fields = append(fields, "name", "project")
		for _, n := range oc.kind.NameFrom {
			if !strings.Contains(n, ".") && n != "name" {
				fields = append(fields, n)
			}
		}
		if oc.kind.has("zone") || oc.kind.has("location") {
			fields = append(fields, "zone")
		}
		if oc.kind.has("region") || oc.kind.has("location") {
			fields = append(fields, "region")
		}
		if !oc.kind.has("labels") {
			fields = append(fields, "labels")
		}
		for _, h := range handFields[oc.kind.Kind] {
			fields = append(fields, h)
		}
	}
	return uniqueSorted(fields)
}

func uniqueSorted(s []string) []string {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return sortedKeys(m)
}

// walkValue maps one REST value by its pair.
func (oc *objConv) walkValue(v any, rp string, p *pair, idx []int) error {
	if v == nil {
		return nil // DM's null: the field is not set
	}
	switch p.Mode {
	case mObj, mPass:
		m, ok := v.(map[string]any)
		if !ok {
			return invalid("%s is %s, not an object", displayPath(rp), describe(v))
		}
		if on, isBool := m["enabled"].(bool); isBool && oc.kind.pair(joinREST(rp, "enabled")) == nil {
			// A block that REST turns on with enabled and KCC by being
			// there (masterAuthorizedNetworksConfig, iap).
			if !on {
				return nil
			}
			m = maps.Clone(m)
			delete(m, "enabled")
		}
		if p.Mode == mObj && p.KCC != "" {
			path, err := concretize(p.KCC, idx)
			if err != nil {
				return err
			}
			if _, err := oc.ensure(path); err != nil {
				return err
			}
		}
		return oc.walkObject(m, rp, idx)
	case mList:
		l, ok := v.([]any)
		if !ok {
			return invalid("%s is %s, not a list", displayPath(rp), describe(v))
		}
		for i, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				return invalid("%s[%d] is %s, not an object", displayPath(rp), i, describe(e))
			}
			path, err := concretize(p.KCC+"[]", append(idx, i))
			if err != nil {
				return err
			}
			if _, err := oc.ensure(path); err != nil {
				return err
			}
			if err := oc.walkObject(m, rp+"[]", append(idx[:len(idx):len(idx)], i)); err != nil {
				return err
			}
		}
		return nil
	case mOne:
		l, ok := v.([]any)
		if !ok {
			return invalid("%s is %s, not a list", displayPath(rp), describe(v))
		}
		if len(l) > 1 {
			return invalid("%s has %d items; Config Connector's %s takes one", displayPath(rp), len(l), oc.kind.Kind)
		}
		if len(l) == 0 {
			return nil
		}
		m, ok := l[0].(map[string]any)
		if !ok {
			return invalid("%s[0] is %s, not an object", displayPath(rp), describe(l[0]))
		}
		path, err := concretize(p.KCC, idx)
		if err != nil {
			return err
		}
		if _, err := oc.ensure(path); err != nil {
			return err
		}
		return oc.walkObject(m, rp+"[]", idx)
	}
	f := oc.kind.field(p.KCC)
	if f == nil {
		return fmt.Errorf("internal error: %s pairs with %s, which %s lacks", rp, p.KCC, oc.kind.Kind)
	}
	path, err := concretize(p.KCC, idx)
	if err != nil {
		return err
	}
	val, err := oc.value(v, f, path, rp)
	if err != nil {
		return err
	}
	if val == nil {
		return nil
	}
	return oc.set(path, val)
}

// value converts a REST value to KCC field f's type; path is where it
// goes (for deferred references), rp the REST path (for errors).
func (oc *objConv) value(v any, f *field, path []seg, rp string) (any, error) {
	switch f.Type {
	case tString:
		switch x := v.(type) {
		case string:
			return oc.fillString(x, pointer(path))
		case bool:
			return strconv.FormatBool(x), nil
		case int, int64, float64:
			return formatNumber(x), nil
		}
	case tInteger:
		if n, ok := wholeNumber(v); ok {
			return n, nil
		}
		if x, ok := v.(string); ok && hasRef(x) {
			return oc.fillString(x, pointer(path))
		}
	case tNumber:
		switch x := v.(type) {
		case int:
			return int64(x), nil
		case int64, float64:
			return x, nil
		case string:
			if n, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
				return n, nil
			}
			if hasRef(x) {
				return oc.fillString(x, pointer(path))
			}
		}
	case tBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil {
				return b, nil
			}
			if hasRef(x) {
				return oc.fillString(x, pointer(path))
			}
		}
	case tMap, tObject:
		if m, ok := v.(map[string]any); ok {
			if item := oc.kind.field(f.Path + "{}"); item != nil && f.Type == tMap {
				// A map of scalars of one type (a secret's version
				// aliases, int64 in REST, strings in KCC).
				out := make(map[string]any, len(m))
				for _, key := range sortedKeys(m) {
					if m[key] == nil {
						continue
					}
					x, err := oc.value(m[key], item, append(path[:len(path):len(path)], seg{key: key}), rp+"."+key)
					if err != nil {
						return nil, err
					}
					out[key] = x
				}
				return out, nil
			}
			return oc.fillAll(m, pointer(path))
		}
	case tAny:
		return oc.fillAll(v, pointer(path))
	case tSecret:
		switch x := v.(type) {
		case string:
			s, err := oc.fillString(x, pointer(append(path, seg{key: "value"})))
			if err != nil {
				return nil, err
			}
			return map[string]any{"value": s}, nil
		case map[string]any:
			return x, nil
		}
	case tArray:
		l, ok := v.([]any)
		if !ok {
			if s, isStr := v.(string); isStr && oc.kind.field(f.Path+"[]") != nil && oc.kind.field(f.Path+"[]").Type == tString {
				l = []any{s} // one value where a list is wanted (DM accepted it)
			} else {
				break
			}
		}
		item := oc.kind.field(f.Path + "[]")
		if item == nil {
			return l, nil
		}
		out := make([]any, 0, len(l))
		for i, e := range l {
			if e == nil {
				continue
			}
			x, err := oc.value(e, item, append(path[:len(path):len(path)], seg{idx: len(out)}), fmt.Sprintf("%s[%d]", rp, i))
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case tRef:
		return oc.ref(v, f, path, rp)
	case tUnion:
		return oc.union(v, f, path, rp)
	}
	return nil, invalid("%s is %s; Config Connector's %s.%s is a %s", displayPath(rp), describe(v), oc.kind.Kind, dotted(f.Path), f.Type)
}

// dotted is a KCC path for people: spec.networkInterface[].networkRef.
func dotted(p string) string { return "spec." + p }

func formatNumber(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// fillAll fills the references in the strings of a value copied as is.
func (oc *objConv) fillAll(v any, ptr string) (any, error) {
	switch x := v.(type) {
	case string:
		return oc.fillString(x, ptr)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			nv, err := oc.fillAll(x[k], ptr+"/"+escapePointer(k))
			if err != nil {
				return nil, err
			}
			x[k] = nv
		}
	case []any:
		for i := range x {
			nv, err := oc.fillAll(x[i], ptr+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			x[i] = nv
		}
	}
	return v, nil
}

// describe names a value's type for errors.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 60 {
			x = x[:57] + "..."
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int, int64, float64:
		return formatNumber(x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

// getPath reads a dotted path of objects.
func getPath(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = mm[k]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// deletePath removes a dotted path of objects.
func deletePath(m map[string]any, path string) {
	parent, key, found := strings.Cut(path, ".")
	if !found {
		delete(m, path)
		return
	}
	if mm, ok := m[parent].(map[string]any); ok {
		deletePath(mm, key)
	}
}

// deepCopy copies maps and lists, in the forms the conversion reads:
// map[string]any, []any, string, bool, int64, float64 (the engine may hold
// map[string]string, []string, other integer types or json.Number).
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return float64(x)
	case float32:
		return float64(x)
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case map[string]any:
		if x == nil {
			return map[string]any(nil)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// applyDefaults fills the fields Config Connector requires that the body
// left out and the REST API defaulted (kinds.yaml's defaults): at every
// place of the spec where the field's parent is and the field is not (a
// VM's service account without scopes), with a warning naming it.
func (oc *objConv) applyDefaults() error {
	for i := range oc.kind.Fates {
		f := &oc.kind.Fates[i]
		if f.Fate != fDefault {
			continue
		}
		var v any
		switch f.Value {
		case "from:name":
			v = oc.it.gcpName
		case "from:resource":
			v = oc.it.res.Name
		default:
			if err := json.Unmarshal([]byte(f.Value), &v); err != nil {
				return fmt.Errorf("internal error: %s: default %s: %w", oc.kind.Kind, f.Value, err)
			}
			v = normalizeJSON(v)
		}
		if n := fillDefault(oc.spec, strings.Split(f.KCC, "."), v); n > 0 {
			oc.warnf("%s is not set: spec.%s takes %s, as the API defaulted it (%s)", displayPath(f.REST), f.KCC, defaultText(v), f.Note)
		}
	}
	return nil
}

// defaultText shows a default in a warning.
func defaultText(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// fillDefault sets the field at path (a.b[].c) to a copy of v wherever
// its parent exists in m and it does not; it returns how many it set.
func fillDefault(m map[string]any, path []string, v any) int {
	name := path[0]
	list := strings.HasSuffix(name, "[]")
	name = strings.TrimSuffix(name, "[]")
	if len(path) == 1 {
		if _, ok := m[name]; ok || list {
			return 0
		}
		m[name] = deepCopy(v)
		return 1
	}
	n := 0
	switch c := m[name].(type) {
	case map[string]any:
		if !list {
			n += fillDefault(c, path[1:], v)
		}
	case []any:
		for _, e := range c {
			if em, ok := e.(map[string]any); ok && list {
				n += fillDefault(em, path[1:], v)
			}
		}
	}
	return n
}

// checkRequired reports the required top-level spec fields the body left
// unset, naming the REST fields that fill them.
func (oc *objConv) checkRequired() error {
	var missing []string
	for _, f := range oc.kind.Spec {
		if !f.Required || strings.ContainsAny(f.Path, ".[") {
			continue
		}
		if _, ok := oc.spec[f.Path]; ok {
			continue
		}
		var from []string
		for _, p := range oc.kind.Pairs {
			if p.KCC == f.Path && !strings.Contains(p.REST, ":") {
				from = append(from, "properties."+p.REST)
			}
		}
		switch f.Path {
		case "location":
			switch oc.it.scope {
			case "zone", "region":
				from = append(from, "properties."+oc.it.scope)
			default:
				from = append(from, "properties.zone", "properties.region")
			}
		case "region", "zone":
			from = append(from, "properties."+f.Path)
		}
		if len(from) > 0 {
			missing = append(missing, fmt.Sprintf("%s (from %s)", dotted(f.Path), strings.Join(from, " or ")))
		} else {
			missing = append(missing, dotted(f.Path))
		}
	}
	if len(missing) > 0 {
		return invalid("Config Connector's %s requires %s", oc.kind.Kind, strings.Join(missing, ", "))
	}
	return nil
}

// wholeNumber reads v as a whole number: an integer, a float without a
// fraction (as JSON numbers arrive), or a decimal string (DM's templates
// write "3", and the REST APIs took it).
func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}
