package starlark

import (
	"fmt"
	"slices"

	"go.starlark.net/starlark"
)

// pyNamespace is an object whose attributes a template may set, as
// Python lets it set any attribute of an object: GenerateConfig's
// context (`context.shared_vpc = ...`, which templates use to hand values
// to their helpers), sys.stdout. Its few attributes are kept in two
// slices, which cost less than a map for the handful a context has.
type pyNamespace struct {
	typ    string
	names  []string
	values []starlark.Value
	frozen bool
}

var _ starlark.HasSetField = (*pyNamespace)(nil)

// newNamespace returns an object of type typ with the attributes names
// (sorted) holding values.
func newNamespace(typ string, names []string, values ...starlark.Value) *pyNamespace {
	return &pyNamespace{typ: typ, names: names, values: values}
}

// String is what str() of the object prints.
func (n *pyNamespace) String() string       { return "<" + n.typ + " object>" }
func (n *pyNamespace) Type() string         { return n.typ }
func (n *pyNamespace) Truth() starlark.Bool { return true }
func (n *pyNamespace) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable: %s object", n.typ)
}

// Freeze freezes the object and its attributes.
func (n *pyNamespace) Freeze() {
	if n.frozen {
		return
	}
	n.frozen = true
	for _, v := range n.values {
		v.Freeze()
	}
}

// Attr returns an attribute, or nil (no such attribute).
func (n *pyNamespace) Attr(name string) (starlark.Value, error) {
	for i, k := range n.names {
		if k == name {
			return n.values[i], nil
		}
	}
	return nil, nil
}

// AttrNames lists the attributes, sorted.
func (n *pyNamespace) AttrNames() []string { return slices.Clone(n.names) }

// SetField sets an attribute.
func (n *pyNamespace) SetField(name string, v starlark.Value) error {
	if n.frozen {
		return fmt.Errorf("cannot set .%s of a frozen %s object", name, n.typ)
	}
	i, found := slices.BinarySearch(n.names, name)
	if found {
		n.values[i] = v
		return nil
	}
	n.names = slices.Insert(slices.Clone(n.names), i, name)
	n.values = slices.Insert(n.values, i, v)
	return nil
}
