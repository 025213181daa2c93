package openshift

import (
	"regexp"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	tests := []struct {
		from   string
		re     string // the value must match ^re$
		minLen int
		maxLen int
	}{
		{from: "[a-z]{8}", re: `[a-z]{8}`, minLen: 8, maxLen: 8},
		{from: "[a-zA-Z0-9]{40}", re: `[a-zA-Z0-9]{40}`, minLen: 40, maxLen: 40},
		{from: "user[A-Z0-9]{3}", re: `user[A-Z0-9]{3}`, minLen: 7, maxLen: 7},
		{from: "0x[A-F0-9]{4}", re: `0x[A-F0-9]{4}`, minLen: 6, maxLen: 6},
		{from: "test[0-9]{1}x", re: `test[0-9]x`, minLen: 6, maxLen: 6},
		{from: `[\w]{10}`, re: `\w{10}`, minLen: 10, maxLen: 10},
		{from: `[\d]{10}`, re: `\d{10}`, minLen: 10, maxLen: 10},
		{from: `[\a]{10}`, re: `[a-zA-Z]{10}`, minLen: 10, maxLen: 10},
		{from: `[\A]{10}`, re: "[~!@#$%^&*()\\-_+={}\\[\\]\\\\|<,>.?/\"';:`]{10}", minLen: 10, maxLen: 10},
		{from: `\d{3}-\w{2}`, re: `\d{3}-\w{2}`, minLen: 6, maxLen: 6},
		{from: `[\d_]{5}`, re: `[0-9_]{5}`, minLen: 5, maxLen: 5},
		{from: `[a-c]{2,5}`, re: `[a-c]{2,5}`, minLen: 2, maxLen: 5},
		{from: `[-a]{4}`, re: `[-a]{4}`, minLen: 4, maxLen: 4},
		{from: `[a-]{4}`, re: `[-a]{4}`, minLen: 4, maxLen: 4},
		{from: `[\]x]{4}`, re: `[\]x]{4}`, minLen: 4, maxLen: 4},
		{from: `ab{3}`, re: `abbb`, minLen: 4, maxLen: 4},
		{from: `[xy]`, re: `[xy]`, minLen: 1, maxLen: 1},
		{from: `a\[b\{2}`, re: `a\[b\{2}`, minLen: 6, maxLen: 6},
		{from: `{x}`, re: `\{x\}`, minLen: 3, maxLen: 3},
		{from: `é[a]{2}`, re: `éaa`, minLen: 4, maxLen: 4},
		{from: `[a-z]{0}`, re: ``, minLen: 0, maxLen: 0},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			g, err := compileGenerator(tt.from)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if g.maxLen != tt.maxLen {
				t.Errorf("maxLen = %d, want %d", g.maxLen, tt.maxLen)
			}
			re := regexp.MustCompile(`^` + tt.re + `$`)
			var rnd randSource
			for range 50 {
				v, err := g.generate(&rnd)
				if err != nil {
					t.Fatal(err)
				}
				if !re.MatchString(v) || len(v) < tt.minLen || len(v) > tt.maxLen {
					t.Fatalf("generated %q, want a match of %s with length in [%d, %d]", v, re, tt.minLen, tt.maxLen)
				}
			}
		})
	}
}

func TestGenerateIsRandom(t *testing.T) {
	g, err := compileGenerator("[a-zA-Z0-9]{32}")
	if err != nil {
		t.Fatal(err)
	}
	var r1, r2 randSource
	a, _ := g.generate(&r1)
	b, _ := g.generate(&r2)
	if a == b {
		t.Errorf("two generated values are equal: %q", a)
	}
	// Every character of a small class shows up over many draws, so no
	// part of the class is unreachable.
	g, err = compileGenerator("[a-e]{2000}")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := g.generate(&r1)
	for _, c := range "abcde" {
		n := strings.Count(v, string(c))
		if n < 300 || n > 500 {
			t.Errorf("%c drawn %d times out of 2000, want about 400", c, n)
		}
	}
}

func TestCompileGeneratorErrors(t *testing.T) {
	tests := []struct{ from, wantErr string }{
		{"", "empty expression"},
		{"[a-z", "missing ]"},
		{"[]{3}", "empty class"},
		{"[^a]{3}", "negated"},
		{"[z-a]{3}", "invalid range z-a"},
		{"[a-z]{3,}", "open-ended"},
		{"[a-z]{3", "malformed quantifier"},
		{"[a-z]{5,2}", "maximum below minimum"},
		{"{3}", "without a preceding"},
		{"[a]{2}{3}", "repeated quantifier"},
		{`abc\`, "trailing backslash"},
		{"[é]", "only printable ASCII"},
		{"[a]{99999999999}", "quantifier larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			_, err := compileGenerator(tt.from)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestRandSourceIntn(t *testing.T) {
	var r randSource
	for _, n := range []int{1, 2, 255, 256, 257, 100000} {
		for range 200 {
			v, err := r.intn(n)
			if err != nil || v < 0 || v >= n {
				t.Fatalf("intn(%d) = %d, %v", n, v, err)
			}
		}
	}
	if _, err := r.intn(0); err == nil {
		t.Error("intn(0) succeeded")
	}
}
