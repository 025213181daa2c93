package starlark

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The Python standard library modules below are those public DM templates
// import beside copy, json, math, re, six and yaml: the Cloud Foundation
// Toolkit's cloud_sql template, for one, starts with `import collections,
// random, string` and uses collections.namedtuple; its iam_member
// template imports hashlib.

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

// hashlibModule is Python's hashlib: md5, sha1, sha224, sha256, sha384
// and sha512 (the Cloud Foundation Toolkit's iam_member.py names its
// bindings by sha1(role-member).hexdigest()[:10]). Each takes bytes or a
// string (Python 2's str) and makes a hash object with update, digest and
// hexdigest.
func hashlibModule() starlark.StringDict {
	algos := map[string]func() hash.Hash{
		"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224, "sha256": sha256.New,
		"sha384": sha512.New384, "sha512": sha512.New,
	}
	d := starlark.StringDict{}
	for name, newHash := range algos {
		d[name] = builtin("hashlib."+name, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var data starlark.Value
			if err := starlark.UnpackPositionalArgs("hashlib."+name, args, kwargs, 0, &data); err != nil {
				return nil, err
			}
			h := &hashObject{name: name, h: newHash()}
			if data != nil {
				if err := h.write(data); err != nil {
					return nil, err
				}
			}
			return h, nil
		})
	}
	return d
}

// hashObject is a hashlib hash object.
type hashObject struct {
	name string
	h    hash.Hash
}

var _ starlark.HasAttrs = (*hashObject)(nil)

// String is Python's repr of a hash object.
func (h *hashObject) String() string { return "<" + h.name + " HASH object>" }

// Type is the hash object's type name.
func (h *hashObject) Type() string { return "hashlib." + h.name }

// Freeze does nothing: a hash object changes only through update.
func (h *hashObject) Freeze() {}

// Truth is true, as for any Python object.
func (h *hashObject) Truth() starlark.Bool { return starlark.True }

// Hash refuses: hash objects are unhashable, as in Python.
func (h *hashObject) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: %s", h.Type()) }

// write adds bytes, or a string's UTF-8 bytes, to the hash.
func (h *hashObject) write(v starlark.Value) error {
	switch v := v.(type) {
	case starlark.Bytes:
		h.h.Write([]byte(v))
	case starlark.String:
		h.h.Write([]byte(v))
	default:
		return fmt.Errorf("hashlib.%s: got %s, want bytes or a string", h.name, v.Type())
	}
	return nil
}

// Attr is the method called name.
func (h *hashObject) Attr(name string) (starlark.Value, error) {
	switch name {
	case "update":
		return builtin("update", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var data starlark.Value
			if err := starlark.UnpackPositionalArgs("update", args, kwargs, 1, &data); err != nil {
				return nil, err
			}
			return starlark.None, h.write(data)
		}), nil
	case "hexdigest":
		return builtin("hexdigest", func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.String(hex.EncodeToString(h.h.Sum(nil))), nil
		}), nil
	case "digest":
		return builtin("digest", func(*starlark.Thread, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.Bytes(h.h.Sum(nil)), nil
		}), nil
	case "name":
		return starlark.String(h.name), nil
	case "digest_size":
		return starlark.MakeInt(h.h.Size()), nil
	}
	return nil, nil
}

// AttrNames are the hash object's methods and attributes.
func (h *hashObject) AttrNames() []string {
	return []string{"digest", "digest_size", "hexdigest", "name", "update"}
}
