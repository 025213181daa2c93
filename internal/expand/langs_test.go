package expand

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/index"
)

// renderOne runs one template file through its engine with properties
// props and returns what the engine produced (text for Jinja, the
// GenerateConfig value for Starlark).
func renderOne(t testing.TB, file, src string, props map[string]any, extra map[string]string) (any, error) {
	t.Helper()
	x := New(Options{Timeout: 5 * time.Second})
	files := map[string][]byte{file: []byte(src)}
	for k, v := range extra {
		files[k] = []byte(v)
	}
	lang, ok := index.LanguageOf(file)
	if !ok {
		t.Fatalf("%s: no language", file)
	}
	if props == nil {
		props = map[string]any{}
	}
	if lang != index.Jinja && lang != index.Python {
		t.Fatalf("%s: not a Jinja or Python template", file)
	}
	b := newImportsBundle(files)
	inv := engine.Invocation{
		File:       file,
		Source:     []byte(src),
		Files:      b.files,
		FilesKey:   b.key,
		Imports:    b.importsValue,
		Properties: props,
		Env:        map[string]any{"deployment": "dep", "name": "n", "type": file},
		Label:      file,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := x.engines[string(lang)].Render(ctx, inv)
	if out.YAML != nil {
		return string(out.YAML), err
	}
	if err != nil {
		return nil, err
	}
	return out.Value, nil
}

// jinjaProps are the properties of the jinja2 cases (see
// testdata/python/jinja_cases_gen.py).
var jinjaProps = map[string]any{"n": nil, "s": "x", "l": []any{int64(1), nil, "a"}, "d": map[string]any{"a": nil, "b": int64(1)}, "f": 2.5,
	"zones": []any{"us-a", "us-b"}, "count": int64(3), "name": "Web App",
	"ports": []any{map[string]any{"name": "http", "port": int64(80)}, map[string]any{"name": "https", "port": int64(443)}}}

// TestJinjaAsJinja2 renders the cases of testdata/python/jinja_cases.json,
// whose expected output jinja2 produced (regenerate with
// `python3 testdata/python/jinja_cases_gen.py > testdata/python/jinja_cases.json`).
func TestJinjaAsJinja2(t *testing.T) {
	data, err := os.ReadFile("testdata/python/jinja_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][2]string
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c[0], func(t *testing.T) {
			got, err := renderOne(t, "t.jinja", c[0], jinjaProps, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != c[1] {
				t.Errorf("got  %q\nwant %q", got, c[1])
			}
		})
	}
}

// TestJinjaInclude checks that an included file's own {{ }} behave as
// the including file's.
func TestJinjaInclude(t *testing.T) {
	inc := map[string]string{"inc.jinja": "{{ properties.n }}-{{ '%s=%d' % ('a', 1) }}-{{ 2 ** 3 }}"}
	got, err := renderOne(t, "t.jinja", "{% include 'inc.jinja' %}|{% include 'nope.jinja' ignore missing %}", map[string]any{"n": nil}, inc)
	if want := "None-a=1-8|"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// panicky panics when printed: a stand-in for a bug in an engine.
type panicky struct{}

func (panicky) String() string { panic("boom") }

func TestJinjaErrors(t *testing.T) {
	tests := []struct {
		src   string
		props map[string]any
		want  string // substring of the error, which must name t.jinja and the line
	}{
		{src: "a\n{{ 1 % 0 }}", want: "t.jinja:2: integer modulo by zero"},
		{src: "{{ 1 / 0 }}", want: "t.jinja:1: division by zero"},
		{src: "{{ 1 // 0 }}", want: "t.jinja:1: integer division or modulo by zero"},
		{src: "{{ 1.5 % 0 }}", want: "t.jinja:1: float modulo by zero"},
		{src: "{{ '%d' % 'x' }}", want: "t.jinja:1: %d format: a real number is required, not str"},
		{src: "{{ '%s %s' % ('a',) }}", want: "t.jinja:1: not enough arguments for format string"},
		{src: "{{ '%s' % ('a', 'b') }}", want: "t.jinja:1: not all arguments converted during string formatting"},
		{src: "{{ 2 ** 100 }}", want: "t.jinja:1: 2 ** 100 is too large"},
		{src: "{{ 999999999999 ** 10000000 }}", want: "t.jinja:1: 999999999999 ** 10000000 is too large"},
		{src: "x\ny\n{{ properties.p }}", props: map[string]any{"p": panicky{}}, want: "t.jinja:3: the Jinja engine failed on this template: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := renderOne(t, "t.jinja", tt.src, tt.props, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestPanicsAreErrors checks the recovery every engine's render defers:
// a panic becomes an invalid-argument error naming the file and line.
func TestPanicsAreErrors(t *testing.T) {
	var err error
	func() {
		defer engine.Recover("Test", "f.py", func() int { return 7 }, &err)
		panic("bad")
	}()
	if err == nil || err.Error() != "f.py:7: the Test engine failed on this template: bad" || !errors.Is(err, derrors.InvalidArgument) {
		t.Fatalf("got %v", err)
	}
}

// pyPrelude imports what the Python cases use.
const pyPrelude = "import yaml\nimport json\nimport six\nimport copy\n\n"

// runPy runs body inside GenerateConfig and returns the JSON of x.
func runPy(t *testing.T, body string) (string, error) {
	t.Helper()
	src := pyPrelude + "def GenerateConfig(context):\n    " + strings.ReplaceAll(body, "\n", "\n    ") + "\n    return {'resources': [{'name': 'a', 'type': 'X', 'properties': {'x': x}}]}\n"
	out, err := renderOne(t, "t.py", src, map[string]any{"n": nil, "m": map[string]any{"b": int64(1), "a": int64(2)}}, nil)
	if err != nil {
		return "", err
	}
	x := out.(map[string]any)["resources"].([]any)[0].(map[string]any)["properties"].(map[string]any)["x"]
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func TestPythonShims(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"implicit concatenation", "x = 'a' 'b'", `"ab"`},
		{"concatenation across lines", "x = ('a'\n     'b'  # comment\n     \"c\")", `"abc"`},
		{"concatenation binds before methods and %", "x = ['x' 'y'.upper(), '%s' '-%s' % (1, 2)]", `["XY","1-2"]`},
		{"unicode literals", "x = u'é' + U\"x\" + ur'\\d'", `"éx\\d"`},
		{"is None", "x = [context.properties['n'] is None, 1 is not None, context.properties is not None]", `[true,true,true]`},
		{"yaml.load", "x = yaml.load('a: [1, b]')", `{"a":[1,"b"]}`},
		{"yaml.load with Loader", "x = yaml.load('a: 1', Loader=yaml.FullLoader)", `{"a":1}`},
		{"isinstance", "x = [isinstance({}, dict), isinstance([], list), isinstance((), tuple), isinstance('s', str), isinstance(1, int), isinstance(1.5, float), isinstance(True, bool)]", `[true,true,true,true,true,true,true]`},
		{"isinstance of Python 2 names and tuples", "x = [isinstance('s', basestring), isinstance('s', unicode), isinstance(1, (str, int)), isinstance(True, int), isinstance(1, dict), isinstance('s', six.string_types)]", `[true,true,true,true,false,true]`},
		{"type comparisons", "x = [type([]) == list, type('') == str, type(1) != dict, type({}) == dict, type(1.0) == float]", `[true,true,true,true,true]`},
		{"dict Python 2 methods", "d = {'a': 1, 'b': 2}\nx = [sorted([k for k, v in d.iteritems()]), sorted(d.iterkeys()), sorted(d.itervalues()), d.has_key('a'), d.has_key('z')]", `[["a","b"],["a","b"],[1,2],true,false]`},
		{"xrange unicode long", "x = [list(xrange(3)), unicode(5), long('7')]", `[[0,1,2],"5",7]`},
		{"six", "x = [sorted(six.iteritems({'a': 1})), sorted(six.iterkeys({'a': 1})), six.PY3, list(six.moves.range(2)), isinstance('s', six.text_type)]", `[[["a",1]],["a"],true,[0,1],true]`},
		{"copy.deepcopy", "d = {'a': [1]}\ne = copy.deepcopy(d)\ne['a'].append(2)\nf = copy.copy(d)\nf['b'] = 3\nx = [d, e, f]", `[{"a":[1]},{"a":[1,2]},{"a":[1],"b":3}]`},
		{"json.dumps defaults", "x = json.dumps({'b': [1, 2.5, None, True], 'a': 'é'})", `"{\"b\": [1, 2.5, null, true], \"a\": \"\\u00e9\"}"`},
		{"json.dumps sorts number keys as numbers", "x = json.dumps({10: 1, 2: 2, float('inf'): 3}, sort_keys=True)", `"{\"2\": 2, \"10\": 1, \"Infinity\": 3}"`},
		{"json.dumps indent sort_keys", "x = json.dumps({'b': [1], 'a': {}}, indent=2, sort_keys=True)", `"{\n  \"a\": {},\n  \"b\": [\n    1\n  ]\n}"`},
		{"json.dumps separators", "x = json.dumps({'b': 1, 'a': [1, 2]}, separators=(',', ':'))", `"{\"b\":1,\"a\":[1,2]}"`},
		{"percent formatting", "x = '%05.1f|%-4s|%x|%s|%r|%3d%%|%+.2e' % (3.14159, 'ab', 255, None, 'q', 7, 12345.678)", `"003.1|ab  |ff|None|'q'|  7%|+1.23e+04"`},
		{"percent formatting by name", "x = '%(a)s-%(b)03d' % {'a': 'x', 'b': 2}", `"x-002"`},
		{"percent of numbers stays modulo", "x = [7 % 3, -7 % 3, 7.5 % 2]", `[1,2,1.5]`},
		{"padding methods", "x = ['ab'.center(5, '*'), 'abc'.center(6, '*'), 'a'.center(2, '*'), '-5'.zfill(4), 'ab'.ljust(4, '.'), 'ab'.rjust(4)]", `["**ab*","*abc**","a*","-005","ab..","  ab"]`},
		{"list and dict methods", "l = [3, 1, 2]\nl.sort()\nm = ['b', 'A', 'c']\nm.sort(key=lambda s: s.lower(), reverse=True)\nn = [1, 2, 3]\nn.reverse()\nd = {'a': 1}\ne = d.copy()\ne['b'] = 2\nx = [l, m, n, [1, 1, 2].count(1), d, e, l.copy(), 'aXa'.count('a')]", `[[1,2,3],["c","b","A"],[3,2,1],2,{"a":1},{"a":1,"b":2},[1,2,3],2]`},
		{"sum map filter", "x = [sum([1, 2.5]), sum([1, 2], 10), map(str, [1, 2]), map(lambda a, b: a + b, [1, 2], [3, 4]), filter(None, [0, 1, '']), filter(lambda v: v > 1, [1, 2, 3])]", `[3.5,13,["1","2"],[4,6],[1],[2,3]]`},
		{"a quote right after a keyword", "def f():\n    return'x'\nx = f()", `"x"`},
		{"a long range is lazy", "n = 0\nfor i in range(300000):\n    n += 1\nx = n", `300000`},
		{"generator expressions", "x = [''.join(c.upper() for c in ['a', 'b']), sum(n * n for n in range(3)), any(v > 1 for v in [1, 2]), all(v > 1 for v in [1, 2]), dict((k, len(k)) for k in ['a', 'bb']), list(a + b for a in ['x', 'y'] for b in ['z'] if a != 'q'), sorted((str(n) for n in [2, 1]), reverse=True), max(v\n  for v in [3, 9])]", `["AB",5,true,false,{"a":1,"bb":2},["xz","yz"],["2","1"],9]`},
		{"a generator of concatenated strings", "x = list('a' 'b' for _ in (1,)) + list(s for s in ('c' 'd',))", `["ab","cd"]`},
		{"comprehensions and calls stay as written", "x = [[f(a) for a in (1, 2)] for f in (str,)] + [{k: v for k, v in [('a', (1))]}]", `[["1","2"],{"a":1}]`},
		{"yaml.dump as PyYAML", "x = yaml.dump({'b': ['x', 'yes'], 'a': {'c': None}})", `"a:\n  c: null\nb:\n- x\n- 'yes'\n"`},
		{"yaml.dump of integer keys", "x = yaml.dump({2: 'a', 1: 'b'})", `"1: b\n2: a\n"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runPy(t, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPythonRefused(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"f-string", "y = 1\nx = f'{y}'", "t.py:8: f-strings are not supported in Python-style templates; use % or format"},
		{"f-string in a concatenation", "x = ('a'\n  F\"b\")", "t.py:8: f-strings are not supported"},
		{"try with finally", "try:\n    x = 1\nfinally:\n    x = 2", `t.py:9: try: finally is not supported`},
		{"a huge padding", "x = 'x'.zfill(100000000)", "t.py:7: zfill(100000000) would make a value of 100000000 bytes"},
		{"raise stops the expansion with its message", "x = 1\nif x > 0:\n    raise ValueError('x is %d' % x)", "t.py:9: ValueError: x is 1"},
		{"a raise over lines stops the expansion with its message", "x = 1\nif x > 0:\n    raise ValueError(\n        'x is \\\"{}\\\", '  # the value\n        'want 0'.format(x)\n    )\ny = 2", `t.py:9: ValueError: x is "1", want 0`},
		{"assert stops the expansion with its message", "x = 0\nassert x > 0, 'x must be positive, got %d' % x", "t.py:8: AssertionError: x must be positive, got 0"},
		{"a bare assert", "x = 0\nassert x > 0", "t.py:8: AssertionError"},
		{"an assert over lines", "x = 0\nassert x > 0, (\n  'x is %d' % x)", "t.py:8: AssertionError: x is 0"},
		{"list of a huge range", "x = list(range(100000000))", "t.py:7: list() of 100000000 elements would make a value of 1600000000 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runPy(t, tt.body)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestPythonPrint checks that print reaches Result.Logs with the file and
// line, and the log.
func TestPythonPrint(t *testing.T) {
	var logs strings.Builder
	x := New(Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	src := "def GenerateConfig(context):\n    print('hello', context.env['name'])\n    return {'resources': []}\n"
	res, err := x.Expand(context.Background(), oneTemplate("t.py", src))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"t.py:2: hello t"}; !slices.Equal(res.Logs, want) {
		t.Errorf("Logs = %q, want %q", res.Logs, want)
	}
	if !strings.Contains(logs.String(), "msg=\"template print\"") || !strings.Contains(logs.String(), "line=2") {
		t.Errorf("log has no template print record: %s", logs.String())
	}
}

// classTemplate is the class forms dm translates: a namespace of static
// helpers with a class attribute and a class method, a record with
// __init__ and methods, and a subclass using super().
const classTemplate = `class Helpers(object):
    """Naming helpers."""
    PREFIX = 'app-'

    @staticmethod
    def name(n):
        return Helpers.PREFIX + n

    @classmethod
    def names(cls, ns):
        return [cls.name(n) for n in ns]


class Port:
    def __init__(self, number, proto='TCP'):
        self.number = number
        self.proto = proto

    def spec(self):
        return {'containerPort': self.number,
                'protocol': self.proto}


class NamedPort(Port):
    def __init__(self, name, number):
        super(NamedPort, self).__init__(number)
        self.name = name

    def spec(self):
        s = Port.spec(self)
        s['name'] = self.name
        return s


def GenerateConfig(context):
    p = NamedPort('http', 80)
    p.number = 8080
    x = [Helpers.name('a'), Helpers.names(['b']), Port(1).spec(), p.spec(), isinstance(p, Port), isinstance(Port(2), NamedPort)]
    return {'resources': [{'name': 'a', 'type': 'X', 'properties': {'x': x}}]}
`

func TestPythonClasses(t *testing.T) {
	out, err := renderOne(t, "t.py", classTemplate, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out.(map[string]any)["resources"].([]any)[0].(map[string]any)["properties"].(map[string]any)["x"])
	want := `["app-a",["app-b"],{"containerPort":1,"protocol":"TCP"},{"containerPort":8080,"name":"http","protocol":"TCP"},true,false]`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	refused := []struct{ src, want string }{
		{"class A(Thread):\n    pass\n", "t.py:1: class A: its base Thread is not a class of this file"},
		{"class A(object):\n    @cache\n    def f(self):\n        return 1\n", "t.py:2: class A: decorator @cache is not supported"},
		{"class A(object):\n    if True:\n        x = 1\n", `t.py:2: class A: "if True:" in a class body is not supported`},
		{"def f():\n    class B:\n        pass\n    return B\n", `t.py:2: Python's "class" is supported only at the top level of a file`},
	}
	for _, r := range refused {
		_, err := renderOne(t, "t.py", r.src+"\ndef GenerateConfig(context):\n    return {}\n", nil, nil)
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%q: got %v, want an error containing %q", r.src, err, r.want)
		}
	}
}

// TestStrFormat compares str.format with format specs with Python's
// answers (testdata/python/str_format.json: format, args, kwargs, want).
func TestStrFormat(t *testing.T) {
	data, err := os.ReadFile("testdata/python/str_format.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][4]json.RawMessage
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var format, want string
		var args []any
		var kwargs map[string]any
		for i, p := range []any{&format, &args, &kwargs, &want} {
			d := json.NewDecoder(bytes.NewReader(c[i]))
			d.UseNumber() // 1 and 1.0 stay as written
			if err := d.Decode(p); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(format, func(t *testing.T) {
			src := "x = " + strconv.Quote(format) + ".format("
			for _, a := range args {
				b, _ := json.Marshal(a)
				src += string(b) + ", "
			}
			for k, v := range kwargs {
				b, _ := json.Marshal(v)
				src += k + "=" + string(b) + ", "
			}
			got, err := runPy(t, src+")")
			if err != nil {
				t.Fatal(err)
			}
			if w, _ := json.Marshal(want); got != string(w) {
				t.Errorf("got %s, want %s", got, w)
			}
		})
	}
}

// TestPythonRe: Python's re module as templates use it
// (deploymentmanager-samples' internal-lb: re.compile(...).search(url) and
// the match's groups), on Go's regexp; a pattern RE2 cannot run is refused
// naming it.
func TestPythonRe(t *testing.T) {
	tests := []struct {
		name, body, want, err string
	}{
		{"compile search group", "p = re.compile('zones/([^/]+)/instanceGroups/(.*)$')\nm = p.search('projects/p/zones/z1/instanceGroups/g1')\nx = [m.group(2) + ':' + m.group(1), m.group(), m.groups(), m.span(1), m.start(), m.end()]",
			`["g1:z1","zones/z1/instanceGroups/g1",["z1","g1"],[17,19],11,37]`, ""},
		{"no match is None", "x = [re.search('x', 'abc') is None, re.match('b', 'abc') is None, re.fullmatch('ab', 'abc') is None]", `[true,true,true]`, ""},
		{"match anchors at the start", "x = [re.match('b+', 'bbc').group(), re.match('a|ab', 'ab').group(), re.fullmatch('a|ab', 'ab').group()]", `["bb","a","ab"]`, ""},
		{"named groups", "m = re.match(r'(?P<k>\\w+)=(?P<v>\\w*)', 'a=b')\nx = [m.group('k'), m.groupdict(), m.group(1, 2)]", `["a",{"k":"a","v":"b"},["a","b"]]`, ""},
		{"flags", "x = [re.search('ABC', 'xabc', re.I).group(), re.findall('^a', 'a\\na', flags=re.M), re.IGNORECASE]", `["abc",["a","a"],2]`, ""},
		{"findall sub split escape", "x = [re.findall(r'\\d+', 'a1b22'), re.findall(r'(\\w)=(\\d)', 'a=1 b=2'), re.sub(r'(\\w+)@(\\w+)', r'\\2 at \\g<1>', 'me@host you@there', 1), re.sub('a', lambda m: m.group().upper(), 'banana'), re.split(r'[,;]', 'a,b;c'), re.escape('a.b')]",
			`[["1","22"],[["a","1"],["b","2"]],"host at me you@there","bAnAnA",["a","b","c"],"a\\.b"]`, ""},
		{"unmatched optional group", "x = re.match('(a)?b', 'b').groups('-')", `["-"]`, ""},
		{"a backreference and a lookahead", "x = [re.sub(r'(a)\\1(?=b)', 'X', 'aab aac')]", `["Xb aac"]`, ""},
		{"a pattern Python refuses", "x = re.compile('a**')", "", `re: pattern "a**": multiple repeat at position 2`},
		{"no such group", "x = re.match('a', 'a').group(3)", "", "Match.group: no such group 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "import re\n\ndef GenerateConfig(context):\n    " + strings.ReplaceAll(tt.body, "\n", "\n    ") + "\n    return {'resources': [{'name': 'a', 'type': 'X', 'properties': {'x': x}}]}\n"
			out, err := renderOne(t, "t.py", src, map[string]any{}, nil)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(out.(map[string]any)["resources"].([]any)[0].(map[string]any)["properties"].(map[string]any)["x"])
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}
