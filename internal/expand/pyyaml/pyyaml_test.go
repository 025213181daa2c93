package pyyaml

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestResolvePlain: plain scalars resolve as PyYAML's safe_load resolves
// them (the values were taken from PyYAML 6.0).
func TestResolvePlain(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{"y", "y"}, {"n", "n"}, {"Y", "Y"}, {"N", "N"},
		{"yes", true}, {"Yes", true}, {"YES", true}, {"no", false}, {"On", true}, {"OFF", false},
		{"true", true}, {"False", false}, {"tRUE", "tRUE"},
		{"~", nil}, {"null", nil}, {"NULL", nil}, {"", nil},
		{"1e3", "1e3"}, {"1.0e3", "1.0e3"}, {"1.0e+3", 1000.0}, {"0o17", "0o17"},
		{"017", int64(15)}, {"08", "08"}, {"0x1F", int64(31)}, {"0b1010", int64(10)},
		{"1_000", int64(1000)}, {"1__0", int64(10)}, {"0_17", int64(15)},
		{"12:30:00", int64(45000)}, {"1:60", "1:60"}, {"190:20:30.15", 685230.15},
		{"1.", 1.0}, {".5", 0.5}, {"._5", "._5"}, {"+1", int64(1)}, {"-0", int64(0)}, {"-1_0.5_", -10.5},
		{"2001-12-14", "2001-12-14"}, {"1.2.3", "1.2.3"}, {"v1", "v1"},
		{"12345678901234567890", 12345678901234567890.0},
	}
	for _, tt := range tests {
		if got := ResolvePlain(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ResolvePlain(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
	for in, want := range map[string]float64{".inf": math.Inf(1), "-.Inf": math.Inf(-1), "+.INF": math.Inf(1)} {
		if got := ResolvePlain(in); got != want {
			t.Errorf("ResolvePlain(%q) = %v, want %v", in, got, want)
		}
	}
	if f, ok := ResolvePlain(".NaN").(float64); !ok || !math.IsNaN(f) {
		t.Errorf("ResolvePlain(.NaN) is not NaN")
	}
}

// TestAliasBytes: aliases are bounded by what they add once expanded, not
// only by their number (issue 9's 1 MB scalar aliased 999 times).
func TestAliasBytes(t *testing.T) {
	big := "a: &a " + strings.Repeat("x", 100000) + "\nb: [" + strings.TrimSuffix(strings.Repeat("*a, ", 50), ", ") + "]\n"
	tests := []struct {
		name  string
		opts  Options
		field string
	}{
		{name: "within", opts: Options{MaxAliasBytes: 10 << 20}},
		{name: "over bytes", opts: Options{MaxAliasBytes: 1 << 20}, field: "MaxAliasBytes"},
		{name: "over count", opts: Options{MaxAliases: 10}, field: "MaxAliases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decode([]byte(big), tt.opts)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			le, ok := err.(*LimitError)
			if !ok || le.Field != tt.field {
				t.Fatalf("got %v, want a LimitError on %s", err, tt.field)
			}
		})
	}
}

// TestRecursiveAlias: an anchor that contains an alias of itself is an
// error that says so (PyYAML builds a recursive object; JSON cannot hold
// one).
func TestRecursiveAlias(t *testing.T) {
	for _, s := range []string{"a: &a [*a]\n", "&a {b: *a}\n", "a: &a\n  b: [1, {c: *a}]\n"} {
		if _, _, err := Decode([]byte(s), Options{}); err == nil || !strings.Contains(err.Error(), "recursive") {
			t.Errorf("Decode(%q) = %v, want a recursive-structure error", s, err)
		}
		if err := CheckAliases([]byte(s), Options{}); err == nil || !strings.Contains(err.Error(), "recursive") {
			t.Errorf("CheckAliases(%q) = %v, want a recursive-structure error", s, err)
		}
	}
}

// FuzzDecode: decoding never panics or hangs, limits hold, and every
// mapping key comes back as a string.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"a: yes\nb: [y, n, 017, 0x1F, 12:30:00, .inf, 1e3]\n",
		"a: &x {b: 1}\nc:\n  <<: *x\n  d: 2\n",
		"a: &a [1, 2]\nb: [*a, *a, *a]\n",
		"!!int '12'\n", "? [a]\n: b\n", "- !foo x\n", "a: 1\n---\nb: 2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{MaxAliases: 100, MaxAliasBytes: 1 << 16}
		v, _, err := Decode(data, opts)
		if err != nil {
			return
		}
		if cerr := CheckAliases(data, opts); cerr != nil {
			t.Fatalf("Decode accepted what CheckAliases refuses: %v", cerr)
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			case nil, string, bool, int64, float64:
			default:
				t.Fatalf("decoded a %T", v)
			}
		}
		walk(v)
	})
}

// TestDuplicateKeys: a repeated mapping key keeps the last value at the
// first key's place, as PyYAML's safe_load does, and each repetition is
// reported with its line.
func TestDuplicateKeys(t *testing.T) {
	type dup struct {
		line int
		key  string
	}
	for _, tc := range []struct {
		name, in string
		want     any
		dups     []dup
	}{
		{name: "last wins", in: "a: 1\nb: 2\na: 3\n", want: map[string]any{"a": int64(3), "b": int64(2)}, dups: []dup{{3, "a"}}},
		{name: "three times, nested", in: "x:\n  k: 1\n  k: 2\n  k: {z: 3}\n", want: map[string]any{"x": map[string]any{"k": map[string]any{"z": int64(3)}}}, dups: []dup{{3, "k"}, {4, "k"}}},
		{name: "flow", in: "{a: 1, a: 2}", want: map[string]any{"a": int64(2)}, dups: []dup{{1, "a"}}},
		{name: "resolved keys collide", in: "yes: 1\ntrue: 2\n", want: map[string]any{"true": int64(2)}, dups: []dup{{2, "true"}}},
		{name: "over a merge is no repetition", in: "b: &b {x: 1}\nd:\n  <<: *b\n  x: 2\n", want: map[string]any{"b": map[string]any{"x": int64(1)}, "d": map[string]any{"x": int64(2)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []dup
			var order []string
			v, _, err := Decode([]byte(tc.in), Options{
				Duplicate: func(line int, key string) { got = append(got, dup{line, key}) },
				Record: func(m map[string]any, keys []string) {
					if _, ok := m["b"]; ok && tc.name == "last wins" {
						order = keys
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, tc.want) {
				t.Errorf("value %#v, want %#v", v, tc.want)
			}
			if !reflect.DeepEqual(got, tc.dups) {
				t.Errorf("repetitions %v, want %v", got, tc.dups)
			}
			if tc.name == "last wins" && !reflect.DeepEqual(order, []string{"a", "b"}) {
				t.Errorf("key order %v, want [a b] (the first place, as a Python dict)", order)
			}
		})
	}
}
