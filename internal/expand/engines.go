package expand

import (
	"context"
	"fmt"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/gotmpl"
	"github.com/dmhq/dm/internal/expand/jinja"
	"github.com/dmhq/dm/internal/expand/openshift"
)

// builtinEngines returns the engines of the languages of engine.Default,
// bound to x's limits and caches. A language is one line here and one row
// in the table.
func builtinEngines(x *Expander) []engine.Engine {
	return []engine.Engine{
		jinja.New(x.opts.MaxOutputBytes, x.opts.JinjaSteps, x.opts.JinjaCallDepth, x.compiled),
		starlarkEngine{x},
		gotmpl.New(x.opts.MaxOutputBytes, x.compiled, func(b []byte) (any, error) {
			return decodeYAML(b, yamlLimits{maxBytes: x.opts.MaxOutputBytes, bytesField: "MaxOutputBytes", maxAliases: defaultMaxYAMLAliases})
		}),
		&openshift.Engine{MaxOutputBytes: x.opts.MaxOutputBytes, Cache: x.compiled},
	}
}

// orderOf returns the expansion's key order an invocation carries; the
// engines still in this package share its concrete type.
func orderOf(inv engine.Invocation) *keyOrder {
	o, _ := inv.Order.(*keyOrder)
	return o
}

// output wraps what a render function returned as an engine.Output.
func output(v any, err error) (engine.Output, error) {
	if err != nil {
		return engine.Output{}, err
	}
	switch o := v.(type) {
	case []byte:
		return engine.Output{YAML: o}, nil
	case []engine.Resource:
		return engine.Output{Resources: o}, nil
	}
	return engine.Output{Value: v}, nil
}

type starlarkEngine struct{ x *Expander }

func (starlarkEngine) Name() string { return "python" }

func (e starlarkEngine) Render(ctx context.Context, inv engine.Invocation) (engine.Output, error) {
	return output(e.x.renderStarlark(ctx, inv))
}

// Check compiles a Python-style template and the modules it loads.
func (e starlarkEngine) Check(_ context.Context, files map[string][]byte, file string) error {
	_, err := e.x.starlarkProgram(newImportsBundle(files), file)
	return err
}

// engines indexes engs by name and checks that they are the table's
// languages, one each: a language without an engine would fail only when
// a template of it is expanded.
func enginesByName(langs *engine.Registry, engs []engine.Engine) (map[string]engine.Engine, error) {
	m := make(map[string]engine.Engine, len(engs))
	for _, e := range engs {
		if _, ok := langs.Lookup(e.Name()); !ok {
			return nil, fmt.Errorf("engine %q is not a language of the table", e.Name())
		}
		if _, dup := m[e.Name()]; dup {
			return nil, fmt.Errorf("two engines for language %q", e.Name())
		}
		m[e.Name()] = e
	}
	for _, l := range langs.Languages() {
		if m[l.Name] == nil {
			return nil, fmt.Errorf("language %q has no engine", l.Name)
		}
	}
	return m, nil
}
