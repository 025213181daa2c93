package starlark

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// TestPyYAMLDump compares yaml.dump with PyYAML's output for the cases
// of testdata/python/yaml_dump.json (regenerate with
// `python3 testdata/python/yaml_dump_gen.py > testdata/python/yaml_dump.json`).
func TestPyYAMLDump(t *testing.T) {
	data, err := os.ReadFile("testdata/python/yaml_dump.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Src  string
		Kw   map[string]any
		Want string
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Src+fmt.Sprint(c.Kw), func(t *testing.T) {
			src, err := rewritePython("case.py", []byte(c.Src))
			if err != nil {
				t.Fatal(err)
			}
			v, err := starlark.Eval(&starlark.Thread{}, "case.py", src, nil)
			if err != nil {
				t.Fatal(err)
			}
			var kwargs []starlark.Tuple
			for k, x := range c.Kw {
				if f, ok := x.(float64); ok {
					x = int(f) // JSON numbers of the case file are ints
				}
				kwargs = append(kwargs, starlark.Tuple{starlark.String(k), toStarlark(x)})
			}
			got, err := pyYAMLDumps("yaml.dump", v, kwargs, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.Want {
				t.Errorf("got\n%s\nwant\n%s", strings.ReplaceAll(got, " ", "·"), strings.ReplaceAll(c.Want, " ", "·"))
			}
		})
	}
}
