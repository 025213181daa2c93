package expand

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dmhq/dm/internal/expand/python"
)

// FuzzPythonRewrites runs the source shims of .py templates (classes,
// literals, is, yaml.load, global) on arbitrary input: no panic, and every line
// stays on its line (errors must point at the template's own lines).
func FuzzPythonRewrites(f *testing.F) {
	for _, s := range []string{
		classTemplate,
		"x = ('a'\n  'b' # c\n  \"c\")\n",
		"x = u'a' ur'b' f'c'\n",
		"if x is not None and y is None:\n    z = yaml.load(s)\n",
		"s = '''a\n'b' \"c\"\n'''\n",
		"class A(B):\n    @staticmethod\n    def f(x):\n        return x\n",
		"class A:\n\n",
		"x = '\\\n'\n",
		"if x:\n    raise ValueError('a, b' % (1, 2))\nassert x, 'm'\nassert (x,\n 2)\n",
		"N = 0\ndef f(N2):\n    global N, M\n    N += 1\n    M = [N for N2 in 'é']\n    return f(k=N).N\nglobal N\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := translateClasses("f.py", []byte(src))
		if err != nil {
			return
		}
		if n, m := strings.Count(src, "\n"), strings.Count(string(out), "\n"); n != m {
			t.Fatalf("translateClasses changed the line count: %d -> %d\n%s", n, m, out)
		}
		out2, err := rewritePython("f.py", out)
		if err != nil {
			return
		}
		out2 = rewriteStatements(out2)
		if n, m := strings.Count(string(out), "\n"), strings.Count(string(out2), "\n"); n != m {
			t.Fatalf("rewritePython changed the line count: %d -> %d\n%s", n, m, out2)
		}
		out3, _, err := rewriteGlobals("f.py", out2)
		if err != nil {
			return
		}
		if n, m := strings.Count(string(out2), "\n"), strings.Count(string(out3), "\n"); n != m {
			t.Fatalf("rewriteGlobals changed the line count: %d -> %d\n%s", n, m, out3)
		}
	})
}

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

// FuzzPyYAMLDump checks that yaml.dump's text reads back (as PyYAML
// reads it) to the string that was dumped, in every position and style.
func FuzzPyYAMLDump(f *testing.F) {
	for _, s := range []string{"yes", "1e3", "a: b", "- x", " lead", "multi\nline\n", "tab\there", "café", strings.Repeat("word ", 30), "it's", "#", "", "~", "12:30", "'q'", "\"dq\""} {
		f.Add(s)
	}
	x := New(Options{})
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || s == "k" || s == "l" {
			return
		}
		e := newPyYAMLEmitter(1 << 20)
		text, err := e.dump(python.Dict{{K: "k", V: s}, {K: "l", V: []any{s}}, {K: s, V: int64(1)}})
		if err != nil {
			t.Fatal(err)
		}
		v, err := decodeYAML([]byte(text), x.yamlLimits("MaxOutputBytes", 1<<20))
		if err != nil {
			t.Fatalf("%q: dump %q does not read back: %v", s, text, err)
		}
		m, ok := v.(map[string]any)
		if !ok || m["k"] != s || len(m["l"].([]any)) != 1 || m["l"].([]any)[0] != s {
			t.Fatalf("%q: dump %q reads back as %#v", s, text, v)
		}
		if _, ok := m[s]; !ok {
			t.Fatalf("%q: key lost in %q: %#v", s, text, v)
		}
	})
}
