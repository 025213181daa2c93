package expand

import (
	"github.com/dmhq/dm/internal/expand/engine"
)

// configTemplate returns the engine whose template a configuration
// document is (a kind: Template given directly), if any.
func (x *Expander) configTemplate(data []byte) (engine.ConfigTemplater, bool) {
	for _, ct := range x.configTemplaters {
		if ct.IsConfigTemplate(data) {
			return ct, true
		}
	}
	return nil, false
}

// configTemplaters returns the engines that take a template in place of
// a configuration, in table order.
func configTemplaters(langs *engine.Registry, engines map[string]engine.Engine) []engine.ConfigTemplater {
	var out []engine.ConfigTemplater
	for _, l := range langs.Languages() {
		if ct, ok := engines[l.Name].(engine.ConfigTemplater); ok {
			out = append(out, ct)
		}
	}
	return out
}
