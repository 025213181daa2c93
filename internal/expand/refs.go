package expand

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// refRE matches a value reference $(ref.NAME.PATH), PATH made of .field and
// [index] steps.
var refRE = regexp.MustCompile(`\$\(ref\.([^.\[\)\s]+)((?:\.[^.\[\)\s]+|\[\d+\])*)\)`)

type valueRef struct {
	text   string // the whole $(ref...) text
	target int    // index of the referenced resource
	path   []string
}

// resolveValueRefs replaces every $(ref.NAME.PATH) in the primitives'
// properties by the value at PATH in the (resolved) properties of the
// primitive NAME, and returns the primitives' names ordered so that each
// comes after those it references, otherwise in expansion order. paths
// are the layout paths of the primitives, for errors.
func resolveValueRefs(res []Resource, paths [][]string) ([]string, error) {
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
					perr = invalid("%s: no resource named %q in the deployment", m[0], m[1])
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
			return nil, &Error{Path: paths[i], Err: perr}
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
			return nil, err
		}
	}
	if found {
		for _, i := range order {
			if len(deps[i]) == 0 {
				continue
			}
			v, err := substituteRefs(res[i].Properties, res, byName)
			if err != nil {
				return nil, &Error{Path: paths[i], Err: err}
			}
			res[i].Properties = v.(map[string]any)
		}
	}
	names := make([]string, len(order))
	for k, i := range order {
		names[k] = res[i].Name
	}
	return names, nil
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

// substituteRefs returns v with references replaced, copying only what
// changes.
func substituteRefs(v any, res []Resource, byName map[string]int) (any, error) {
	switch v := v.(type) {
	case string:
		if !strings.Contains(v, "$(ref.") {
			return v, nil
		}
		ms := refRE.FindAllStringSubmatchIndex(v, -1)
		if len(ms) == 1 && ms[0][0] == 0 && ms[0][1] == len(v) {
			// The whole string is one reference: the value keeps its type.
			return lookupRef(v, v[ms[0][2]:ms[0][3]], v[ms[0][4]:ms[0][5]], res, byName)
		}
		var sb strings.Builder
		last := 0
		for _, m := range ms {
			sb.WriteString(v[last:m[0]])
			val, err := lookupRef(v[m[0]:m[1]], v[m[2]:m[3]], v[m[4]:m[5]], res, byName)
			if err != nil {
				return nil, err
			}
			sb.WriteString(scalarString(val))
			last = m[1]
		}
		sb.WriteString(v[last:])
		return sb.String(), nil
	case map[string]any:
		var out map[string]any
		for k, e := range v {
			ne, err := substituteRefs(e, res, byName)
			if err != nil {
				return nil, err
			}
			if s, ok := e.(string); ok {
				if ns, ok := ne.(string); ok && ns == s {
					continue
				}
			} else if !isContainer(e) {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(v))
				for kk, vv := range v {
					out[kk] = vv
				}
			}
			out[k] = ne
		}
		if out == nil {
			return v, nil
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			ne, err := substituteRefs(e, res, byName)
			if err != nil {
				return nil, err
			}
			out[i] = ne
		}
		return out, nil
	}
	return v, nil
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// lookupRef returns the value at path (".a.b[0]") in resource name.
func lookupRef(text, name, path string, res []Resource, byName map[string]int) (any, error) {
	var cur any = res[byName[name]].Properties
	walked := ""
	for path != "" {
		var step string
		if path[0] == '[' {
			end := strings.IndexByte(path, ']')
			step, path = path[:end+1], path[end+1:]
			n, _ := strconv.Atoi(step[1 : len(step)-1])
			l, ok := cur.([]any)
			if !ok || n >= len(l) {
				return nil, invalid("%s: resource %s has no %s%s", text, name, walked, step)
			}
			cur = l[n]
		} else {
			end := strings.IndexAny(path[1:], ".[")
			if end < 0 {
				end = len(path) - 1
			}
			step, path = path[:end+1], path[end+1:]
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, invalid("%s: resource %s has no %s%s (%s is %s)", text, name, walked, step, orTop(walked), kindOf(cur))
			}
			v, ok := m[step[1:]]
			if !ok {
				return nil, invalid("%s: resource %s has no %s%s", text, name, walked, step)
			}
			cur = v
		}
		walked += step
	}
	if s, ok := cur.(string); ok && strings.Contains(s, "$(ref.") {
		// Cannot happen after ordering, unless the path points at a
		// string that was itself not resolved; say so rather than leak.
		return nil, invalid("%s: value %q is itself an unresolved reference", text, s)
	}
	return cur, nil
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
