package openshift

import (
	"context"
	"strings"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Describer is the openshift language's engine.Describer: a Template's
// parameters are its properties.
type Describer struct{}

var _ engine.Describer = Describer{}

// Describe describes the Template in file: its metadata.name as the
// title, the description and tags annotations (tags comma-separated, as
// oc and the OpenShift console read them), and its parameters as
// properties (a generated value's default says what generates it).
func (Describer) Describe(ctx context.Context, file string, read func(name string) ([]byte, error)) (*engine.Description, error) {
	src, err := read(file)
	if err != nil {
		return nil, err
	}
	t, err := Parse(src)
	if err != nil {
		return nil, err
	}
	d := &engine.Description{}
	d.Title, _ = t.Metadata["name"].(string)
	if ann, ok := t.Metadata["annotations"].(map[string]any); ok {
		d.Description, _ = ann["description"].(string)
		if tags, ok := ann["tags"].(string); ok {
			for _, tag := range strings.Split(tags, ",") {
				if tag = strings.TrimSpace(tag); tag != "" {
					d.Tags = append(d.Tags, tag)
				}
			}
		}
	}
	for _, p := range t.Parameters {
		prop := engine.Property{Name: p.Name, Type: p.Type, Description: p.Description, Required: p.Required}
		if prop.Type == "" {
			prop.Type = "string"
		}
		switch {
		case p.Value != "":
			prop.Default = p.Value
		case p.Generate != "":
			prop.Default = "generated: " + p.From
		}
		if p.DisplayName != "" && prop.Description == "" {
			prop.Description = p.DisplayName
		}
		d.Properties = append(d.Properties, prop)
		if p.Required {
			d.Required = append(d.Required, p.Name)
		}
	}
	return d, nil
}
