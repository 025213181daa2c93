package value

import (
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"unicode/utf8"

	yaml2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// MarshalYAML returns what sigs.k8s.io/yaml.Marshal returns for v, byte
// for byte and error for error: keys sorted as YAML sorts them, numbers
// typed as YAML reads their JSON. That library writes v as JSON and parses
// the JSON back with YAML's parser before writing YAML, which was most of
// dm's own work when printing a chart's manifest; MarshalYAML turns plain
// values into what that parse would give directly. Anything else (other
// types, strings YAML's parser would refuse, floats) takes the library's
// way.
func MarshalYAML(v any) ([]byte, error) {
	return newYAMLWriter().marshal(v)
}

// marshal is MarshalYAML with w's cache: the values fastYAML writes go
// without the library, which turns every value into reflection and events
// (a hundred Config Connector objects took 4.5 ms that way).
func (w *yamlWriter) marshal(v any) ([]byte, error) {
	if b, ok := w.fastYAML(v); ok {
		return b, nil
	}
	y, ok := asParsedJSON(v)
	if !ok {
		return yaml.Marshal(v)
	}
	return yaml2.Marshal(y)
}

// MarshalYAMLEach marshals each of vs as MarshalYAML does, on as many
// processors as the program may use: a stream of many objects (dm convert
// of a hundred Google Cloud resources) is mostly YAML encoding, which is
// slow and independent object by object.
func MarshalYAMLEach(vs []map[string]any) ([][]byte, error) {
	out := make([][]byte, len(vs))
	errs := make([]error, len(vs))
	workers := min(runtime.GOMAXPROCS(0), len(vs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			yw := newYAMLWriter()
			for i := w; i < len(vs); i += workers {
				out[i], errs[i] = yw.marshal(vs[i])
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// asParsedJSON returns the value YAML's parser reads from v's JSON, or
// false when v is not a plain value it can tell that of without the JSON.
func asParsedJSON(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, plainString(x)
	case int:
		return x, true
	case int64:
		// YAML reads an integer that fits an int as an int.
		return int(x), int64(int(x)) == x
	case float64:
		// JSON's float format and YAML's reading of it decide int or
		// float and the digits: let them.
		b, err := json.Marshal(x)
		if err != nil {
			return nil, false
		}
		var out any
		if err := yaml2.Unmarshal(b, &out); err != nil {
			return nil, false
		}
		return out, true
	case map[string]any:
		if x == nil {
			return nil, true // JSON null
		}
		m := make(map[any]any, len(x))
		for k, e := range x {
			if !plainString(k) {
				return nil, false
			}
			y, ok := asParsedJSON(e)
			if !ok {
				return nil, false
			}
			m[k] = y
		}
		return m, true
	case []any:
		if x == nil {
			return nil, true
		}
		l := make([]any, len(x))
		for i, e := range x {
			y, ok := asParsedJSON(e)
			if !ok {
				return nil, false
			}
			l[i] = y
		}
		return l, true
	}
	return nil, false
}

// plainString reports whether s reads back from its JSON unchanged: valid
// UTF-8 (JSON replaces invalid bytes) whose characters JSON escapes or
// YAML's parser reads as themselves (not DEL, C1 controls or the byte
// order mark and U+FFFE/U+FFFF, which it refuses, nor NEL, which it folds
// as a line break).
func plainString(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return false
		case r < 0xa0, r >= 0xd800 && r < 0xe000, r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
		i += n
	}
	return true
}
