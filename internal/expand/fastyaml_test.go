package expand

import (
	"reflect"
	"testing"
)

var fastYAMLSeeds = []string{
	"resources:\n- name: a\n  type: ConfigMap\n  properties:\n    apiVersion: v1\n    data: {a: 1, b: \"x\", c: [1, 2.5, true, null]}\n",
	"a:\n- 1\n- - 2\n  - 3\n- k: v\n  k2: 'it''s'\nb: \"q\\\"x\\n\"\nc:\nd: ~ # comment\n",
	"a: yes\n", "a: 0o17\n", "a: 1e3\n", "a: &x 1\nb: *x\n", "a: |\n  text\n", "a: b: c\n",
	"a: 1\na: 2\n", "- a\n- b\n", "a: -1\nb: -x\nc: 007\nd: 1.50\ne: 12345678901234567890\n",
	"a: 'x' # c\nb: \"y\"#c\n", "key with space: 1\n", "\"quoted\": [a, {b: c}]\n", "a: x # y\n  z\n",
	"a:\n  b: 1\n c: 2\n", "a: [1, 2,]\n", "a: {}\nb: []\n", "a: -\n", "a: 2001-12-14\n", "a: 1:20\n",
	"a: True\nb: FALSE\nc: Null\nd: \"\"\ne: ''\n", "a: \"\\u00e9\"\n", "a: .inf\n", "a:   spaced   \n",
	// PyYAML's resolution (issue 7 §4).
	"y: n\nY: N\nyes: On\noff: NO\n", "a: 12:30:00\nb: 0x1F\nc: 0b1010\nd: 1_000\ne: 017\nf: 08\n",
	"a: [.inf, -.Inf, .NaN, .5, 1., 1.0e+3, 1.0e3, +1, -0]\n", "a: <<\nb: =\n", "a: 190:20:30.15\nb: 2001-12-14t21:59:43.10-05:00\n",
	"a: &x {b: 1}\nc:\n  <<: *x\n  d: 2\n",
}

// TestFastYAML checks the fast decoder against the full (PyYAML-resolving)
// decoder on the seeds.
func TestFastYAML(t *testing.T) {
	for _, s := range fastYAMLSeeds {
		checkFastYAML(t, []byte(s))
	}
	v, ok := fastYAML([]byte(fastYAMLSeeds[0]), nil)
	if !ok || v == nil {
		t.Fatalf("fast path refused typical template output")
	}
}

func checkFastYAML(t *testing.T, data []byte) {
	t.Helper()
	fast, ok := fastYAML(data, nil)
	if !ok {
		return
	}
	slow, err := decodeYAML(data, yamlLimits{})
	if err != nil {
		t.Fatalf("fast path accepted what the full decoder rejects (%v):\n%s", err, data)
	}
	// finite writes NaN as a string, so DeepEqual can compare it.
	if !reflect.DeepEqual(finite(fast), finite(slow)) {
		t.Fatalf("fast path differs from the full decoder on:\n%s\nfast: %#v\nslow: %#v", data, fast, slow)
	}
}

// FuzzFastYAML: whatever the fast decoder accepts, it decodes as the full
// decoder does, PyYAML's scalar resolution included.
func FuzzFastYAML(f *testing.F) {
	for _, s := range fastYAMLSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastYAML(t, data)
	})
}

// FuzzEmitYAML: what emitYAML writes reads back as the same value, through
// both decoders.
func FuzzEmitYAML(f *testing.F) {
	for _, s := range fastYAMLSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeYAML(data, yamlLimits{maxAliases: 100})
		if err != nil {
			return
		}
		out, err := emitYAML(v)
		if err != nil {
			return // values the emitter does not write (there are none from YAML)
		}
		back, err := decodeYAML(out, yamlLimits{})
		if err != nil {
			t.Fatalf("emitted YAML does not parse (%v):\n%s", err, out)
		}
		if !reflect.DeepEqual(finite(v), finite(back)) {
			t.Fatalf("round trip differs:\nin:  %#v\nout: %s\nback: %#v", v, out, back)
		}
		checkFastYAML(t, out)
	})
}
