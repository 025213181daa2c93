package starlark

import (
	"fmt"
	"sort"

	"go.starlark.net/starlark"
)

// pyNamespace is an object whose attributes a template may set, as
// Python lets it set any attribute of an object: GenerateConfig's
// context (`context.shared_vpc = ...`, which templates use to hand values
// to their helpers).
type pyNamespace struct {
	typ    string
	attrs  map[string]starlark.Value
	frozen bool
}

var _ starlark.HasSetField = (*pyNamespace)(nil)

func newNamespace(typ string, attrs map[string]starlark.Value) *pyNamespace {
	return &pyNamespace{typ: typ, attrs: attrs}
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
	for _, v := range n.attrs {
		v.Freeze()
	}
}

// Attr returns an attribute, or nil (no such attribute).
func (n *pyNamespace) Attr(name string) (starlark.Value, error) { return n.attrs[name], nil }

// AttrNames lists the attributes, sorted.
func (n *pyNamespace) AttrNames() []string {
	out := make([]string, 0, len(n.attrs))
	for k := range n.attrs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SetField sets an attribute.
func (n *pyNamespace) SetField(name string, v starlark.Value) error {
	if n.frozen {
		return fmt.Errorf("cannot set .%s of a frozen %s object", name, n.typ)
	}
	n.attrs[name] = v
	return nil
}
