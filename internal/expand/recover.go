package expand

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
