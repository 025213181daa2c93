package index

import (
	"math"
	"strconv"
	"testing"
)

func TestDecimalDigits(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 99, 100, 12345, -1, -9, -10, -12345, math.MaxInt64, math.MinInt64} {
		if got, want := decimalDigits(n), len(strconv.FormatInt(n, 10)); got != want {
			t.Errorf("decimalDigits(%d) = %d, want %d", n, got, want)
		}
	}
}
