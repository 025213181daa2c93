package api

import (
	"context"
	"slices"

	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/openshift"
	"github.com/dmhq/dm/internal/expand/schema"
)

// MissingInputs returns the required properties of tv that props lacks
// and that have no default: from its schema, or for an OpenShift template
// without one, its required parameters without value or generator. A
// chart has none here: its required values may come from its values.yaml,
// and Helm's validation of the coalesced values names what lacks. A
// template whose schema or Template does not parse has none either: its
// expansion reports the error.
func MissingInputs(ctx context.Context, b Backend, tv *TemplateVersion, props map[string]any) ([]schema.Input, error) {
	switch {
	case tv.Language == "helm":
		return nil, nil
	case tv.SchemaContent != "":
		sc, err := schema.Parse([]byte(tv.SchemaContent), tv.Schema)
		if err != nil {
			return nil, nil
		}
		return sc.Missing(props), nil
	case tv.Language == "openshift":
		data, err := b.ReadFile(ctx, tv.Pinned(), "", tv.TemplateFile)
		if err != nil {
			return nil, err
		}
		t, err := openshift.Parse(data)
		if err != nil {
			return nil, nil
		}
		return t.Missing(openshift.TextValues(props)), nil
	}
	return nil, nil
}

// ConfigInput is a required property that a resource of a configuration
// lacks: Input.Name is RESOURCE.PROPERTY, as a person names it.
type ConfigInput struct {
	schema.Input
	// Resource and Property locate the value: --values keys a
	// configuration's properties by resource name.
	Resource, Property string
}

// MissingConfigInputs returns the required properties without a value or
// default of the templates the resources of req's configuration
// instantiate directly (imported templates, and registry references
// resolved against registry through b); values count as given. A
// configuration that does not parse has none: its expansion reports it.
func MissingConfigInputs(ctx context.Context, b Backend, registry string, req *ExpandRequest, values map[string]any) []ConfigInput {
	cfg, err := expand.ParseConfig([]byte(req.Config), req.ConfigName)
	if err != nil {
		return nil
	}
	// A value keyed by no resource (--properties image=x where the
	// configuration's resource is cli) is the mistake to report, and the
	// expansion reports it with the keyed form: asking for cli.image first
	// would hide it.
	for k := range values {
		if !slices.ContainsFunc(cfg.Resources, func(r expand.Resource) bool { return r.Name == k }) {
			return nil
		}
	}
	imports := make(map[string][]byte, len(req.Imports))
	for k, v := range req.Imports {
		imports[k] = []byte(v)
	}
	missing := expand.MissingInConfig(cfg, imports, values, func(ref string) *schema.Schema {
		tv, err := b.TemplateInputs(ctx, ref, registry)
		if err != nil || tv.SchemaContent == "" {
			return nil
		}
		sc, _ := schema.Parse([]byte(tv.SchemaContent), tv.Schema)
		return sc
	})
	out := make([]ConfigInput, len(missing))
	for i, m := range missing {
		in := m.Input
		in.Name = m.Resource + "." + m.Name
		out[i] = ConfigInput{Input: in, Resource: m.Resource, Property: m.Name}
	}
	return out
}
