package expand

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/value"
)

// refRE matches a value reference $(ref.NAME.PATH), PATH made of .field and
// [index] steps.
var refRE = regexp.MustCompile(`\$\(ref\.([^.\[\)\s]+)((?:\.[^.\[\)\s]+|\[\d+\])*)\)`)

type valueRef struct {
	text   string // the whole $(ref...) text
	target int    // index of the referenced resource
	path   []string
}

// Deferred is a value reference that expansion cannot fill because the
// field it names is absent from the rendered resource: a field only the
// server sets (spec.clusterIP, metadata.uid, a generated name, status).
// Its $(ref...) text stays in place; deploy fills it from the live object
// once the referenced object is applied.
type Deferred struct {
	// Resource is the name of the resource whose properties hold the
	// reference, Field the JSON Pointer (RFC 6901) of the string in its
	// properties that contains it.
	Resource string `json:"resource"`
	Field    string `json:"field"`
	// Ref is the reference as written: $(ref.NAME.PATH).
	Ref string `json:"ref"`
	// Target is NAME, the referenced resource, and Path is PATH without
	// its leading dot (spec.clusterIP, spec.ports[0].nodePort).
	Target string `json:"target"`
	Path   string `json:"path"`
}

// resolveValueRefs replaces every $(ref.NAME.PATH) in the primitives'
// properties by the value at PATH in the (resolved) properties of the
// primitive NAME, and returns the primitives' names ordered so that each
// comes after those it references, otherwise in expansion order. A
// reference whose PATH is absent from NAME (a field the server sets) is left
// in place and returned as deferred. paths are the layout paths of the
// primitives, for errors.
func resolveValueRefs(res []Resource, paths [][]string) ([]string, []Deferred, error) {
	byName := make(map[string]int, len(res))
	dup := map[string]bool{}
	for i, r := range res {
		if _, ok := byName[r.Name]; ok {
			dup[r.Name] = true
		}
		byName[r.Name] = i
	}
	deps := make([][]int, len(res))
	found := false
	for i, r := range res {
		var perr error
		walkStrings(r.Properties, func(s string) {
			if perr != nil || !strings.Contains(s, "$(ref.") {
				return
			}
			for _, m := range refRE.FindAllStringSubmatch(s, -1) {
				j, ok := byName[m[1]]
				switch {
				case !ok:
					perr = noSuchResource(m[0], m[1], res)
				case dup[m[1]]:
					perr = invalid("%s: several resources are named %q; a referenced name must be unique in the deployment", m[0], m[1])
				}
				if perr != nil {
					return
				}
				deps[i] = append(deps[i], j)
				found = true
			}
		})
		if perr != nil {
			return nil, nil, &Error{Path: paths[i], Err: perr}
		}
	}
	order := make([]int, 0, len(res))
	state := make([]int8, len(res)) // 0 new, 1 visiting, 2 done
	var stack []int
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 2:
			return nil
		case 1:
			k := len(stack) - 1
			for stack[k] != i {
				k--
			}
			var names []string
			for _, j := range stack[k:] {
				names = append(names, res[j].Name)
			}
			names = append(names, res[i].Name)
			return &Error{Path: paths[i], Err: invalid("value reference cycle: %s", strings.Join(names, " -> "))}
		}
		state[i] = 1
		stack = append(stack, i)
		for _, j := range deps[i] {
			if err := visit(j); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = 2
		order = append(order, i)
		return nil
	}
	for i := range res {
		if err := visit(i); err != nil {
			return nil, nil, err
		}
	}
	var deferred []Deferred
	if found {
		for _, i := range order {
			if len(deps[i]) == 0 {
				continue
			}
			s := &substitution{res: res, byName: byName}
			v, err := s.value(res[i].Properties, "")
			if err != nil {
				return nil, nil, &Error{Path: paths[i], Err: err}
			}
			res[i].Properties = v.(map[string]any)
			// Mappings are walked in random order.
			slices.SortStableFunc(s.deferred, func(a, b Deferred) int { return strings.Compare(a.Field, b.Field) })
			for _, d := range s.deferred {
				d.Resource = res[i].Name
				deferred = append(deferred, d)
			}
		}
	}
	names := make([]string, len(order))
	for k, i := range order {
		names[k] = res[i].Name
	}
	return names, deferred, nil
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}

// substitution replaces the value references of one resource's
// properties, collecting those it must defer.
type substitution struct {
	res      []Resource
	byName   map[string]int
	deferred []Deferred
}

// value returns v with references replaced, copying only what changes.
// ptr is v's JSON Pointer in the resource's properties.
func (s *substitution) value(v any, ptr string) (any, error) {
	out, _, err := rewriteStrings(v, ptr, func(str, ptr string) (any, error) {
		return FillRefs(str, func(text, name, path string) (any, bool, error) {
			val, err := lookupRef(text, name, path, s.res, s.byName)
			if errors.Is(err, errAbsent) {
				s.deferred = append(s.deferred, Deferred{Field: ptr, Ref: text, Target: name, Path: strings.TrimPrefix(path, ".")})
				return nil, false, nil
			}
			return val, err == nil, err
		})
	})
	return out, err
}

// rewriteStrings returns v with each string holding a value reference
// replaced by f(string, its JSON Pointer), copying only the mappings and
// lists that change (properties may be shared with the layout). ptr is
// v's pointer; changed says whether anything did.
func rewriteStrings(v any, ptr string, f func(s, ptr string) (any, error)) (out any, changed bool, err error) {
	switch v := v.(type) {
	case string:
		if !strings.Contains(v, "$(ref.") {
			return v, false, nil
		}
		nv, err := f(v, ptr)
		if err != nil {
			return nil, false, err
		}
		if ns, ok := nv.(string); ok && ns == v {
			return v, false, nil
		}
		return nv, true, nil
	case map[string]any:
		var out map[string]any
		for k, e := range v {
			ne, changed, err := rewriteStrings(e, ptr+"/"+escapePointer(k), f)
			if err != nil {
				return nil, false, err
			}
			if !changed {
				continue
			}
			if out == nil {
				out = maps.Clone(v)
			}
			out[k] = ne
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	case []any:
		var out []any
		for i, e := range v {
			ne, changed, err := rewriteStrings(e, ptr+"/"+strconv.Itoa(i), f)
			if err != nil {
				return nil, false, err
			}
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(v)
			}
			out[i] = ne
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	}
	return v, false, nil
}

// composite is a template resource whose template returned outputs.
type composite struct {
	name    string
	path    []string
	outputs []Output
}

// inlineOutputs replaces, in the primitives' properties, each reference
// $(ref.NAME.OUTPUT[.PATH]) where NAME is a template resource with an
// output OUTPUT (DM's template outputs) by that output's value (at PATH).
// The value may hold references itself: to other outputs, replaced in
// turn, and to primitives, which stay in place for resolveValueRefs to
// resolve or defer as any other. When a primitive has NAME too, the
// reference is to the output if OUTPUT names one, else to the primitive;
// and to the primitive inside the template's own outputs.
func inlineOutputs(in *outputInliner, res []Resource, paths [][]string) error {
	if len(in.comps) == 0 {
		return nil
	}
	for i := range res {
		v, changed, err := rewriteStrings(res[i].Properties, "", in.fill)
		if err != nil {
			return &Error{Path: paths[i], Err: err}
		}
		if changed {
			res[i].Properties = v.(map[string]any)
		}
		// metadata.dependsOn may name a resource by a template's output
		// (the Cloud Foundation Toolkit's bigquery_table.py depends on
		// $(ref.DATASET.datasetId)), as Deployment Manager resolved it.
		if deps, ok := res[i].Metadata["dependsOn"]; ok {
			v, changed, err := rewriteStrings(deps, "", in.fill)
			if err != nil {
				return &Error{Path: paths[i], Err: fmt.Errorf("metadata.dependsOn: %w", err)}
			}
			if changed {
				md := maps.Clone(res[i].Metadata)
				md["dependsOn"] = v
				res[i].Metadata = md
			}
		}
	}
	return nil
}

// newOutputInliner returns the inliner of the outputs of comps, res being
// the primitives.
func newOutputInliner(res []Resource, comps []composite) *outputInliner {
	in := &outputInliner{comps: comps, prims: map[string]bool{}, byName: map[string]int{}, dup: map[string]bool{},
		state: map[[2]int]int8{}, vals: map[[2]int]any{}}
	for _, r := range res {
		in.prims[r.Name] = true
	}
	for i, c := range comps {
		if _, ok := in.byName[c.name]; ok {
			in.dup[c.name] = true
		}
		in.byName[c.name] = i
	}
	return in
}

// deploymentOutputs resolves the deployment's outputs (a configuration's
// outputs, or the outputs of the template a reference expanded as): the
// references to template outputs are replaced by their values, those to
// fields of the primitives that expansion knows by the fields' values
// (res holds the primitives with their references resolved); references
// to fields only the live objects have stay in place, for deploy to read.
func deploymentOutputs(in *outputInliner, outs []Output, res []Resource) ([]Output, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	seen := make(map[string]bool, len(outs))
	for _, o := range outs {
		if seen[o.Name] {
			return nil, invalid("two outputs named %q: a deployment's outputs must be unique", o.Name)
		}
		seen[o.Name] = true
	}
	byName := make(map[string]int, len(res))
	for i, r := range res {
		byName[r.Name] = i
	}
	out := make([]Output, len(outs))
	for i, o := range outs {
		v, _, err := rewriteStrings(o.Value, "", in.fill)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		v, _, err = rewriteStrings(v, "", func(s, _ string) (any, error) {
			return FillRefs(s, func(text, name, path string) (any, bool, error) {
				if _, ok := byName[name]; !ok {
					return nil, false, noSuchResource(text, name, res)
				}
				val, err := lookupRef(text, name, path, res, byName)
				if errors.Is(err, errAbsent) {
					return nil, false, nil
				}
				return val, err == nil, err
			})
		})
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		out[i] = Output{Name: o.Name, Value: value.Copy(v)}
	}
	return out, nil
}

// outputInliner resolves template outputs on demand, each once.
type outputInliner struct {
	comps  []composite
	prims  map[string]bool
	byName map[string]int
	dup    map[string]bool
	// state and vals are keyed by composite and output index: 1 while
	// the output is being resolved (a cycle if met again), 2 once vals
	// holds its value.
	state map[[2]int]int8
	vals  map[[2]int]any
	stack []string
	// within holds the composites whose outputs are being resolved,
	// innermost last.
	within []int
}

// fill replaces the output references of one string.
func (in *outputInliner) fill(s, _ string) (any, error) {
	return FillRefs(s, func(text, name, path string) (any, bool, error) {
		j, ok := in.byName[name]
		if !ok || !strings.HasPrefix(path, ".") {
			return nil, false, nil
		}
		if n := len(in.within); n > 0 && in.within[n-1] == j && in.prims[name] {
			// A template's output naming the template's own name reads
			// the primitive the template made under that name
			// (ssl_certificate.py's selfLink is $(ref.NAME.selfLink)), not
			// the output itself.
			return nil, false, nil
		}
		c := in.comps[j]
		out, rest := path, ""
		if k := strings.IndexAny(path[1:], ".["); k >= 0 {
			out, rest = path[:k+1], path[k+1:]
		}
		out = strings.TrimPrefix(out, ".")
		k := slices.IndexFunc(c.outputs, func(o Output) bool { return o.Name == out })
		switch {
		case k < 0 && in.prims[name]:
			return nil, false, nil // the primitive of the same name
		case k < 0:
			names := make([]string, len(c.outputs))
			for i, o := range c.outputs {
				names[i] = o.Name
			}
			return nil, false, invalid("%s: template resource %s (%s) has no output %q (outputs: %s)", text, name, strings.Join(c.path, " > "), out, strings.Join(names, ", "))
		case in.dup[name]:
			return nil, false, invalid("%s: several template resources are named %q; a referenced name must be unique in the deployment", text, name)
		case slices.ContainsFunc(c.outputs[k+1:], func(o Output) bool { return o.Name == out }):
			return nil, false, invalid("%s: template resource %s (%s) has several outputs named %q; a referenced output must be unique", text, name, strings.Join(c.path, " > "), out)
		}
		v, err := in.output(j, k)
		if err != nil {
			return nil, false, err
		}
		if rest == "" {
			return value.Copy(v), true, nil
		}
		if s, ok := v.(string); ok {
			if m := refRE.FindStringIndex(s); m != nil && m[0] == 0 && m[1] == len(s) {
				// The output is one reference: the rest of the path goes on
				// from where it points ($(ref.vm.status) + .ip).
				return s[:len(s)-1] + rest + ")", true, nil
			}
		}
		cur, walked, err := walkPath(v, rest)
		if err != nil {
			return nil, false, invalid("%s: output %s of %s has no %s", text, out, name, walked)
		}
		return value.Copy(cur), true, nil
	})
}

// output returns output k of composite j with the references to outputs
// in it replaced.
func (in *outputInliner) output(j, k int) (any, error) {
	key := [2]int{j, k}
	label := in.comps[j].name + "." + in.comps[j].outputs[k].Name
	switch in.state[key] {
	case 2:
		return in.vals[key], nil
	case 1:
		i := slices.Index(in.stack, label)
		return nil, invalid("output reference cycle: %s -> %s", strings.Join(in.stack[i:], " -> "), label)
	}
	in.state[key] = 1
	in.stack = append(in.stack, label)
	in.within = append(in.within, j)
	v, _, err := rewriteStrings(in.comps[j].outputs[k].Value, "", in.fill)
	if err != nil {
		return nil, err
	}
	in.within = in.within[:len(in.within)-1]
	in.stack = in.stack[:len(in.stack)-1]
	in.state[key], in.vals[key] = 2, v
	return v, nil
}

// FillRefs replaces the value references $(ref.NAME.PATH) in s. lookup
// returns the value of one reference (text is the whole reference, path
// starts with "." or "["), or ok false to leave the reference in place.
// When s is one whole reference the value keeps its type; inside a longer
// string it is formatted (mappings and lists as JSON). Deploy uses it to
// fill deferred references from live objects.
func FillRefs(s string, lookup func(text, name, path string) (v any, ok bool, err error)) (any, error) {
	if !strings.Contains(s, "$(ref.") {
		return s, nil
	}
	ms := refRE.FindAllStringSubmatchIndex(s, -1)
	if len(ms) == 1 && ms[0][0] == 0 && ms[0][1] == len(s) {
		// The whole string is one reference: the value keeps its type.
		v, ok, err := lookup(s, s[ms[0][2]:ms[0][3]], s[ms[0][4]:ms[0][5]])
		if err != nil || !ok {
			return s, err
		}
		return v, nil
	}
	var sb strings.Builder
	last := 0
	for _, m := range ms {
		sb.WriteString(s[last:m[0]])
		text := s[m[0]:m[1]]
		v, ok, err := lookup(text, s[m[2]:m[3]], s[m[4]:m[5]])
		if err != nil {
			return nil, err
		}
		if ok {
			sb.WriteString(scalarString(v))
		} else {
			sb.WriteString(text)
		}
		last = m[1]
	}
	sb.WriteString(s[last:])
	return sb.String(), nil
}

// LookupPath returns the value at path (".a.b[0]" or "a.b[0]") in v, and
// whether it is there.
func LookupPath(v any, path string) (any, bool) {
	if path != "" && path[0] != '.' && path[0] != '[' {
		path = "." + path
	}
	cur, _, err := walkPath(v, path)
	return cur, err == nil
}

// escapePointer escapes a mapping key for a JSON Pointer.
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// errAbsent marks a reference to a field the resource does not have.
var errAbsent = errors.New("absent")

// lookupRef returns the value at path (".a.b[0]") in resource name. A
// field that is absent (rather than a step into a value of the wrong
// kind) is an error wrapping errAbsent: the server may set it.
func lookupRef(text, name, path string, res []Resource, byName map[string]int) (any, error) {
	cur, walked, err := walkPath(res[byName[name]].Properties, path)
	switch {
	case errors.Is(err, errAbsent):
		return nil, fmt.Errorf("%s: resource %s has no %s: %w", text, name, walked, errAbsent)
	case err != nil:
		return nil, invalid("%s: resource %s has no %s (%v)", text, name, walked, err)
	}
	if s, ok := cur.(string); ok && strings.Contains(s, "$(ref.") {
		// The value is itself a deferred reference: this one waits for
		// the live object too.
		return nil, fmt.Errorf("%s: value %q is itself deferred: %w", text, s, errAbsent)
	}
	return cur, nil
}

// walkPath follows path (".a.b[0]") from v. On failure it returns the
// path walked up to and including the failing step, and errAbsent when
// the step is missing, or an error saying what the value in the way is.
func walkPath(v any, path string) (any, string, error) {
	cur := v
	walked := ""
	for path != "" {
		var step string
		if path[0] == '[' {
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return nil, walked + path, fmt.Errorf("unterminated index")
			}
			step, path = path[:end+1], path[end+1:]
			n, err := strconv.Atoi(step[1 : len(step)-1])
			if err != nil {
				return nil, walked + step, fmt.Errorf("index %s is not a number", step)
			}
			switch l := cur.(type) {
			case []any:
				if n < 0 || n >= len(l) {
					return nil, walked + step, errAbsent
				}
				cur = l[n]
			case nil:
				return nil, walked + step, errAbsent
			default:
				return nil, walked + step, fmt.Errorf("%s is %s", orTop(walked), kindOf(cur))
			}
		} else {
			end := strings.IndexAny(path[1:], ".[")
			if end < 0 {
				end = len(path) - 1
			}
			step, path = path[:end+1], path[end+1:]
			switch m := cur.(type) {
			case map[string]any:
				e, ok := m[step[1:]]
				if !ok {
					return nil, walked + step, errAbsent
				}
				cur = e
			case nil:
				return nil, walked + step, errAbsent
			default:
				return nil, walked + step, fmt.Errorf("%s is %s", orTop(walked), kindOf(cur))
			}
		}
		walked += step
	}
	return cur, walked, nil
}

func orTop(p string) string {
	if p == "" {
		return "the object"
	}
	return p
}

// scalarString formats a value inside a longer string.
func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	default:
		return fmt.Sprint(v)
	}
}

// noSuchResource is the error of a value reference to a name no primitive
// has: it lists the names that exist and suggests the nearest.
func noSuchResource(ref, name string, res []Resource) error {
	names := make([]string, len(res))
	for i, r := range res {
		names[i] = r.Name
	}
	list := strings.Join(names, ", ")
	if len(names) > 10 {
		list = strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	msg := fmt.Sprintf("%s: no resource named %q in the deployment (resources: %s)", ref, name, list)
	if near := derrors.Near(name, names); len(near) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(near, " or "))
	}
	return derrors.Errorf(derrors.InvalidArgument, "%s", msg)
}
