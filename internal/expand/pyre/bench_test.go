package pyre

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// samplePatterns reads testdata/sample_patterns.txt.
func samplePatterns(tb testing.TB) []string {
	f, err := os.Open("testdata/sample_patterns.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var p string
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			tb.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// sampleInputs are property values of the kinds the samples' patterns
// check: names, IP ranges, project and organization IDs, URLs.
var sampleInputs = []string{"web-1", "my-project-123456", "10.0.0.0/24", "10.128.0.2", "organizations/123456789012",
	"https://www.googleapis.com/compute/v1/projects/p/global/networks/default", "us-central1-a", "nsec3", "roles/storage.admin", "Not_Valid!"}

// TestSamplePatterns: every pattern of the public samples compiles as
// before, and matches each input as Go's regexp (what dm used before)
// does.
func TestSamplePatterns(t *testing.T) {
	for _, p := range samplePatterns(t) {
		old, oldErr := compileRE2(p)
		re, err := Compile(p, 0, 0)
		if (oldErr == nil) != (err == nil) {
			t.Errorf("%q: RE2 %v, pyre %v", p, oldErr, err)
			continue
		}
		if err != nil {
			continue
		}
		for _, s := range sampleInputs {
			got, err := re.MatchString(s)
			if err != nil || got != old.MatchString(s) {
				t.Errorf("%q on %q: %v, %v; RE2 %v", p, s, got, err, old.MatchString(s))
			}
		}
	}
}

// BenchmarkSamplePatterns compiles every schema pattern of the public
// samples and matches it against ten property values: as dm did before
// (Go's regexp, repeats over 1000 split) and through pyre.
func BenchmarkSamplePatterns(b *testing.B) {
	pats := samplePatterns(b)
	b.Run("re2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pats {
				re, err := compileRE2(p)
				if err != nil {
					b.Fatal(err)
				}
				for _, s := range sampleInputs {
					re.MatchString(s)
				}
			}
		}
	})
	b.Run("pyre", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pats {
				re, err := Compile(p, 0, 0)
				if err != nil {
					b.Fatal(err)
				}
				for _, s := range sampleInputs {
					if _, err := re.MatchString(s); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
	// Matching alone, patterns compiled once (schemas are cached).
	b.Run("match/re2", func(b *testing.B) {
		var res []interface{ MatchString(string) bool }
		for _, p := range pats {
			re, _ := compileRE2(p)
			res = append(res, re)
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, re := range res {
				for _, s := range sampleInputs {
					re.MatchString(s)
				}
			}
		}
	})
	b.Run("match/pyre", func(b *testing.B) {
		var res []*Regexp
		for _, p := range pats {
			re, _ := Compile(p, 0, 0)
			res = append(res, re)
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, re := range res {
				for _, s := range sampleInputs {
					re.MatchString(s)
				}
			}
		}
	})
}
