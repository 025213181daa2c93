package expand

// mapKeys is the order in which a template sees a mapping's keys.
// Configurations, properties and the values templates build keep their
// document order where the data model carries it; a plain Go map has
// none, so its keys come sorted (deterministic, as JSON output is).
func mapKeys(m map[string]any) []string { return sortedKeys(m) }
