package starlark

import (
	"fmt"

	"go.starlark.net/starlark"
)

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
