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
