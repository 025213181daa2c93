package engine

import "context"

// Describer is implemented by languages whose templates describe their
// properties in their own files (an OpenShift Template's parameters, a
// Helm chart's values.yaml and Chart.yaml) rather than in a DM schema:
// the API and the catalog ask it for a version's title, description and
// properties table. A Describer links no template library, so every
// program may ask it (package expand's DescriberFor).
type Describer interface {
	// Describe describes the template whose template file is file; read
	// returns a file of its version directory (an error wrapping
	// derrors.NotFound when there is none).
	Describe(ctx context.Context, file string, read func(name string) ([]byte, error)) (*Description, error)
}

// Description is what a template says of itself.
type Description struct {
	Title, Description string
	Tags               []string
	// Properties are in display order; a nested value is one row named
	// by its dotted path (image.tag).
	Properties []Property
	// Required names the required properties.
	Required []string
}

// Property is one row of a template's properties table.
type Property struct {
	Name, Type string
	// Default is the default value (JSON-compatible), nil for none.
	Default     any
	Description string
	Required    bool
}
