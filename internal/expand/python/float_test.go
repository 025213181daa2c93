package python

import (
	"math"
	"testing"
)

// TestPyFloatFormats checks float conversions of % formatting and format
// specs against Python 3.11's output.
func TestPyFloatFormats(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	percent := []struct {
		format string
		v      float64
		want   string
	}{
		{"%#.0f", 3.0, "3."},
		{"%G", 1e20, "1E+20"},
		{"%E", inf, "INF"},
		{"%F", nan, "NAN"},
		{"%#g", 2.0, "2.00000"},
		{"%.0g", 123.0, "1e+02"},
		{"%010.2f", -inf, "-000000inf"},
		{"%-8.3e|", 1.5, "1.500e+00|"},
		{"%g", 0.0001, "0.0001"},
		{"%#.3g", 123456.0, "1.23e+05"},
		{"%#g", 1e-5, "1.00000e-05"},
		{"%#.1g", 5.0, "5."},
		{"%#G", 0.5, "0.500000"},
		{"%#.0e", 1.0, "1.e+00"},
	}
	for _, tt := range percent {
		if got, err := Percent(tt.format, tt.v, 1<<20); err != nil || got != tt.want {
			t.Errorf("%q %% %v = %q, %v; want %q", tt.format, tt.v, got, err, tt.want)
		}
	}
	spec := []struct {
		format string
		v      float64
		want   string
	}{
		{"{:F}", inf, "INF"},
		{"{:G}", 1e-7, "1E-07"},
		{"{:,.1f}", 1234567.25, "1,234,567.2"},
		{"{:E}", 12.5, "1.250000E+01"},
		{"{:%}", inf, "inf%"},
		{"{:.1%}", -inf, "-inf%"},
		{"{:,}", 1e20, "1e+20"},
	}
	for _, tt := range spec {
		if got, err := StrFormat(tt.format, []any{tt.v}, nil, 1<<20); err != nil || got != tt.want {
			t.Errorf("%q.format(%v) = %q, %v; want %q", tt.format, tt.v, got, err, tt.want)
		}
	}
}
