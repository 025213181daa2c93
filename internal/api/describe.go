package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/openshift"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Resolve resolves ref, short references against registry ("" for the
// default registry).
func (s *Service) Resolve(ctx context.Context, ref, registry string) (*Resolution, error) {
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	out := ResolutionOf(res)
	return &out, nil
}

// ResolutionOf converts a resolution to its wire form.
func ResolutionOf(res *resolve.Resolution) Resolution {
	v := res.Version
	return Resolution{
		Resolved:     res.Resolved(),
		Requested:    res.Requested,
		Registry:     res.Ref.Registry(),
		Collection:   res.Ref.Collection,
		Template:     res.Ref.Template,
		Version:      v.Semver,
		Digest:       v.Digest,
		Path:         v.Path,
		Files:        Files(v.Files),
		TemplateFile: v.Template,
		Language:     string(v.Language),
		Schema:       v.Schema,
		Example:      v.Example,
		Note:         res.Note,
	}
}

// Files converts a version's file entries.
func Files(entries []fetch.Entry) []File {
	out := make([]File, len(entries))
	for i, e := range entries {
		out[i] = File{Path: e.Path, Size: e.Size, SHA: e.SHA}
	}
	return out
}

// Findings converts lint findings to their wire form.
func Findings(fs []index.Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = Finding{Path: f.Path, Severity: string(f.Severity), Message: f.Message}
	}
	return out
}

// Template resolves ref and describes the version: schema, example, lint
// findings and the template's other versions.
func (s *Service) Template(ctx context.Context, ref, registry string) (*TemplateVersion, error) {
	return Relisted(ctx, s.resolver, func() (*TemplateVersion, error) { return s.template(ctx, ref, registry) })
}

func (s *Service) template(ctx context.Context, ref, registry string) (*TemplateVersion, error) {
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	out := &TemplateVersion{Resolution: ResolutionOf(res), Findings: Findings(res.Version.Findings), ExampleFile: res.Example}
	out.Versions = TemplateInfo(res.Ref.Registry(), res.Template).Versions
	if res.Schema != "" {
		b, err := res.ReadFile(ctx, res.Schema)
		if err != nil {
			return nil, err
		}
		out.SchemaContent = string(b)
		if err := describeSchema(out, b, res.Schema); err != nil {
			out.SchemaError = err.Error()
		}
	}
	if res.Schema == "" && res.Language == index.OpenShift {
		// An OpenShift template's parameters are its properties.
		b, err := res.ReadFile(ctx, res.Version.Template)
		if err != nil {
			return nil, err
		}
		describeParameters(out, b)
	}
	if res.Example != "" {
		b, err := res.ReadFile(ctx, res.Example)
		if err != nil {
			return nil, err
		}
		out.ExampleContent = string(b)
	}
	return out, nil
}

// describeParameters fills a template version's title, description and
// properties from an OpenShift template's metadata and parameters.
func describeParameters(out *TemplateVersion, src []byte) {
	t, err := openshift.Parse(src)
	if err != nil {
		out.SchemaError = err.Error()
		return
	}
	if out.Title == "" {
		if n, ok := t.Metadata["name"].(string); ok {
			out.Title = n
		}
	}
	if ann, ok := t.Metadata["annotations"].(map[string]any); ok && out.Description == "" {
		out.Description, _ = ann["description"].(string)
	}
	for _, p := range t.Parameters {
		prop := Property{Name: p.Name, Type: p.Type, Description: p.Description, Required: p.Required}
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
		out.Properties = append(out.Properties, prop)
		if p.Required {
			out.Required = append(out.Required, p.Name)
		}
	}
}

// describeSchema fills a template version's title, description and
// properties from its schema, compiled as expansion compiles it, so
// describe shows what expansion enforces (DM's int as integer, properties
// in the file's order) and a schema that does not compile is reported.
func describeSchema(out *TemplateVersion, b []byte, file string) error {
	sc, err := schema.Parse(b, file)
	if err != nil {
		return err
	}
	out.Title = strings.TrimSpace(sc.Info.Title)
	out.Description = strings.TrimSpace(sc.Info.Description)
	out.Required = sc.Required
	for _, d := range sc.PropertyDocs() {
		out.Properties = append(out.Properties, Property{Name: d.Name, Type: d.Type, Default: d.Default, Description: strings.TrimSpace(d.Description), Required: d.Required})
	}
	return nil
}

// FileContent is one file of a resolved version.
type FileContent struct {
	// Resolved is the canonical reference of the version.
	Resolved string
	File     File
	Content  []byte
}

// File resolves ref and reads the file at path, relative to the version
// directory.
func (s *Service) File(ctx context.Context, ref, registry, path string) (*FileContent, error) {
	return Relisted(ctx, s.resolver, func() (*FileContent, error) { return s.file(ctx, ref, registry, path) })
}

func (s *Service) file(ctx context.Context, ref, registry, path string) (*FileContent, error) {
	if path == "" {
		return nil, fmt.Errorf("no file path given: %w", derrors.InvalidArgument)
	}
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	e, ok := res.Version.File(path)
	if !ok {
		return nil, fmt.Errorf("%s: no file %q in %s: %w", res.Resolved(), path, res.Version.Path, derrors.NotFound)
	}
	b, err := res.ReadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	return &FileContent{Resolved: res.Resolved(), File: File{Path: e.Path, Size: e.Size, SHA: e.SHA}, Content: b}, nil
}

// ReadFile is File's content alone, for Backend.
func (s *Service) ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error) {
	f, err := s.File(ctx, ref, registry, path)
	if err != nil {
		return nil, err
	}
	return f.Content, nil
}
