package starlark

import (
	"crypto/md5"  //nolint:gosec // Python's hashlib.md5, for names, not security
	"crypto/sha1" //nolint:gosec // Python's hashlib.sha1, for names, not security
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"

	"go.starlark.net/starlark"
)

// hashConstructors are the algorithms of Python's hashlib that DM's
// templates use to derive stable names (the Cloud Foundation Toolkit's
// external_load_balancer.py names its backend services by
// sha1(json.dumps(spec).encode('utf-8')).hexdigest()[:10]).
var hashConstructors = map[string]func() hash.Hash{
	"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224, "sha256": sha256.New,
	"sha384": sha512.New384, "sha512": sha512.New,
}

// hashlibModule is Python's hashlib: md5, sha1, sha224, sha256, sha384,
// sha512 and new(name), each taking bytes (or a str, as Python 2's did),
// whose objects have update, digest, hexdigest, copy, name, digest_size
// and block_size.
func hashlibModule() starlark.StringDict {
	d := starlark.StringDict{}
	for name, h := range hashConstructors {
		d[name] = builtin("hashlib."+name, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var data starlark.Value
			if err := starlark.UnpackPositionalArgs("hashlib."+name, args, kwargs, 0, &data); err != nil {
				return nil, err
			}
			return newHashObject(name, h(), data)
		})
	}
	d["new"] = builtin("hashlib.new", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var name string
		var data starlark.Value
		if err := starlark.UnpackPositionalArgs("hashlib.new", args, kwargs, 1, &name, &data); err != nil {
			return nil, err
		}
		h, ok := hashConstructors[strings.ToLower(name)]
		if !ok {
			return nil, fmt.Errorf("hashlib.new: unsupported hash type %s (dm has md5, sha1, sha224, sha256, sha384, sha512)", name)
		}
		return newHashObject(strings.ToLower(name), h(), data)
	})
	return d
}

func newHashObject(name string, h hash.Hash, data starlark.Value) (starlark.Value, error) {
	o := &hashObject{name: name, h: h}
	if data != nil {
		if err := o.write("hashlib."+name, data); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// hashObject is a hashlib hash object.
type hashObject struct {
	name string
	h    hash.Hash
}

var _ starlark.HasAttrs = (*hashObject)(nil)

func (o *hashObject) String() string        { return "<" + o.name + " HASH object>" }
func (o *hashObject) Type() string          { return "hashlib.HASH" }
func (o *hashObject) Freeze()               {}
func (o *hashObject) Truth() starlark.Bool  { return starlark.True }
func (o *hashObject) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: %s", o.Type()) }

// write adds data, bytes or a str (its UTF-8 bytes), to the hash.
func (o *hashObject) write(fn string, data starlark.Value) error {
	switch v := data.(type) {
	case starlark.Bytes:
		o.h.Write([]byte(v))
	case starlark.String:
		o.h.Write([]byte(v))
	default:
		return fmt.Errorf("%s: want bytes or str, not %s", fn, data.Type())
	}
	return nil
}

func (o *hashObject) AttrNames() []string {
	return []string{"block_size", "copy", "digest", "digest_size", "hexdigest", "name", "update"}
}

func (o *hashObject) Attr(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(o.name), nil
	case "digest_size":
		return starlark.MakeInt(o.h.Size()), nil
	case "block_size":
		return starlark.MakeInt(o.h.BlockSize()), nil
	case "update":
		return builtin(o.name+".update", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var data starlark.Value
			if err := starlark.UnpackPositionalArgs("update", args, kwargs, 1, &data); err != nil {
				return nil, err
			}
			return starlark.None, o.write("update", data)
		}), nil
	case "digest", "hexdigest":
		return builtin(o.name+"."+name, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackPositionalArgs(name, args, kwargs, 0); err != nil {
				return nil, err
			}
			sum := o.h.Sum(nil)
			if name == "digest" {
				return starlark.Bytes(sum), nil
			}
			return starlark.String(hex.EncodeToString(sum)), nil
		}), nil
	case "copy":
		return builtin(o.name+".copy", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackPositionalArgs("copy", args, kwargs, 0); err != nil {
				return nil, err
			}
			c := &hashObject{name: o.name, h: hashConstructors[o.name]()}
			// The state of Go's hashes is copied through their binary
			// form.
			m, ok := o.h.(interface{ MarshalBinary() ([]byte, error) })
			u, ok2 := c.h.(interface{ UnmarshalBinary([]byte) error })
			if !ok || !ok2 {
				return nil, fmt.Errorf("%s.copy: not supported", o.name)
			}
			b, err := m.MarshalBinary()
			if err != nil {
				return nil, err
			}
			return c, u.UnmarshalBinary(b)
		}), nil
	}
	return nil, nil
}
