package starlark

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dmhq/dm/internal/expand/python"
	"github.com/dmhq/dm/internal/expand/pyyaml"
)

// FuzzPythonRewrites runs the source shims of .py templates (classes,
// literals and their escapes, is, yaml.load, **, chained comparisons,
// global) on arbitrary input: no panic, and every line
// stays on its line (errors must point at the template's own lines). Its
// corpus keeps 11bc6da7f4ea5397: a lone carriage return, which Starlark
// counts as a line end, made rewriteGlobals index past its lines.
func FuzzPythonRewrites(f *testing.F) {
	for _, s := range []string{
		"class A(object):\n    x = 1\n    def f(self):\n        return self.x\n",
		"x = ('a'\n  'b' # c\n  \"c\")\n",
		"x = u'a' ur'b' f'c'\n",
		"if x is not None and y is None:\n    z = yaml.load(s)\n",
		"s = '''a\n'b' \"c\"\n'''\n",
		"class A(B):\n    @staticmethod\n    def f(x):\n        return x\n",
		"class A:\n\n",
		"x = '\\\n'\n",
		"if x:\n    raise ValueError('a, b' % (1, 2))\nassert x, 'm'\nassert (x,\n 2)\n",
		"N = 0\ndef f(N2):\n    global N, M\n    N += 1\n    M = [N for N2 in 'é']\n    return f(k=N).N\nglobal N\n",
		"x = -2 ** f(a)[1] ** 2\nif 0 < x <= (y\n  + 1) < 3:\n    z = {**d}\n    w = a.b ** -c\n",
		"s = '\\+\\/\\351' + b'\\d' + r'\\q'\n",
		"def f(d):\n    try:\n        x = d['k']\n    except (KeyError, IndexError) as e:\n        x = str(e)\n    else:\n        x += '!'\n    return x\n",
		"try: y = int(s)\nexcept ValueError, e: y = 0\nexcept: pass\nfinally:\n    z = 1\n",
		"class B(object):\n    @property\n    def p(self):\n        return 1\n    def __getitem__(self, k):\n        return k\nclass E(Exception):\n    pass\n",
		"assert (a ^\n  b), (\n  'm %s' % c)\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// As starlarkProgram reads a file.
		src = string(universalNewlines([]byte(src)))
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
		out2 = rewriteStatements(rewriteOperators(out2))
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
		out4, hasTry, err := rewriteTry("f.py", out3)
		if err != nil {
			return
		}
		if n, m := strings.Count(string(out3), "\n"), strings.Count(string(out4), "\n"); n != m {
			t.Fatalf("rewriteTry changed the line count: %d -> %d\n%s", n, m, out4)
		}
		if file, err := starlarkOptions().Parse("f.py", out4, 0); err == nil && hasTry {
			_ = translateTry("f.py", file) // must not panic
		}
	})
}

// FuzzPyYAMLDump checks that yaml.dump's text reads back (as PyYAML
// reads it) to the string that was dumped, in every position and style.
func FuzzPyYAMLDump(f *testing.F) {
	for _, s := range []string{"yes", "1e3", "a: b", "- x", " lead", "multi\nline\n", "tab\there", "café", strings.Repeat("word ", 30), "it's", "#", "", "~", "12:30", "'q'", "\"dq\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || s == "k" || s == "l" {
			return
		}
		e := newPyYAMLEmitter(1 << 20)
		text, err := e.dump(python.Dict{{K: "k", V: s}, {K: "l", V: []any{s}}, {K: s, V: int64(1)}})
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := pyyaml.Decode([]byte(text), pyyaml.Options{MaxAliases: 1000, MaxAliasBytes: pyyaml.DefaultMaxAliasBytes})
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
