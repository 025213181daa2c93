package expand

import (
	"github.com/dmhq/dm/internal/expand/engine"
)

// configTemplate returns the engine whose template a configuration
// document is (a kind: Template given directly), if any.
func (x *Expander) configTemplate(data []byte) (engine.ConfigTemplater, bool) {
	for _, l := range x.langs.Languages() {
		if ct, ok := x.engines[l.Name].(engine.ConfigTemplater); ok && ct.IsConfigTemplate(data) {
			return ct, true
		}
	}
	return nil, false
}
