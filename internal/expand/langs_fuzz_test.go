package expand

import (
	"testing"

	"github.com/dmhq/dm/internal/expand/python"
)

// FuzzPyPercent formats arbitrary format strings with % and str.format:
// no panic, and the output bound holds.
func FuzzPyPercent(f *testing.F) {
	for _, s := range []string{"{:02d}", "{a!r:>9}", "{:*^9}", "{0:,.2f}{1:#x}", "{:.3%}", "{{}}", "%s", "%05.1f|%-4s|%x", "%(a)s %(b)d", "%*d", "%.*f", "%c%c", "%%", "%", "%(a", "%999999999d", "%#o %#x %+e %g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, format string) {
		for _, args := range []any{
			python.Tuple{int64(42), 3.5, "str", nil, true, []any{int64(1)}},
			python.Dict{{K: "a", V: int64(1)}, {K: "b", V: "x"}},
			int64(-7),
			"s",
		} {
			out, err := python.Percent(format, args, 1<<16)
			if err == nil && len(out) > 1<<16 {
				t.Fatalf("%q: %d bytes over the limit", format, len(out))
			}
			out, err = python.StrFormat(format, []any{args, int64(3), 2.5}, map[string]any{"a": args}, 1<<16)
			if err == nil && len(out) > 1<<16 {
				t.Fatalf("%q: format made %d bytes, over the limit", format, len(out))
			}
		}
	})
}
