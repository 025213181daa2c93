package schema

import "strings"

// IsStringType reports whether a property type as PropertyDoc.Type has
// it ("string", "integer", "string|null") admits only strings and null.
func IsStringType(t string) bool {
	for _, p := range strings.Split(t, "|") {
		if p != "string" && p != "null" {
			return false
		}
	}
	return strings.Contains(t, "string")
}

// KeepText gives the top-level values of props whose property types
// (types, by name, as PropertyDoc.Type has them) admit only strings their
// text as written (text, by name): tag=1.27 from the command line is the
// string "1.27", where reading it as YAML would make it a number and lose
// the zero of 1.10, as oc process and helm --set-string users expect.
// Values that are strings already, and names without text, are left as
// they are.
func KeepText(types map[string]string, props map[string]any, text map[string]string) {
	for name, t := range types {
		raw, ok := text[name]
		if !ok || !IsStringType(t) {
			continue
		}
		if _, isString := props[name].(string); !isString {
			props[name] = raw
		}
	}
}
