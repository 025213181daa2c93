package value

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	yaml2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// sameAsSigsYAML fails unless MarshalYAML(v) gives the bytes and the
// error sigs.k8s.io/yaml.Marshal gives.
func sameAsSigsYAML(t *testing.T, v any) {
	t.Helper()
	want, wantErr := yaml.Marshal(v)
	got, gotErr := MarshalYAML(v)
	if string(got) != string(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("MarshalYAML(%#v) =\n%s(%v)\nwant\n%s(%v)", v, got, gotErr, want, wantErr)
	}
}

func TestMarshalYAMLCases(t *testing.T) {
	tests := []any{
		nil, "", "x", true, false, 0, 1, -1, int64(math.MaxInt64), int64(math.MinInt64), uint64(math.MaxUint64),
		0.0, math.Copysign(0, -1), 1.0, 1.5, -2.25, 1e20, 1e21, 1e-6, 1e-7, 123456789.123, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.NaN(), math.Inf(1),
		map[string]any{}, map[string]any(nil), []any{}, []any(nil),
		// Strings YAML would read as something else, or must quote.
		"yes", "no", "on", "off", "y", "n", "true", "null", "~", "1", "0x1F", "1e3", "0o17", "1_000", ".inf", "-.nan", "2026-11-25",
		" lead", "trail ", "a: b", "- x", "# c", "&a", "*a", "!t", "|", ">", "%x", "@x", "`x", "'", "\"", "{", "[", "a,b",
		"line\nbreak", "tab\there", "cr\rlf", "\x00nul", "\x1besc", "\x7fdel", "\u0085nel", "\u00a0nbsp", "\u2028ls", "\u2029ps", "\ufeffbom",
		"\ufffe", "\uffff", "\U0001F600", "caf\xe9", "\xff\xfe", "<>&", "multi\nline\ntext\n", strings.Repeat("long ", 40),
		// Keys: sorted as YAML sorts them (numbers in keys by value).
		map[string]any{"b": 1, "a": 2, "item10": 3, "item9": 4, "A": 5, "1": 6, "10": 7, "2": 8, "": 9, "yes": 10, "k\x7f": 11},
		map[string]any{"caf\xe9": 1},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "labels": map[string]any{"app": "y"}},
			"data": map[string]any{"port": "80", "n": int64(3), "f": 2.5, "list": []any{"a", int64(1), nil, true, map[string]any{"z": []any{}}}}},
		// Other types go through JSON, as sigs.k8s.io/yaml takes them.
		map[string]string{"a": "b"}, []string{"x"}, []int{1, 2}, struct {
			A int    `json:"a"`
			B string `json:"b,omitempty"`
		}{A: 1}, json.Number("12"), json.RawMessage(`{"r":1}`), []byte("bytes"), int32(7), float32(0.1), uint8(3),
		map[string]any{"f": func() {}}, []any{map[string]any{"c": make(chan int)}},
	}
	for i, v := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) { sameAsSigsYAML(t, v) })
	}
}

// TestMarshalYAMLGenerated compares the two on random plain values.
func TestMarshalYAMLGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 5))
	pieces := []string{"a", "B", "1", "0", "10", "-", ".", " ", ":", "#", "\n", "\t", "'", "\"", "\\", "yes", "null", "é", "\u2028", "\x7f", "\x01", "\xff", "~", "{", "e", "x"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(5) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(10); {
		case k < 2 && depth < 4:
			m := map[string]any{}
			for range r.IntN(5) {
				m[str()] = gen(depth + 1)
			}
			return m
		case k < 3 && depth < 4:
			l := []any{}
			for range r.IntN(4) {
				l = append(l, gen(depth+1))
			}
			return l
		case k < 5:
			return str()
		case k < 6:
			return int64(r.Int64N(1<<20)) - 1<<19
		case k < 7:
			return []float64{0, 0.5, 3, -1e-9, 1e21, 1e15, 2.5e-7, r.NormFloat64()}[r.IntN(8)]
		case k < 8:
			return r.IntN(2) == 0
		case k < 9:
			return nil
		}
		return r.Int64()
	}
	for range 3000 {
		sameAsSigsYAML(t, gen(0))
		if t.Failed() {
			return
		}
	}
}

// FuzzMarshalYAML compares the two on the plain values of arbitrary JSON
// documents.
func FuzzMarshalYAML(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `"\u007f"`, `{"item10":1,"item9":2}`, `1e21`, `-0`, `"\u0085"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		v, err := DecodeJSON([]byte(doc))
		if err != nil {
			return
		}
		sameAsSigsYAML(t, v)
	})
}

// TestFastYAML: the values MarshalYAML writes without the library (plain
// keys, one-line strings, integers) come out as the library writes them,
// long strings near the width where it folds them and keys whose digits it
// orders by value included; the fast path must take most objects.
func TestFastYAML(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 7))
	words := []string{"a", "compute", "10.0.0.0/20", "80", "https://www.googleapis.com/compute/v1/projects/p/global/networks/default", "echo hi > /etc/x", "true", "x y", "e2-small", "item10", "item9", "item09", "a.b/c-d", "v1beta1"}
	long := func() string {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(2) == 0 {
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(8); {
		case k < 2 && depth < 6:
			m := map[string]any{}
			for range r.IntN(6) {
				m[words[r.IntN(len(words))]] = gen(depth + 1)
			}
			return m
		case k < 4 && depth < 6:
			l := []any{}
			for range r.IntN(4) {
				l = append(l, gen(depth+1))
			}
			return l
		case k < 6:
			return long()
		case k < 7:
			return int64(r.IntN(1000))
		}
		return nil
	}
	fast := 0
	for range 3000 {
		v := gen(0)
		if _, ok := newYAMLWriter().fastYAML(v); ok {
			fast++
		}
		sameAsSigsYAML(t, v)
		if t.Failed() {
			return
		}
	}
	if fast < 1000 {
		t.Errorf("the fast path wrote %d of 3000 values", fast)
	}
}

// TestObviouslyPlain: the strings obviouslyPlain passes are written by the
// library as they are.
func TestObviouslyPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	alphabet := "aZy:/._-09 #,'\"nNoOfFtTeEuUlL"
	n := 0
	for range 200000 {
		b := make([]byte, 1+r.IntN(7))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(b)
		if !obviouslyPlain(s) {
			continue
		}
		n++
		if got, _ := yaml2.Marshal(s); string(got) != s+"\n" {
			t.Fatalf("obviouslyPlain(%q), but the library writes %q", s, got)
		}
	}
	if n < 1000 {
		t.Errorf("only %d strings were obviously plain", n)
	}
}
