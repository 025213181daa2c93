package catalog

import (
	"maps"
	"reflect"
	"testing"
)

func TestShrink(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, peak  int
		copied   bool
		wantPeak int
	}{
		{"grows: the peak follows", 10, 4, false, 10},
		{"at half the peak: kept", 5, 10, false, 10},
		{"under half the peak: copied", 4, 10, true, 4},
		{"emptied: copied", 0, 10, true, 0},
		{"never held anything", 0, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[int]int{}
			for i := range tc.n {
				m[i] = i
			}
			peak := tc.peak
			got := shrink(m, &peak)
			if copied := reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(m).UnsafePointer(); copied != tc.copied {
				t.Errorf("copied = %v, want %v", copied, tc.copied)
			}
			if !maps.Equal(got, m) {
				t.Errorf("entries changed: %v, want %v", got, m)
			}
			if peak != tc.wantPeak {
				t.Errorf("peak = %d, want %d", peak, tc.wantPeak)
			}
		})
	}
}
