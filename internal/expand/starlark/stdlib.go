package starlark

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The Python standard library modules below are those public DM templates
// import beside copy, hashlib, json, math, re, six and yaml: the Cloud
// Foundation Toolkit's cloud_sql template, for one, starts with `import
// collections, random, string` and uses collections.namedtuple.

// stringModule is Python's string module: its constants (Python 2's
// letters, lowercase and uppercase too, which Deployment Manager's
// Python 2 had).
func stringModule() starlark.StringDict {
	const (
		lower = "abcdefghijklmnopqrstuvwxyz"
		upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
		space = " \t\n\r\x0b\x0c"
	)
	d := starlark.StringDict{}
	for k, v := range map[string]string{
		"ascii_lowercase": lower, "ascii_uppercase": upper, "ascii_letters": lower + upper,
		"lowercase": lower, "uppercase": upper, "letters": lower + upper,
		"digits": "0123456789", "hexdigits": "0123456789abcdefABCDEF", "octdigits": "01234567",
		"punctuation": punct, "whitespace": space,
		"printable": "0123456789" + lower + upper + punct + space,
	} {
		d[k] = starlark.String(v)
	}
	return d
}

// randomModule is Python's random module as far as a template may import
// it: calling any of its functions is an error, for dm expands a
// configuration again on every deploy, update and diff, and a random value
// would change the resources each time (Deployment Manager expanded once
// per update, and kept what it made).
func randomModule() starlark.StringDict {
	d := starlark.StringDict{}
	for _, name := range []string{"choice", "choices", "randint", "randrange", "random", "sample", "shuffle", "uniform", "seed", "getrandbits"} {
		d[name] = builtin("random."+name, func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return nil, fmt.Errorf("random.%s: dm expands a configuration again on every deploy, update and diff, so a random value would change its resources each time; derive the value from env['deployment'] or env['name'], or pass it as a property", name)
		})
	}
	return d
}

// sysModule is the part of Python's sys a template can use: the version
// (Python 3's, whose semantics dm follows: true division, str is text),
// sys.maxsize (and Python 2's sys.maxint), sys.platform, an empty argv,
// and sys.stdout and sys.stderr, whose write() goes where print goes
// (the expansion's logs). sys.exit is refused by name: a template cannot
// end the process that expands it.
func sysModule() starlark.StringDict {
	stream := func(name string) starlark.Value {
		return newNamespace("file", []string{"flush", "write"},
			builtin("sys."+name+".flush", func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
				return starlark.None, nil
			}),
			builtin("sys."+name+".write", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
				var s string
				if err := starlark.UnpackPositionalArgs("sys."+name+".write", args, kwargs, 1, &s); err != nil {
					return nil, err
				}
				if th.Print != nil {
					th.Print(th, strings.TrimSuffix(s, "\n"))
				}
				return starlark.MakeInt(len(s)), nil
			}),
		)
	}
	maxsize := starlark.MakeInt64(1<<63 - 1)
	return starlark.StringDict{
		"version": starlark.String("3.11.0 (dm)"),
		"version_info": &namedTuple{typename: "sys.version_info", fields: []string{"major", "minor", "micro", "releaselevel", "serial"},
			index: map[string]int{"major": 0, "minor": 1, "micro": 2, "releaselevel": 3, "serial": 4},
			Tuple: starlark.Tuple{starlark.MakeInt(3), starlark.MakeInt(11), starlark.MakeInt(0), starlark.String("final"), starlark.MakeInt(0)}},
		"maxsize":   maxsize,
		"maxint":    maxsize,
		"platform":  starlark.String("linux"),
		"byteorder": starlark.String("little"),
		"argv":      starlark.NewList([]starlark.Value{starlark.String("")}),
		"stdout":    stream("stdout"),
		"stderr":    stream("stderr"),
		"exit": builtin("sys.exit", func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return nil, fmt.Errorf("sys.exit: a template cannot end the process that expands it; raise an exception (raise ValueError('...')) to stop the expansion with a message")
		}),
	}
}

// collectionsModule is Python's collections module: namedtuple and
// OrderedDict (a dict: Starlark's dicts keep insertion order, as an
// OrderedDict does).
func collectionsModule() starlark.StringDict {
	return starlark.StringDict{
		"namedtuple":  builtin("namedtuple", namedTupleType),
		"OrderedDict": starlark.Universe["dict"],
	}
}

// namedTupleType is collections.namedtuple(typename, field_names): the
// field names a list of strings or one string of names separated by
// commas or spaces. It returns the type, which called with the fields
// (positionally or by name) makes a tuple whose fields are also its
// attributes.
func namedTupleType(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var typename string
	var names starlark.Value
	if err := starlark.UnpackPositionalArgs("namedtuple", args, kwargs, 2, &typename, &names); err != nil {
		return nil, err
	}
	var fields []string
	switch n := names.(type) {
	case starlark.String:
		fields = strings.Fields(strings.ReplaceAll(string(n), ",", " "))
	case starlark.Iterable:
		it := n.Iterate()
		defer it.Done()
		var v starlark.Value
		for it.Next(&v) {
			s, ok := starlark.AsString(v)
			if !ok {
				return nil, fmt.Errorf("namedtuple %s: a field name is a %s, not a string", typename, v.Type())
			}
			fields = append(fields, s)
		}
	default:
		return nil, fmt.Errorf("namedtuple %s: field names are a %s, not a string or a list of strings", typename, names.Type())
	}
	index := make(map[string]int, len(fields))
	for i, f := range fields {
		if _, dup := index[f]; dup {
			return nil, fmt.Errorf("namedtuple %s: field %s named twice", typename, f)
		}
		index[f] = i
	}
	return builtin(typename, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > len(fields) {
			return nil, fmt.Errorf("%s takes %d fields (%s), got %d", typename, len(fields), strings.Join(fields, ", "), len(args))
		}
		vals := make(starlark.Tuple, len(fields))
		copy(vals, args)
		for _, kv := range kwargs {
			k := string(kv[0].(starlark.String))
			i, ok := index[k]
			if !ok {
				return nil, fmt.Errorf("%s has no field %s (its fields: %s)", typename, k, strings.Join(fields, ", "))
			}
			if vals[i] != nil {
				return nil, fmt.Errorf("%s: field %s given twice", typename, k)
			}
			vals[i] = kv[1]
		}
		for i, v := range vals {
			if v == nil {
				return nil, fmt.Errorf("%s: field %s is missing", typename, fields[i])
			}
		}
		return &namedTuple{typename: typename, fields: fields, index: index, Tuple: vals}, nil
	}), nil
}

// namedTuple is a value of a collections.namedtuple type: a tuple whose
// fields are also attributes.
type namedTuple struct {
	starlark.Tuple
	typename string
	fields   []string
	index    map[string]int
}

var (
	_ starlark.HasAttrs   = (*namedTuple)(nil)
	_ starlark.Indexable  = (*namedTuple)(nil)
	_ starlark.Comparable = (*namedTuple)(nil)
)

// Type is the namedtuple's type name.
func (t *namedTuple) Type() string { return t.typename }

// String is Python's repr of a namedtuple: Name(a=1, b=2).
func (t *namedTuple) String() string {
	var b strings.Builder
	b.WriteString(t.typename + "(")
	for i, f := range t.fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f + "=" + t.Tuple[i].String())
	}
	return b.String() + ")"
}

// Attr is the field called name.
func (t *namedTuple) Attr(name string) (starlark.Value, error) {
	if i, ok := t.index[name]; ok {
		return t.Tuple[i], nil
	}
	return nil, nil
}

// AttrNames are the fields.
func (t *namedTuple) AttrNames() []string { return append([]string(nil), t.fields...) }

// CompareSameType compares as tuples do.
func (t *namedTuple) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return t.Tuple.CompareSameType(op, y.(*namedTuple).Tuple, depth)
}
