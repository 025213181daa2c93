package python

import (
	"math"
	"math/big"
)

// Round is Python 3's round(f, ndigits) of a float: half to even on the
// exact binary value, at ndigits decimal places (negative: tens,
// hundreds...); infinities and NaN stay as they are.
func Round(f float64, ndigits int) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return f
	}
	if ndigits < 0 {
		if ndigits < -308 {
			return 0
		}
		p := math.Pow(10, float64(-ndigits))
		return math.RoundToEven(f/p) * p
	}
	if ndigits > 340 {
		return f
	}
	// Decimal rounding of the exact binary value, then back.
	r, _, err := big.ParseFloat(big.NewFloat(f).Text('f', ndigits), 10, 64, big.ToNearestEven)
	if err != nil {
		return f
	}
	out, _ := r.Float64()
	return out
}

// RoundInt is Python 3's round(i, ndigits) of an integer: i itself for
// ndigits >= 0, else half to even at tens, hundreds...
func RoundInt(i *big.Int, ndigits int) *big.Int {
	if ndigits >= 0 {
		return i
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-ndigits)), nil)
	q, m := new(big.Int).DivMod(i, p, new(big.Int)) // floor division, m >= 0
	twice := new(big.Int).Lsh(m, 1)
	switch c := twice.Cmp(p); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	return q.Mul(q, p)
}
