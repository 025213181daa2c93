// Package layout holds the result types of an expansion that outlive it:
// the tree of resources (the layout), the registry templates an expansion
// used (references) and a template's outputs. Deploy history records them,
// so they live apart from the expansion engine: a package that stores or
// reads history imports these types without linking the template
// languages (gonja, Starlark, sprig).
package layout

// Layout is the tree of resources.
type Layout struct {
	Resources []*Resource `json:"resources"`
}

// Resource is a node of the layout. Template nodes carry the properties
// the template was invoked with (after schema defaults) and the resources
// it produced.
type Resource struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties,omitzero"`
	Resources  []*Resource    `json:"resources,omitzero"`
	// Outputs are a template's outputs as it rendered them.
	Outputs []Output `json:"outputs,omitzero"`
	// Metadata (dependsOn) and AccessControl are kept as written.
	Metadata      map[string]any `json:"metadata,omitzero"`
	AccessControl map[string]any `json:"accessControl,omitzero"`
}

// Output is one of a template's outputs (DM's outputs: [{name, value}]):
// $(ref.RESOURCE.NAME) elsewhere in the deployment, RESOURCE being the
// template's resource, is Value. Value may itself hold value references.
type Output struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Reference is a registry template used by an expansion.
type Reference struct {
	// Ref is the reference as first written.
	Ref string `json:"ref"`
	// Resolved is the canonical reference with the concrete version.
	Resolved string `json:"resolved"`
	Version  string `json:"version"`
	Digest   string `json:"digest"`
}

// Paths maps the name of every leaf of the layout (the primitives) to its
// layout path: the resource names from the top of the configuration down.
func (l *Layout) Paths() map[string][]string {
	paths := map[string][]string{}
	var walk func(prefix []string, rs []*Resource)
	walk = func(prefix []string, rs []*Resource) {
		for _, r := range rs {
			p := append(prefix[:len(prefix):len(prefix)], r.Name)
			if len(r.Resources) == 0 {
				paths[r.Name] = p
			}
			walk(p, r.Resources)
		}
	}
	walk(nil, l.Resources)
	return paths
}
