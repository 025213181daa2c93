package expand

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPythonGlobal runs templates whose helpers keep module-level state
// with Python's global statement; want is what Python prints for
// json.dumps(GenerateConfig(...)["x"]).
func TestPythonGlobal(t *testing.T) {
	tests := []struct {
		name  string
		src   string            // t.py, returning {"x": ...}
		extra map[string]string // more .py files
		want  string
		err   string
	}{
		{name: "a counter", src: `
COUNTER = 0

def next_id():
    global COUNTER
    COUNTER += 1
    return COUNTER

def GenerateConfig(context):
    return {"x": [next_id(), next_id(), COUNTER]}
`, want: `[1,2,2]`},
		{name: "several names, assigned and rebound", src: `
NAMES = []
LAST = None
SEEN = {}

def remember(n):
    global NAMES, LAST  # two at once
    NAMES = NAMES + [n]
    LAST = n
    SEEN[n] = len(NAMES)

def GenerateConfig(context):
    for n in ["a", "b"]:
        remember(n)
    return {"x": [NAMES, LAST, SEEN]}
`, want: `[["a","b"],"b",{"a":1,"b":2}]`},
		{name: "a local of the same name stays local", src: `
TOTAL = 10

def add(n):
    global TOTAL
    TOTAL = TOTAL + n

def shadow():
    TOTAL = -1
    return TOTAL

def param(TOTAL):
    return TOTAL * 2

def GenerateConfig(context):
    add(5)
    return {"x": [shadow(), param(3), TOTAL, {"TOTAL": TOTAL}, dict(TOTAL=TOTAL)]}
`, want: `[-1,6,15,{"TOTAL":15},{"TOTAL":15}]`},
		{name: "assigned only in a function", src: `
def init():
    global CONFIG
    CONFIG = {"zone": "us-a"}

def GenerateConfig(context):
    init()
    return {"x": CONFIG["zone"]}
`, want: `"us-a"`},
		{name: "state in an imported helper", src: `
import helpers
from helpers import unique

def GenerateConfig(context):
    return {"x": [unique("web"), unique("web"), helpers.unique("db"), helpers.count()]}
`, extra: map[string]string{"helpers.py": `
_used = {}
_count = 0

def unique(name):
    global _count
    _count += 1
    n = _used.get(name, 0)
    _used[name] = n + 1
    if n == 0:
        return name
    return "%s-%d" % (name, n)

def count():
    return _count
`}, want: `["web","web-1","db",3]`},
		{name: "a global statement at the top level is a no-op", src: `
global X
X = 1

def GenerateConfig(context):
    return {"x": X}
`, want: `1`},
		{name: "a global line inside a string stays text", src: `
S = """
    global X
global Y
"""
N = 0

def f():
    global N
    N += 1

def GenerateConfig(context):
    f()
    return {"x": [S, N]}
`, want: `["\n    global X\nglobal Y\n",1]`},
		{name: "old Mac line ends: a lone carriage return is a newline, as Python reads source",
			src: "COUNTER = 0\r\rdef next_id():\r    global COUNTER\r    COUNTER += 1\r    return COUNTER\r\r" +
				"def GenerateConfig(context):\r    return {\"x\": [next_id(), next_id(), COUNTER]}\r", want: `[1,2,2]`},
		{name: "old Mac line ends: errors name Python's line",
			src: "N = 0\rdef f():\r    global N\r    N += \r", err: `t.py:4`},
		{name: "read before any assignment", src: `
def f():
    global UNSET
    return UNSET

def GenerateConfig(context):
    return {"x": f()}
`, err: `UNSET`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := renderOne(t, "t.py", tt.src, nil, tt.extra)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an error containing %q", out, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(out.(map[string]any)["x"])
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}
