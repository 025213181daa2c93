package expand

import (
	"fmt"

	"go.starlark.net/starlark"
)

// recoverEngine turns a panic of a template engine (gonja, Starlark,
// text/template, the OpenShift processor or dm's own functions in them)
// into an error naming the template file and, where the engine tracks
// it, the line of the statement that was running. Deferred by every
// render function, so neither dm nor registryd crashes on a template.
func recoverEngine(engine, file string, line func() int, err *error) {
	p := recover()
	if p == nil {
		return
	}
	n := 0
	if line != nil {
		n = line()
	}
	*err = at(file, n, invalid("the %s engine failed on this template: %v", engine, p))
}

// recoverBuiltins replaces the builtins of d by ones that turn a panic
// into an error, which Starlark then reports at the calling line. (A
// panic that reaches renderStarlark has lost the interpreter's stack.)
func recoverBuiltins(d starlark.StringDict) {
	for k, v := range d {
		if b, ok := v.(*starlark.Builtin); ok {
			d[k] = starlark.NewBuiltin(b.Name(), func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("%s failed: %v", b.Name(), p)
					}
				}()
				return b.CallInternal(th, args, kwargs)
			})
		}
	}
}
