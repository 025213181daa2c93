package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"sort"
)

// Order remembers the document order of the keys of decoded mappings,
// so that mappings keep the order they were written in from the
// configuration through properties into templates, as PyYAML and Python 3.7+
// dicts do (a template that builds a list by iterating a dict depends on
// it). The engine's values stay plain map[string]any; the order lives
// beside them, keyed by map identity, for one expansion. Not safe for
// concurrent use: one run records and reads it on one goroutine.
type Order struct {
	m map[uintptr]orderEntry
}

type orderEntry struct {
	m    map[string]any // keeps the map alive, so its address is not reused
	keys []string
}

// NewOrder returns an empty Order.
func NewOrder() *Order { return &Order{m: map[uintptr]orderEntry{}} }

// Record notes keys as m's order.
func (o *Order) Record(m map[string]any, keys []string) {
	if o == nil || len(keys) < 2 {
		return
	}
	o.m[reflect.ValueOf(m).Pointer()] = orderEntry{m: m, keys: keys}
}

// Keys returns m's keys in document order: the recorded keys that m still
// has, then keys added since (a schema's defaults), sorted. Without a
// record (a nil keyOrder, a map built in Go) the keys are sorted. The
// Starlark and Jinja engines use it to build their dicts.
func (o *Order) Keys(m map[string]any) []string {
	if o == nil || len(m) < 2 {
		return SortedKeys(m)
	}
	e, ok := o.m[reflect.ValueOf(m).Pointer()]
	if !ok {
		return SortedKeys(m)
	}
	out := make([]string, 0, len(m))
	seen := make(map[string]bool, len(e.keys))
	for _, k := range e.keys {
		if _, ok := m[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == len(m) {
		return out
	}
	n := len(out)
	for k := range m {
		if !seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out[n:])
	return out
}

// Inherit records for dst (a copy of src with keys added, such as
// properties after schema defaults) src's order.
func (o *Order) Inherit(dst, src map[string]any) {
	if o == nil {
		return
	}
	if e, ok := o.m[reflect.ValueOf(src).Pointer()]; ok {
		o.Record(dst, e.keys)
	}
}

// SortedKeys returns m's keys, sorted.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Sorted is the key order of mappings without a recorded one: sorted.
// Engines use it when an invocation carries no Order.
type Sorted struct{}

// Keys returns m's keys, sorted.
func (Sorted) Keys(m map[string]any) []string { return SortedKeys(m) }

// Record does nothing.
func (Sorted) Record(map[string]any, []string) {}

// Inherit does nothing.
func (Sorted) Inherit(_, _ map[string]any) {}

// FilesKey identifies a set of files by their names and content, for
// caches (Invocation.FilesKey of a configuration's imports).
func FilesKey(files map[string][]byte) string {
	h := sha256.New()
	for _, k := range SortedKeys(files) {
		sum := sha256.Sum256(files[k])
		fmt.Fprintf(h, "%s\x00%x\n", k, sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}
