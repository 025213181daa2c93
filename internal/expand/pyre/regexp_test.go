package pyre

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/expand/engine"
)

// pyCase is one line of testdata/python_re.json, written by Python's re
// (scripts/dmref/re_cases.py).
type pyCase struct {
	P    string  `json:"p"`
	S    string  `json:"s"`
	Mode string  `json:"mode"`
	Err  string  `json:"err"`
	Loc  []int   `json:"loc"`
	All  [][]int `json:"all"`
}

// TestPythonRe compares every pattern and input of the Python-written
// table with dm's: the same errors (compile or not), the same groups of
// search, match and fullmatch, the same matches of finditer, on RE2 and
// on regexp2 alike.
func TestPythonRe(t *testing.T) {
	b, err := os.ReadFile("testdata/python_re.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []pyCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	compiled := map[string]*Regexp{}
	for _, c := range cases {
		re, ok := compiled[c.P]
		if !ok {
			var err error
			re, err = Compile(c.P, 0, 0)
			if c.Err != "" {
				compiled[c.P] = nil
				if err == nil {
					t.Errorf("%q compiles; Python: %s", c.P, c.Err)
				}
				continue
			}
			compiled[c.P] = re
			if err != nil {
				t.Errorf("%q: %v", c.P, err)
				continue
			}
		}
		if re == nil {
			continue
		}
		switch c.Mode {
		case "all":
			var got [][]int
			if err := re.FindAll(c.S, func(loc []int) bool { got = append(got, loc[:2]); return true }); err != nil {
				t.Errorf("%q finditer %q: %v", c.P, c.S, err)
				continue
			}
			if len(got) != len(c.All) || !slices.EqualFunc(got, c.All, slices.Equal[[]int]) {
				t.Errorf("%q finditer %q = %v, Python %v", c.P, c.S, got, c.All)
			}
		default:
			mode := map[string]Mode{"search": Search, "match": Anchored, "fullmatch": Full}[c.Mode]
			got, err := re.Find(c.S, mode)
			if err != nil {
				t.Errorf("%q %s %q: %v", c.P, c.Mode, c.S, err)
				continue
			}
			if !slices.Equal(got, c.Loc) {
				t.Errorf("%q %s %q = %v, Python %v (RE2: %v)", c.P, c.Mode, c.S, got, c.Loc, re.onRE2(c.S))
			}
			if c.Mode == "search" {
				if ok, _ := re.MatchString(c.S); ok != (c.Loc != nil) {
					t.Errorf("%q MatchString %q = %v, Python %v", c.P, c.S, ok, c.Loc != nil)
				}
			}
		}
	}
}

// A pattern that backtracks catastrophically ends in an error naming
// the limit, not in a hang; one RE2 can match runs in linear time.
func TestCatastrophicBacktracking(t *testing.T) {
	input := strings.Repeat("a", 40) + "!"
	for _, p := range []string{`^(a|aa)+(?=!)$`, `(?<=a)(a*)*b`, `^(a+)+\1b`, `^(\w+\s?)*(?!x)$`} {
		re, err := Compile(p, 0, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = re.MatchString(input)
		var le *engine.LimitError
		if !errors.As(err, &le) || le.Field != TimeoutField || !strings.Contains(err.Error(), strconv.Quote(p)) {
			t.Errorf("%q: err = %v, want a %s limit error naming the pattern", p, err, TimeoutField)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%q: the match took %v", p, d)
		}
	}
	for _, p := range []string{`^(a+)+$`, `^(a|aa)+$`, `(x+x+)+y`} {
		re, err := Compile(p, 0, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !re.UsesRE2() {
			t.Errorf("%q does not match with RE2", p)
		}
		if ok, err := re.MatchString(input); ok || err != nil {
			t.Errorf("%q: %v, %v", p, ok, err)
		}
	}
}

// What needs regexp2 and what RE2 keeps.
func TestEngineChoice(t *testing.T) {
	for p, re2 := range map[string]bool{
		`^[a-z]([-a-z0-9]*[a-z0-9])?$`: true, `^.{0,1023}$`: true, `(?P<n>a)`: true, `\Z`: true,
		`(?!-)`: false, `(a)\1`: false, `(?<=a)`: false, `(?P<n>a)(?P=n)`: false, `(?>a)`: false,
	} {
		r, err := Compile(p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.UsesRE2() != re2 {
			t.Errorf("%q: RE2 %v, want %v", p, r.UsesRE2(), re2)
		}
	}
}

// A huge repeat count compiles quickly (on the backtracking engine) and
// matches what it says.
func TestHugeRepeat(t *testing.T) {
	start := time.Now()
	re, err := Compile(`^a{2,999999999}$`, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if re.UsesRE2() {
		t.Error("a count RE2 cannot split runs on RE2")
	}
	for s, want := range map[string]bool{"a": false, "aa": true, strings.Repeat("a", 20000): true} {
		if ok, err := re.MatchString(s); ok != want || err != nil {
			t.Errorf("%d a's: %v, %v", len(s), ok, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
