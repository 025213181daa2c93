package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/signature"
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
		Namespace:    res.Registry.Namespace,
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
		Signer:       res.Signer,
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
	return Relisted(ctx, s.resolver, func() (*TemplateVersion, error) { return s.template(ctx, ref, registry, true) })
}

// TemplateInputs describes the version as Template does, but without the
// findings of its language's own lint rules, which a command that only
// asks for inputs does not show and which cost a chart a Helm lint (in
// dm-helm, for dm).
func (s *Service) TemplateInputs(ctx context.Context, ref, registry string) (*TemplateVersion, error) {
	return Relisted(ctx, s.resolver, func() (*TemplateVersion, error) { return s.template(ctx, ref, registry, false) })
}

func (s *Service) template(ctx context.Context, ref, registry string, lint bool) (*TemplateVersion, error) {
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	out := &TemplateVersion{Resolution: ResolutionOf(res), Findings: Findings(res.Version.Findings), ExampleFile: res.Example}
	if lint {
		out.Findings = append(out.Findings, Findings(s.languageFindings(ctx, res))...)
	}
	out.Versions = TemplateInfo(res.Ref.Registry(), res.Template).Versions
	if sig := res.Version.Signature; sig != nil {
		out.Signature = &File{Path: sig.Path, Size: sig.Size, SHA: sig.SHA}
	}
	if lint && res.Registry.Verifier != nil {
		// Who signed each sibling, or why it is refused: the catalog marks
		// them. Verified once per version and policy (cached).
		for i, v := range res.Template.Versions {
			if v.Problem != "" || i >= len(out.Versions) {
				continue
			}
			signer, err := res.Registry.Verifier.VerifyVersion(ctx, res.Registry, res.Template, v)
			out.Versions[i].Signer = signer
			if err != nil {
				out.Versions[i].Refused = derrors.Message(err)
				var se *signature.Error
				if errors.As(err, &se) {
					out.Versions[i].RefusedReason = string(se.Reason)
				}
			}
		}
	}
	d := Describer(string(res.Language), res.Schema)
	if res.Schema != "" {
		b, err := res.ReadFile(ctx, res.Schema)
		if err != nil {
			return nil, err
		}
		out.SchemaContent = string(b)
		if d == nil {
			if err := describeSchema(out, b, res.Schema); err != nil {
				out.SchemaError = err.Error()
			}
		}
	}
	if d != nil {
		read, readErr := readsFailing(func(name string) ([]byte, error) { return res.ReadFile(ctx, name) })
		desc, err := d.Describe(ctx, res.Version.Template, read)
		if *readErr != nil {
			return nil, *readErr
		}
		fromDescription(out, desc, err)
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

// Describer returns the engine.Describer that describes a version of
// language whose schema file is schema, nil when its DM schema does: a
// DM schema (file.schema) is the description of any template that has
// one, and otherwise a language with a describer (an OpenShift
// Template's parameters, a Helm chart's values) describes its own.
func Describer(language, schema string) engine.Describer {
	if strings.HasSuffix(schema, index.SchemaSuffix) {
		return nil
	}
	return expand.DescriberFor(language)
}

// readsFailing wraps read to keep its last failure other than a missing
// file: a describer's error says what is wrong with the template, but a
// file that could not be read (an outage) fails the request instead.
func readsFailing(read func(string) ([]byte, error)) (func(string) ([]byte, error), *error) {
	var failed error
	return func(name string) ([]byte, error) {
		b, err := read(name)
		if err != nil && !errors.Is(err, derrors.NotFound) {
			failed = err
		}
		return b, err
	}, &failed
}

// fromDescription fills a template version's title, description and
// properties from a describer's answer; err, if not nil, is why the
// template could not describe itself.
func fromDescription(out *TemplateVersion, d *engine.Description, err error) {
	if err != nil {
		out.SchemaError = err.Error()
	}
	if d == nil {
		return
	}
	if out.Title == "" {
		out.Title = d.Title
	}
	if out.Description == "" {
		out.Description = d.Description
	}
	for _, p := range d.Properties {
		out.Properties = append(out.Properties, Property{Name: p.Name, Type: p.Type, Default: p.Default, Description: p.Description, Required: p.Required})
	}
	out.Required = append(out.Required, d.Required...)
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
	if !ok && path == index.SignatureFile && res.Version.Signature != nil {
		// Not part of the version, but read as its files are: a mirror
		// copies it.
		e = *res.Version.Signature
		b, err := res.Registry.Blob(ctx, e.SHA)
		if err != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", res.Resolved(), path, err)
		}
		return &FileContent{Resolved: res.Resolved(), File: File{Path: e.Path, Size: e.Size, SHA: e.SHA}, Content: b}, nil
	}
	if !ok {
		return nil, fmt.Errorf("%s: no file %q in %s: %w", res.Resolved(), path, res.Version.Path, derrors.NotFound)
	}
	b, err := res.ReadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	return &FileContent{Resolved: res.Resolved(), File: File{Path: e.Path, Size: e.Size, SHA: e.SHA}, Content: b}, nil
}

// VersionSignatures returns the Sigstore bundles of the version ref
// resolves to, where its registry keeps them (signature.Bundles), for a
// mirror to copy.
func (s *Service) VersionSignatures(ctx context.Context, ref, registry string) ([][]byte, error) {
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	return signature.Bundles(ctx, res.Registry, res.Version)
}

// ReadFile is File's content alone, for Backend.
func (s *Service) ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error) {
	f, err := s.File(ctx, ref, registry, path)
	if err != nil {
		return nil, err
	}
	return f.Content, nil
}

// PropertyTypes returns the type of each property the version describes,
// by name, as schema.KeepText takes them.
func (tv *TemplateVersion) PropertyTypes() map[string]string {
	types := make(map[string]string, len(tv.Properties))
	for _, p := range tv.Properties {
		types[p.Name] = p.Type
	}
	return types
}
