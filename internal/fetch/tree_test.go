package fetch

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeTree(t *testing.T) {
	sha := strings.Repeat("a", 40)
	for _, tc := range []struct {
		name, in  string
		max       int
		want      []treeEntry
		truncated bool
		err       string
	}{
		{name: "GitHub's answer", max: 10,
			in:   `{"sha":"` + sha + `","url":"https://api.github.com/x","tree":[{"path":"a/b.jinja","mode":"100644","type":"blob","sha":"` + sha + `","size":12,"url":"u"},{"path":"a","mode":"040000","type":"tree","sha":"` + sha + `","url":"u"}],"truncated":true}`,
			want: []treeEntry{{Path: "a/b.jinja", Mode: "100644", Type: "blob", SHA: sha, Size: 12}, {Path: "a", Mode: "040000", Type: "tree", SHA: sha}}, truncated: true},
		{name: "empty tree", max: 10, in: `{"sha":"` + sha + `","tree":[]}`},
		{name: "over the bound", max: 1, in: `{"tree":[{"path":"a"},{"path":"b"},{"path":"c"}]}`, want: []treeEntry{{Path: "a"}}, err: "entries"},
		{name: "not an object", max: 10, in: `[]`, err: "want {"},
		{name: "tree not a list", max: 10, in: `{"tree":{}}`, err: "want ["},
		{name: "entry of the wrong type", max: 10, in: `{"tree":[{"path":1}]}`, err: "entry 0"},
		{name: "cut short", max: 10, in: `{"tree":[{"path":"a"}`, want: []treeEntry{{Path: "a"}}, err: "EOF"},
		{name: "not JSON", max: 10, in: `<html>`, err: "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []treeEntry
			tl, err := decodeTree(strings.NewReader(tc.in), tc.max, func(e treeEntry) { got = append(got, e) })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want one saying %q", err, tc.err)
				}
				if tc.err == "entries" {
					var b *BoundError
					if !errors.As(err, &b) || b.Limit != int64(tc.max) {
						t.Errorf("err = %v, want a *BoundError of %d", err, tc.max)
					}
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries %+v, want %+v", got, tc.want)
			}
			if err == nil && tl.Truncated != tc.truncated {
				t.Errorf("truncated = %v, want %v", tl.Truncated, tc.truncated)
			}
		})
	}
}

// FuzzDecodeTree: any answer is decoded or refused, never a panic, and
// never more entries than the bound; a listing encoded by encoding/json,
// its entries made of the fuzzed strings, comes back as it was.
func FuzzDecodeTree(f *testing.F) {
	f.Add(`{"sha":"x","tree":[{"path":"a","mode":"100644","type":"blob","sha":"s","size":1}],"truncated":false}`, 2, "a/b", "100644", int64(3))
	f.Add(`{"tree":[{},{},{}]}`, 1, "", "", int64(0))
	f.Add(`{"tree":[`, 3, "\u00e9\"<>", "040000", int64(-1))
	f.Fuzz(func(t *testing.T, in string, max int, path, mode string, size int64) {
		max = max%1000 + 1
		if max <= 0 {
			max += 1000
		}
		n := 0
		_, _ = decodeTree(strings.NewReader(in), max, func(treeEntry) { n++ })
		if n > max {
			t.Fatalf("%d entries past a bound of %d", n, max)
		}
		if !utf8.ValidString(path) || !utf8.ValidString(mode) {
			return // encoding/json writes U+FFFD for invalid UTF-8
		}
		want := []treeEntry{{Path: path, Mode: mode, Type: "blob", SHA: path, Size: size}, {Path: mode, Type: "tree"}}
		b, err := json.Marshal(map[string]any{"sha": path, "url": mode, "tree": want, "truncated": size%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		var got []treeEntry
		tl, err := decodeTree(strings.NewReader(string(b)), 2, func(e treeEntry) { got = append(got, e) })
		if err != nil {
			t.Fatalf("decodeTree(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, want) || tl.Truncated != (size%2 == 0) {
			t.Fatalf("decodeTree(%s) = %+v, %v: want %+v", b, got, tl, want)
		}
		if tl.SHA != path {
			t.Fatalf("sha %q, want %q", tl.SHA, path)
		}
	})
}
