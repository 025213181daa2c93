package starlark

import (
	"context"
	"errors"
	"strings"
	"testing"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/pyyaml"
)

// TestRender: the engine through the interface, with no key order given
// (dicts built from properties iterate sorted), printing and its limits.
func TestRender(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // the output value's resources[0].name, or
		wantErr   string
		limit     bool
		printed   string
	}{
		{name: "dict result", src: "def GenerateConfig(ctx):\n  return {'resources': [{'name': ctx.env['name'], 'type': 'v1/ConfigMap'}]}\n", want: "web"},
		{name: "sorted keys without an order", src: "def GenerateConfig(ctx):\n  return {'resources': [{'name': ''.join([k for k in ctx.properties['m']]), 'type': 'T'}]}\n", want: "abc"},
		{name: "yaml.load keeps document order", src: "import yaml\ndef GenerateConfig(ctx):\n  d = yaml.load('z: 1\\na: 2\\n')\n  return {'resources': [{'name': ''.join(d.keys()), 'type': 'T'}]}\n", want: "za"},
		{name: "print", src: "def GenerateConfig(ctx):\n  print('hi')\n  return {'resources': []}\n", printed: "t.py:2: hi"},
		{name: "steps", src: "def GenerateConfig(ctx):\n  for i in range(100000):\n    pass\n  return {}\n", wantErr: "StarlarkSteps", limit: true},
		{name: "collections.namedtuple", src: "import collections\nB = collections.namedtuple('B', 'resource outputs')\ndef GenerateConfig(ctx):\n  b = B({'name': 'x', 'type': 'T'}, outputs=[1])\n  r, o = b\n  return {'resources': [{'name': b.resource['name'] + r['name'] + str(b[1][0]) + str(len(b)), 'type': 'T'}]}\n", want: "xx12"},
		{name: "namedtuple field list", src: "from collections import namedtuple\nP = namedtuple('P', ['a', 'b'])\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': str(P(1, 2)), 'type': 'T'}]}\n", want: "P(a=1, b=2)"},
		{name: "namedtuple missing field", src: "import collections\nB = collections.namedtuple('B', 'a, b')\ndef GenerateConfig(ctx):\n  B(1)\n  return {}\n", wantErr: "B: field b is missing"},
		{name: "string constants", src: "import string\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': string.digits[:3] + string.ascii_lowercase[-1] + string.letters[0], 'type': 'T'}]}\n", want: "012za"},
		{name: "random imports but is not called", src: "import random\ndef unused():\n  return random.choice('ab')\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': 'web', 'type': 'T'}]}\n", want: "web"},
		{name: "hashlib", src: "from hashlib import sha1\nimport hashlib\ndef GenerateConfig(ctx):\n  h = hashlib.sha256()\n  h.update('a')\n  return {'resources': [{'name': sha1('roles/x-user:a'.encode('utf-8')).hexdigest()[:10] + '-' + h.hexdigest()[:6], 'type': 'T'}]}\n", want: "ded7246f4c-ca9781"},
		{name: "encode and decode", src: "def GenerateConfig(ctx):\n  return {'resources': [{'name': 'a'.encode('utf-8').decode() + b'b'.decode('ascii'), 'type': 'T'}]}\n", want: "ab"},
		{name: "del of a subscript", src: "def GenerateConfig(ctx):\n  d = {'a': 1, 'b': 2}\n  l = [1, 2, 3]\n  del d['a']\n  del l[0]  # first\n  return {'resources': [{'name': ''.join(d.keys()) + str(l), 'type': 'T'}]}\n", want: "b[2, 3]"},
		{name: "del of a missing key", src: "def GenerateConfig(ctx):\n  d = {}\n  del d['a']\n  return {}\n", wantErr: "pop: missing key"},
		{name: "del of a name", src: "def GenerateConfig(ctx):\n  x = 1\n  del x\n  return {}\n", wantErr: `Python's "del" is not supported`},
		{name: "import inside a function", src: "def f():\n  from json import dumps as d, loads\n  import copy as c\n  return d(c.copy(loads('[1]')))\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': f(), 'type': 'T'}]}\n", want: "[1]"},
		{name: "import inside a function not called", src: "def f():\n  from nope import x\n  return x\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': 'web', 'type': 'T'}]}\n", want: "web"},
		{name: "import inside a function called", src: "def f():\n  from nope import x\n  return x\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': f(), 'type': 'T'}]}\n", wantErr: "no module named nope"},
		{name: "random called", src: "import random\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': random.choice('ab'), 'type': 'T'}]}\n", wantErr: "random.choice: dm expands a configuration again"},
		{name: "no GenerateConfig", src: "x = 1\n", wantErr: "t.py: no function GenerateConfig"},
		// hashlib, as the Cloud Foundation Toolkit's
		// external_load_balancer.py names its backend services; the
		// digests are Python 3's.
		{name: "hashlib.sha1 of json.dumps", src: "from hashlib import sha1\nimport json\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': sha1(json.dumps({'a': 1, 'b': [1, 'x']}).encode('utf-8')).hexdigest()[:10], 'type': 'T'}]}\n", want: "0523e6bbca"},
		{name: "hashlib.new, update, copy", src: "import hashlib\ndef GenerateConfig(ctx):\n  h = hashlib.new('md5')\n  h.update('ab'.encode())\n  c = h.copy()\n  c.update(b'c')\n  return {'resources': [{'name': '%s-%s-%d-%s' % (h.hexdigest()[:6], c.hexdigest()[:6], hashlib.sha256(b'').digest_size, b'x'.decode()), 'type': 'T'}]}\n", want: "187ef4-900150-32-x"},
		{name: "hashlib of a number", src: "import hashlib\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': hashlib.sha1(1).hexdigest(), 'type': 'T'}]}\n", wantErr: "hashlib.sha1: want bytes or str, not int"},
		{name: "Python 2's str.decode", src: "def GenerateConfig(ctx):\n  return {'resources': [{'name': 'web'.decode('utf-8'), 'type': 'T'}]}\n", want: "web"},
		// Python as Deployment Manager ran it, where Starlark differs; each
		// case's want is what CPython makes of it.
		// A backslash before a character that starts no escape stays (sed
		// and shell strings); octal and hex escapes over 127 are characters.
		{name: "escapes Python leaves alone", src: `def GenerateConfig(ctx):
  return {'resources': [{'name': 'sed -e "s/\/x\+/\d/"' + "\." + '''\w''', 'type': 'T'}]}
`, want: `sed -e "s/\/x\+/\d/"\.\w`},
		{name: "escapes over 127", src: `def GenerateConfig(ctx):
  return {'resources': [{'name': '\351\xe9\u00e9\x41\101\0'.replace('\0', '0'), 'type': 'T'}]}
`, want: "éééAA0"},
		{name: "raw strings and escaped backslashes", src: `def GenerateConfig(ctx):
  return {'resources': [{'name': r'\d\+' + 'a\\+' + b'\+'.decode(), 'type': 'T'}]}
`, want: `\d\+a\+\+`},
		{name: "implicit concatenation with escapes", src: `def GenerateConfig(ctx):
  return {'resources': [{'name': ('\+' '\/'
    u'\n'), 'type': 'T'}]}
`, want: "\\+\\/\n"},
		{name: "a line continued in a string", src: `def GenerateConfig(ctx):
  return {'resources': [{'name': 'a\
b\-', 'type': 'T'}]}
`, want: `ab\-`},
		{name: "context attributes", src: `def helper(ctx):
  return ctx.shared_vpc + '/' + ctx.env['name']
def GenerateConfig(context):
  context.shared_vpc = 'host'
  context.env['name'] = 'n2'
  return {'resources': [{'name': helper(context) + str(hasattr(context, 'shared_vpc')), 'type': 'T'}]}
`, want: "host/n2True"},
		{name: "object attributes", src: `class R(object):
  pass
def GenerateConfig(context):
  r = R()
  r.a = 'x'
  r.a += 'y'
  return {'resources': [{'name': r.a, 'type': 'T'}]}
`, want: "xy"},
		// Special methods as CPython runs them (want is CPython's).
		{name: "special methods", src: `class Bag(object):
  KIND = 'bag'
  def __init__(self, *items):
    self.items = list(items)
    self.props = {}
  def __getitem__(self, k):
    return self.props[k]
  def __setitem__(self, k, v):
    self.props[k] = v
  def __delitem__(self, k):
    self.props.pop(k)
  def __contains__(self, k):
    return k in self.props
  def __len__(self):
    return len(self.items)
  def __iter__(self):
    return iter(self.items)
  def __str__(self):
    return 'Bag(%s)' % ','.join([str(i) for i in self.items])
  def __repr__(self):
    return 'Bag!'
  @property
  def first(self):
    return self.items[0]
class V(object):
  def __init__(self, n):
    self.n = n
  def __eq__(self, o):
    return self.n == o.n
  def __ne__(self, o):
    return self.n != o.n
  def __lt__(self, o):
    return self.n < o.n
  def __hash__(self):
    return self.n
  def __call__(self, x):
    return self.n * x
  def __add__(self, o):
    return V(self.n + o.n)
  def __repr__(self):
    return 'V%d' % self.n
def GenerateConfig(context):
  b = Bag(3, 1, 2)
  b['a'] = 1
  b['b'] = 2
  del b['a']
  out = [b['b'], 'a' in b, 'b' in b, len(b), [i for i in b], str(b), repr(b), '%s' % b, b.first, b.KIND, bool(Bag()), bool(b)]
  vs = sorted([V(3), V(1), V(2)])
  out += [repr(vs), V(1) == V(1), V(1) != V(2), V(1) == V(2), V(2)(5), repr(V(1) + V(2)), len(set([V(1), V(1), V(2)])), {V(4): 'x'}[V(4)], max(vs), callable(V(1)), callable(b)]
  Bag.KIND = 'sack'
  out.append(b.KIND)
  return {'resources': [{'name': str(out), 'type': 'T'}]}
`, want: "[2, False, True, 3, [3, 1, 2], 'Bag(3,1,2)', 'Bag!', 'Bag(3,1,2)', 3, 'bag', False, True, '[V1, V2, V3]', True, True, False, 10, 'V3', 2, 'x', V3, True, False, 'sack']"},
		{name: "assert over lines", src: `def GenerateConfig(context):
  p = {'zone': 'z'}
  assert ('region' in p) ^ ('zone' in p), (
      'Need exactly one of zone or region %s' % p['nope'])
  assert p, \
    'empty'
  return {'resources': [{'name': 'ok', 'type': 'T'}]}
`, want: "ok"},
		{name: "assert over lines fails", src: `def GenerateConfig(context):
  p = {}
  assert ('region' in p) ^ ('zone' in p), (
      'Need exactly one of zone or region')
  return {}
`, wantErr: "t.py:3: AssertionError: Need exactly one of zone or region"},
		{name: "bitwise operators on bools", src: `def GenerateConfig(context):
  return {'resources': [{'name': str([True & 1, False | False, 6 ^ 3, True ^ True, 5 & 3 | 8]), 'type': 'T'}]}
`, want: "[1, False, 5, False, 9]"},
		{name: "exception classes", src: `class Error(Exception):
  """A template's error."""
class Bad(Error):
  pass
def GenerateConfig(context):
  e = Bad('boom')
  return {'resources': [{'name': str(e) + str(isinstance(e, Error)) + str(len(e.args)) + repr(str(Error())), 'type': 'T'}]}
`, want: "boomTrue1''"},
		{name: "raise of an exception class", src: `class Error(Exception):
  pass
def GenerateConfig(context):
  raise Error('zone %s is unknown' % 'z')
`, wantErr: "t.py:4: Error: zone z is unknown"},
		// try/except as CPython runs it (want is CPython's).
		{name: "try and except", src: `class Error(Exception):
  pass
def get(d, k):
  try:
    return d[k]
  except KeyError:
    return 'none'
def parse(s):
  try:
    n = int(s)
  except (ValueError, TypeError) as e:
    n = -1
  else:
    n = n * 2
  return n
def wrap(f):
  try:
    return f()
  except Exception as e:
    return 'caught ' + str(e)
def bad():
  raise Error('x')
def partial():
  a = 0
  try:
    a = 1
    b = [][3]
  except LookupError:
    pass
  return a
def GenerateConfig(context):
  out = [get({'a': 1}, 'a'), get({}, 'b'), parse('21'), parse('x'), wrap(bad), partial()]
  try:
    out.append({}['k'])
  except:
    out.append('bare')
  for i in range(3):
    try:
      out.append(10 // (1 - i))
    except ZeroDivisionError:
      out.append('z')
  return {'resources': [{'name': str(out), 'type': 'T'}]}
`, want: "[1, 'none', 42, -1, 'caught x', 1, 'bare', 10, 'z', -10]"},
		{name: "exception classes of failures", src: `def kind(f):
  try:
    f()
    return 'ok'
  except ValueError:
    return 'V'
  except TypeError:
    return 'T'
  except LookupError:
    return 'L'
  except AttributeError:
    return 'A'
  except ZeroDivisionError:
    return 'Z'
def unpack():
  a, b = [1, 2, 3]
def GenerateConfig(context):
  out = [kind(lambda: '%x' % 1.5), kind(lambda: [1].index(3)), kind(unpack), kind(lambda: 'a'.index('z')), kind(lambda: int('q')), kind(lambda: 'a' + 1), kind(lambda: {}['k']), kind(lambda: [][0]), kind(lambda: 'a'.nope), kind(lambda: 1 // 0), kind(lambda: len(5)), kind(lambda: 'x')]
  return {'resources': [{'name': ''.join(out), 'type': 'T'}]}
`, want: "TVVVVTLLAZTok"},
		// str.format's and %'s own failures, as CPython classes them.
		{name: "exception classes of formatting", src: `def kind(f):
  try:
    f()
    return 'ok'
  except ValueError:
    return 'V'
  except TypeError:
    return 'T'
def GenerateConfig(context):
  out = [kind(lambda: '{0:x}'.format(1.5)), kind(lambda: '{:.2d}'.format(1)), kind(lambda: '{!z}'.format(1)), kind(lambda: '{'.format()), kind(lambda: '{:.}'.format(1.0)), kind(lambda: '%s %s' % (1,)), kind(lambda: '%c' % 'ab'), kind(lambda: '%*d' % ('a', 1)), kind(lambda: ','.join([1]))]
  return {'resources': [{'name': ''.join(out), 'type': 'T'}]}
`, want: "VVVVVTTTT"},
		{name: "except of a template's class catches what derives from it", src: `class Error(Exception):
  pass
class Bad(Error):
  pass
class Other(ValueError):
  pass
def kind(f):
  try:
    f()
    return 'ok'
  except Error as e:
    return 'E' + str(e)
  except ValueError:
    return 'V'
  except Exception:
    return 'X'
def bad():
  raise Bad('b')
def err():
  raise Error('e')
def other():
  raise Other('o')
def unknown():
  raise RuntimeError('r')
def GenerateConfig(context):
  return {'resources': [{'name': ','.join([kind(bad), kind(err), kind(other), kind(unknown)]), 'type': 'T'}]}
`, want: "Eb,Ee,V,X"},
		{name: "an exception no handler catches", src: `def GenerateConfig(context):
  try:
    x = {}['k']
  except ValueError:
    x = 1
  return {}
`, wantErr: "t.py:3: key \"k\" not in dict"},
		{name: "try with finally", src: `def GenerateConfig(context):
  try:
    x = 1
  finally:
    x = 2
  return {}
`, wantErr: "t.py:4: try: finally is not supported"},
		{name: "a try body that reads what it assigns", src: `def GenerateConfig(context):
  n = 1
  try:
    n = n + 1
  except KeyError:
    pass
  return {}
`, wantErr: "t.py:4: try: its body reads n before it assigns it"},
		{name: "steps are not caught", src: `def GenerateConfig(context):
  try:
    for i in range(100000):
      pass
  except:
    pass
  return {}
`, wantErr: "StarlarkSteps", limit: true},
		{name: "duplicate dict keys", src: `def GenerateConfig(context):
  d = {'b': 1, 'a': 2, 'b': 3, 1: 'x', 1: 'y'}
  return {'resources': [{'name': ','.join(['%s=%s' % kv for kv in d.items()]), 'type': 'T'}]}
`, want: "b=3,a=2,1=y"},
		{name: "power", src: `def GenerateConfig(context):
  x = [2]
  return {'resources': [{'name': str([2 ** 10, -2 ** 2, 2 ** -1, 2 ** 3 ** 2, x[0] ** 2, (1 + 1) ** 0.5 > 1.41, 10 ** 20, pow(3, 4, 5), 2**len('ab')]), 'type': 'T'}]}
`, want: "[1024, -4, 0.5, 512, 4, True, 100000000000000000000, 1, 4]"},
		{name: "chained comparisons", src: `def GenerateConfig(context):
  n = 5
  ok = [0 < n <= 10, 1 < n < 3, 'a' <= 'b' < 'c' != 'd', not 0 < n < 2, [x for x in range(9) if 2 < x < 5]]
  return {'resources': [{'name': str(ok), 'type': 'T'}]}
`, want: "[True, False, True, True, [3, 4]]"},
		// A chain inside another's operand (found by the differential test).
		{name: "nested chained comparisons", src: `def GenerateConfig(context):
  ok = [(0 < ((0 < 1000000 <= 100) + int('101', 2)) <= 100), 1 < (2 < 3 < 4) + 1 < 3, [0 < x < 2 < 3 for x in (1, 5)]]
  return {'resources': [{'name': str(ok), 'type': 'T'}]}
`, want: "[True, True, [True, False]]"},
		{name: "round divmod hex", src: `def GenerateConfig(context):
  return {'resources': [{'name': str([round(2.5), round(3.5), round(-0.5), round(2.675, 2), round(1234, -2), round(1250, -2), divmod(7, -2), hex(255), oct(8), bin(-5)]), 'type': 'T'}]}
`, want: `[2, 4, 0, 2.67, 1200, 1200, (-4, -1), '0xff', '0o10', '-0b101']`},
		{name: "str and repr in Python's notation", src: `def GenerateConfig(context):
  d = {'a': [1.0, None, ('x',)], 'b': 1e16}
  return {'resources': [{'name': str(d) + repr('q') + '{}|{!r}'.format(['y'], 0.1) + str(True + 1), 'type': 'T'}]}
`, want: "{'a': [1.0, None, ('x',)], 'b': 1e+16}'q'['y']|0.12"},
		{name: "re.sub reads its template first", src: `import re
def GenerateConfig(context):
  return {'resources': [{'name': re.sub('x', r'\1', 'abc'), 'type': 'T'}]}
`, wantErr: "invalid group reference 1"},
		{name: "strings are characters", src: `def GenerateConfig(context):
  s = 'ünï-日本'
  out = [len(s), s[0], s[-1], s[1:3], s[::-1], [c for c in s[:2]], list('ab'), sorted('cba'), max('az'), len('abc'), 'abc'[1]]
  for c in 'xy':
    out.append(c)
  d = {'k': [1, 2]}
  d['k'][0] = 5
  return {'resources': [{'name': str(out) + str(d), 'type': 'T'}]}
`, want: "[6, 'ü', '本', 'nï', '本日-ïnü', ['ü', 'n'], ['a', 'b'], ['a', 'b', 'c'], 'z', 3, 'b', 'x', 'y']{'k': [5, 2]}"},
		{name: "unbound str methods", src: `def GenerateConfig(context):
  return {'resources': [{'name': str(sorted(['b', 'A', 'c'], key=str.lower) + list(map(str.strip, [' x ']))), 'type': 'T'}]}
`, want: "['A', 'b', 'c', 'x']"},
		{name: "a method of a string with braces", src: `import json
def GenerateConfig(context):
  return {'resources': [{'name': str(json.dumps({'a': 1}).count('a')) + '{x}'.upper() + '{}'.format(2), 'type': 'T'}]}
`, want: "1{X}2"},
		{name: "a huge power", src: `def GenerateConfig(context):
  return {'resources': [{'name': str(2 ** 100000000), 'type': 'T'}]}
`, wantErr: "MaxOutputBytes", limit: true},
		{name: "sys", src: `import sys
from sys import maxsize
def GenerateConfig(context):
  return {'resources': [{'name': '%d %s %d %s' % (sys.maxsize, maxsize == sys.maxsize, sys.version_info[0], sys.version_info.major >= 3), 'type': 'T'}]}
`, want: "9223372036854775807 True 3 True"},
		{name: "sys.stderr.write", src: `import sys
def GenerateConfig(context):
  sys.stderr.write('warn\n')
  return {'resources': []}
`, printed: "t.py:3: warn"},
		{name: "sys.exit", src: `import sys
def GenerateConfig(context):
  sys.exit(1)
`, wantErr: "t.py:3: sys.exit: a template cannot end the process"},
		{name: "encode to another codec", src: "def GenerateConfig(ctx):\n  return {'resources': [{'name': 'a'.encode('latin-1'), 'type': 'T'}]}\n", wantErr: "dm encodes to utf-8 and ascii only, not latin-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache, _ := lru.New[string, any](16)
			e := New(1<<20, 1000, 0, cache, func(data []byte, order *engine.Order) (any, error) {
				v, _, err := pyyaml.Decode(data, pyyaml.Options{MaxAliases: 100, Record: order.Record})
				return v, err
			})
			var printed []string
			files := map[string][]byte{"t.py": []byte(tt.src)}
			out, err := e.Render(context.Background(), engine.Invocation{
				File: "t.py", Source: files["t.py"], Files: files, FilesKey: tt.name,
				Imports:    func() map[string]any { return nil },
				Properties: map[string]any{"m": map[string]any{"c": int64(3), "a": int64(1), "b": int64(2)}},
				Env:        map[string]any{"name": "web"},
				Print: func(_ context.Context, label, file string, line int, msg string) {
					printed = append(printed, file+":"+string(rune('0'+line))+": "+msg)
				},
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if got := errors.Is(err, derrors.LimitExceeded); got != tt.limit {
					t.Errorf("limit = %v, want %v (%v)", got, tt.limit, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.printed != "" {
				if len(printed) != 1 || printed[0] != tt.printed {
					t.Errorf("printed %q, want %q", printed, tt.printed)
				}
				return
			}
			m, _ := out.Value.(map[string]any)
			rs, _ := m["resources"].([]any)
			if len(rs) != 1 || rs[0].(map[string]any)["name"] != tt.want {
				t.Errorf("output %#v, want resource %q", out.Value, tt.want)
			}
		})
	}
}
