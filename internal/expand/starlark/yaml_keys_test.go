package starlark

import (
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/expand/pyyaml"
)

// TestPyYAMLComplexKeys checks keys PyYAML writes after "? " (128
// characters or more, empty, several lines), against PyYAML 6's output:
// YAML limits implicit keys to 1024 characters, so a long key written as
// a simple one would not read back.
func TestPyYAMLComplexKeys(t *testing.T) {
	k, x := strings.Repeat("k", 130), strings.Repeat("x", 200)
	tests := []struct {
		flow string
		v    map[string]any
		want string
	}{
		{"block", map[string]any{k: int64(1), "a": map[string]any{x: []any{int64(1)}}, "": int64(2), "m\nl": int64(3)},
			"? ''\n: 2\na:\n  ? " + x + "\n  : - 1\n? " + k + "\n: 1\n? 'm\n\n  l'\n: 3\n"},
		{"flow", map[string]any{k: int64(1)}, "{? " + k + "\n  : 1}\n"},
		{"block", map[string]any{strings.Repeat("k", 127): int64(1)}, strings.Repeat("k", 127) + ": 1\n"},
	}
	for _, tt := range tests {
		e := newPyYAMLEmitter(1 << 20)
		e.flowStyle = tt.flow
		got, err := e.dump(tt.v)
		if err != nil || got != tt.want {
			t.Errorf("dump = %q, %v\nwant %q", got, err, tt.want)
		}
		if _, _, err := pyyaml.Decode([]byte(got), pyyaml.Options{}); err != nil {
			t.Errorf("%q does not read back: %v", got, err)
		}
	}
}
