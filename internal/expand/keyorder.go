package expand

import "github.com/dmhq/dm/internal/expand/engine"

// keyOrder is the expansion's key order; see engine.Order.
type keyOrder = engine.Order

func newKeyOrder() *keyOrder { return engine.NewOrder() }
