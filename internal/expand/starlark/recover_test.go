package starlark

import (
	"errors"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// TestBuiltinPanicsAreErrors: dm's Starlark builtins turn a panic into an
// error at the calling line.
func TestBuiltinPanicsAreErrors(t *testing.T) {
	d := starlark.StringDict{"boom": starlark.NewBuiltin("boom", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
		panic("bad")
	})}
	recoverBuiltins(d)
	_, serr := starlark.ExecFile(&starlark.Thread{}, "f.py", "x = 1\n\ny = boom()\n", d)
	var ee *starlark.EvalError
	if !errors.As(serr, &ee) || !strings.Contains(ee.Backtrace(), "f.py:3:") || !strings.Contains(serr.Error(), "boom failed: bad") {
		t.Errorf("got %v, want the panic as an error at f.py:3", serr)
	}

}
