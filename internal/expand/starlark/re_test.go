package starlark

import (
	"context"
	"strings"
	"testing"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/pyyaml"
)

// TestReModule: Python's re as DM templates use it (the internal-lb
// sample's re.compile(...).search(url).group(2)), each case an expression
// whose str() is want (Python 3's value and notation).
func TestReModule(t *testing.T) {
	tests := []struct {
		name, expr, want, wantErr string
	}{
		{name: "compile search group", expr: `re.compile('zones/([^/]+)/instanceGroups/(.*)$').search('https://x/projects/p/zones/us-a/instanceGroups/g1').group(2)`, want: "g1"},
		{name: "group tuple", expr: `re.search('(a)(b)?', 'xa').group(1, 2)`, want: `('a', None)`},
		{name: "groups default", expr: `re.search('(a)(b)?', 'xa').groups('-')`, want: `('a', '-')`},
		{name: "named group", expr: `re.match('(?P<zone>[a-z]+-[a-z]+)', 'us-central1').group('zone')`, want: "us-central"},
		{name: "groupdict", expr: `re.match('(?P<a>x)(?P<b>y)?', 'x').groupdict()`, want: `{'a': 'x', 'b': None}`},
		{name: "match anchors at the start", expr: `re.match('b', 'ab')`, want: "None"},
		{name: "search does not", expr: `re.search('b', 'ab').span()`, want: "(1, 2)"},
		{name: "fullmatch", expr: `[re.fullmatch('a|ab', 'ab').group(), re.fullmatch('a', 'ab')]`, want: `['ab', None]`},
		{name: "match object is true", expr: `bool(re.match('a', 'a'))`, want: "True"},
		{name: "findall without groups", expr: `re.findall('[0-9]+', 'a1b22c333')`, want: `['1', '22', '333']`},
		{name: "findall one group", expr: `re.findall('-([a-z])', 'us-central1-f')`, want: `['c', 'f']`},
		{name: "findall groups", expr: `re.findall('([a-z])=([0-9])', 'a=1,b=2')`, want: `[('a', '1'), ('b', '2')]`},
		{name: "sub backreference", expr: `re.sub('([a-z]+)-([0-9]+)', '\\2-\\1', 'web-1 db-2')`, want: "1-web 2-db"},
		{name: "sub named", expr: `re.sub('(?P<n>[0-9])', '<\\g<n>>', 'a1')`, want: "a<1>"},
		{name: "sub count", expr: `re.sub('a', 'b', 'aaa', 2)`, want: "bba"},
		{name: "sub function", expr: `re.sub('[a-z]', lambda m: m.group(0).upper(), 'a1b')`, want: "A1B"},
		{name: "subn", expr: `re.subn('_', '-', 'a_b_c')`, want: `('a-b-c', 2)`},
		{name: "split with group", expr: `re.split('(,)', 'a,b')`, want: `['a', ',', 'b']`},
		{name: "split maxsplit", expr: `re.compile('[,;]').split('a,b;c', maxsplit=1)`, want: `['a', 'b;c']`},
		{name: "flags", expr: `re.match('abc$', 'ABC', re.IGNORECASE) != None`, want: "True"},
		{name: "flags keyword", expr: `re.findall('^x', 'x\nx', flags=re.M)`, want: `['x', 'x']`},
		{name: "escape", expr: `re.escape('a.b*c')`, want: `a\.b\*c`},
		{name: "backslash Z", expr: `re.search('c\\Z', 'abc').start()`, want: "2"},
		{name: "pattern attribute", expr: `re.compile('x+').pattern`, want: "x+"},
		{name: "backreference", expr: `re.sub(r'(\w)\1', r'<\1>', 'aabcc')`, want: "<a>b<c>"},
		{name: "lookahead and lookbehind", expr: `[re.search('a(?=b)', 'acab').start(), re.findall(r'(?<=-)\w+', 'a-b-cd')]`, want: `[2, ['b', 'cd']]`},
		{name: "named backreference", expr: `re.match(r'(?P<q>["\'])(.*)(?P=q)', '"x"').group(2)`, want: "x"},
		{name: "verbose", expr: `re.match(r"""(?x) (\d+)  # number
			- (\w+)""", '12-ab').groups()`, want: `('12', 'ab')`},
		{name: "empty matches as Python 3.7", expr: `re.sub('x*', '-', 'abxd')`, want: "-a-b--d-"},
		{name: "unicode classes", expr: `re.findall(r'\w+', 'über straße')`, want: `['über', 'straße']`},
		{name: "groupindex", expr: `re.compile('(?P<a>x)(y)(?P<b>z)').groupindex`, want: `{'a': 1, 'b': 3}`},
		{name: "bad escape", expr: `re.compile(r'\q')`, wantErr: `re: pattern "\\q": bad escape \q at position 0`},
		{name: "catastrophic backtracking", expr: `re.match(r'^(a|aa)+(?=!)$', 'a' * 40 + '!')`, wantErr: "Options.RegexTimeout"},
		{name: "no such group", expr: `re.match('a', 'a').group(3)`, wantErr: "Match.group: no such group 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache, _ := lru.New[string, any](4)
			e := New(1<<20, 100000, 50*time.Millisecond, cache, func(data []byte, order *engine.Order) (any, error) {
				v, _, err := pyyaml.Decode(data, pyyaml.Options{MaxAliases: 100, Record: order.Record})
				return v, err
			})
			src := "import re\n\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': str(" + tt.expr + "), 'type': 'T'}]}\n"
			files := map[string][]byte{"t.py": []byte(src)}
			out, err := e.Render(context.Background(), engine.Invocation{
				File: "t.py", Source: files["t.py"], Files: files, FilesKey: tt.name,
				Imports: func() map[string]any { return nil },
				Env:     map[string]any{"name": "x"},
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rs, _ := out.Value.(map[string]any)["resources"].([]any)
			if got := rs[0].(map[string]any)["name"]; got != tt.want {
				t.Errorf("got %v, want %s", got, tt.want)
			}
		})
	}
}
