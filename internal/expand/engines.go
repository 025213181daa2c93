package expand

import (
	"context"
	"errors"
	"fmt"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/gotmpl"
	"github.com/dmhq/dm/internal/expand/helm/chartdoc"
	"github.com/dmhq/dm/internal/expand/jinja"
	"github.com/dmhq/dm/internal/expand/openshift"
	"github.com/dmhq/dm/internal/expand/starlark"
)

// builtinEngines returns the engines of the languages of engine.Default,
// bound to x's limits and caches. A language is one line here and one row
// in the table.
func builtinEngines(x *Expander) []engine.Engine {
	return []engine.Engine{
		jinja.New(x.opts.MaxOutputBytes, x.opts.JinjaSteps, x.opts.JinjaCallDepth, x.compiled),
		starlark.New(x.opts.MaxOutputBytes, x.opts.StarlarkSteps, x.opts.RegexTimeout, x.compiled, func(data []byte, order *engine.Order) (any, error) {
			lim := x.yamlLimits("MaxOutputBytes", x.opts.MaxOutputBytes)
			lim.order = order
			return decodeYAML(data, lim)
		}),
		gotmpl.New(x.opts.MaxOutputBytes, x.compiled, func(b []byte) (any, error) {
			return decodeYAML(b, yamlLimits{maxBytes: x.opts.MaxOutputBytes, bytesField: "MaxOutputBytes", maxAliases: defaultMaxYAMLAliases})
		}),
		&openshift.Engine{MaxOutputBytes: x.opts.MaxOutputBytes, Cache: x.compiled},
	}
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
			if !l.Attached {
				return nil, fmt.Errorf("language %q has no engine", l.Name)
			}
			m[l.Name] = unattached(l.Name)
		}
	}
	return m, nil
}

// unattached stands for an attached language (engine.Language.Attached)
// whose engine this program did not attach.
type unattached string

func (u unattached) Name() string { return string(u) }

func (u unattached) Render(ctx context.Context, inv engine.Invocation) (engine.Output, error) {
	return engine.Output{}, engine.At(inv.File, 0, fmt.Errorf("%s templates are not rendered by this program: %w", string(u), errors.ErrUnsupported))
}

// DescriberFor returns the engine.Describer of language lang, nil for
// languages whose templates are described by a DM schema alone. Every
// program has them, whether or not it attaches the language's engine: a
// describer reads files and links no template library.
func DescriberFor(lang string) engine.Describer {
	return map[string]engine.Describer{
		"openshift": openshift.Describer{},
		"helm":      chartdoc.Describer{},
	}[lang]
}
