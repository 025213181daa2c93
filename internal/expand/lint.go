package expand

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/pyyaml"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Lint checks what a registry's listing cannot show: that each version's
// template files parse (Jinja, Starlark, Go templates; errors with file and
// line), that its schema compiles, that a .yaml/.yml/.json template is a kind: Template, and
// that example.yaml parses as a configuration; with expandExamples, also
// that every example expands (short references against reg). Findings are
// errors at the version directory, and warnings for mapping keys a schema
// or example repeats. engines are the attached languages' engines of the
// program: a language's own lint rules (Helm's, engine.Linter) run where
// its engine is attached; elsewhere a warning says they were left out,
// and an example that needs the engine is not expanded (a warning too).
func Lint(ctx context.Context, reg *index.Registry, expandExamples bool, engines ...engine.Engine) []index.Finding {
	snap := reg.Snapshot()
	if snap == nil {
		return nil
	}
	def, _ := resolve.ParseRegistry(reg.Name)
	r := resolve.New(def, reg)
	x := New(Options{Resolver: r, Engines: engines})
	var out []index.Finding
	note := func(v *index.Version, format string, args ...any) {
		out = append(out, index.Finding{Path: v.Path, Severity: index.Error, Message: fmt.Sprintf(format, args...)})
	}
	warn := func(v *index.Version, msg string) {
		out = append(out, index.Finding{Path: v.Path, Severity: index.Warning, Message: msg})
	}
	for _, t := range snap.AllTemplates() {
		for _, v := range t.Versions {
			if v.Problem != "" {
				continue // the listing's findings say why
			}
			// Pinning the digest picks exactly this directory.
			res, err := r.ResolveIn(ctx, v.Ref+"@"+v.Digest, def)
			if err != nil {
				continue // ambiguity: a finding of the listing already
			}
			read := func(name string) ([]byte, bool) {
				b, err := res.ReadFile(ctx, name)
				if err != nil {
					note(v, "reading %s: %v", name, err)
					return nil, false
				}
				return b, true
			}
			// The version's template parses, and so does every file of a
			// code language (helpers and imported macros included), whether
			// or not the example uses it; a data file (.yaml) is a template
			// only as the version's template.
			var files map[string][]byte
			for _, e := range v.Files {
				lang, ok := x.langs.ForFile(e.Path)
				if !ok || (!x.langs.IsCode(e.Path) && e.Path != v.Template) {
					continue
				}
				c, ok := x.engines[lang.Name].(engine.Checker)
				if !ok {
					continue
				}
				if files == nil {
					files = readAll(ctx, res, v)
				}
				if _, ok := files[e.Path]; !ok {
					read(e.Path) // notes why it cannot be read
					continue
				}
				var nt *engine.NotTemplateError
				if err := c.Check(ctx, files, e.Path); errors.As(err, &nt) {
					note(v, "%v, and there is no %s template file", err, x.langs.Describe("", false))
				} else if err != nil {
					note(v, "%v", err)
				}
			}
			if x.HasLintRules(string(v.Language)) {
				if files == nil {
					files = readAll(ctx, res, v)
				}
				out = append(out, x.LintRules(ctx, v, files)...)
			}
			if v.Schema != "" {
				if b, ok := read(v.Schema); ok {
					s, err := schema.Parse(b, v.Schema)
					if err != nil {
						note(v, "%v", err)
					} else {
						for _, w := range s.Warnings() {
							warn(v, w)
						}
					}
				}
			}
			if v.Example == "" {
				continue
			}
			b, ok := read(v.Example)
			if !ok {
				continue
			}
			lim := yamlLimits{maxBytes: defaultMaxInputBytes, bytesField: "MaxInputBytes", maxAliases: defaultMaxYAMLAliases,
				duplicate: func(line int, key string) { warn(v, pyyaml.DuplicateKeyWarning(v.Example, line, key)) }}
			cfg, err := parseConfig(b, v.Example, lim)
			if err != nil {
				note(v, "%v", err)
				continue
			}
			// An example that its own schema refuses: the template's code
			// and schema disagree, or the example is out of date.
			var sc *schema.Schema
			if v.Schema != "" {
				if b, err := res.ReadFile(ctx, v.Schema); err == nil {
					sc, _ = schema.Parse(b, v.Schema)
				}
			}
			if sc != nil {
				bad := false
				for _, i := range selfResources(ctx, r, def, t, v, cfg) {
					rs := cfg.Resources[i]
					if _, err := sc.Apply(rs.Properties); err != nil {
						note(v, "%s: resources[%d] (%s) violates the template's own schema: %v", v.Example, i, rs.Name, err)
						bad = true
					}
				}
				if bad {
					continue // expanding it fails the same way
				}
			}
			if expandExamples {
				imports, err := ReadVersionImports(cfg, v.Example, func(rel string) ([]byte, error) { return res.ReadFile(ctx, rel) })
				if err != nil {
					note(v, "%v", err)
					continue
				}
				_, err = x.Expand(ctx, Request{Config: b, ConfigName: v.Example, Imports: imports, Deployment: "lint", Registry: def})
				switch {
				case errors.Is(err, errors.ErrUnsupported):
					// A template of an attached language this program
					// does not render: not the example's fault.
					warn(v, fmt.Sprintf("%s was not expanded: %v", v.Example, err))
				case err != nil:
					note(v, "%s does not expand: %v", v.Example, err)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// HasLintRules reports whether lang has lint rules of its own
// (engine.Linter), whether or not this program attached its engine.
func (x *Expander) HasLintRules(lang string) bool {
	if _, ok := x.engines[lang].(engine.Linter); ok {
		return true
	}
	l, _ := x.langs.Lookup(lang)
	return l.Attached
}

// RunsLintRules reports whether this program runs lang's own lint rules:
// its engine is attached and is an engine.Linter.
func (x *Expander) RunsLintRules(lang string) bool {
	_, ok := x.engines[lang].(engine.Linter)
	return ok
}

// LintRules runs the lint rules of version v's language (engine.Linter)
// on its files, as findings at the version's directory naming the file
// and line. A language whose engine this program did not attach gets one
// warning saying its rules were left out.
func (x *Expander) LintRules(ctx context.Context, v *index.Version, files map[string][]byte) []index.Finding {
	at := func(sev index.Severity, msg string) index.Finding {
		return index.Finding{Path: v.Path, Severity: sev, Message: msg}
	}
	l, ok := x.engines[string(v.Language)].(engine.Linter)
	if !ok {
		return []index.Finding{at(index.Warning, fmt.Sprintf("%s's own lint rules were not run: this program does not attach the %s engine (registryd does)", v.Language, v.Language))}
	}
	fs, err := l.Lint(ctx, files, v.Template)
	if errors.Is(err, derrors.Unavailable) {
		// The program that runs them is missing (dm-helm): the chart is
		// not at fault, and dm lint says what it left out.
		return []index.Finding{at(index.Warning, fmt.Sprintf("%s's own lint rules were not run: %v", v.Language, err))}
	}
	if err != nil {
		return []index.Finding{at(index.Error, fmt.Sprintf("%s lint: %v", v.Language, err))}
	}
	out := make([]index.Finding, 0, len(fs))
	for _, f := range fs {
		sev := index.Warning
		if f.Severity == string(index.Error) {
			sev = index.Error
		}
		where := f.File
		if f.Line > 0 {
			where = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		msg := f.Message
		if where != "" {
			msg = where + ": " + msg
		}
		out = append(out, at(sev, msg))
	}
	return out
}

// readAll reads every file of a version that can be read, for templates
// that import each other.
func readAll(ctx context.Context, res *resolve.Resolution, v *index.Version) map[string][]byte {
	files := make(map[string][]byte, len(v.Files))
	for _, e := range v.Files {
		if b, err := res.ReadFile(ctx, e.Path); err == nil {
			files[e.Path] = b
		}
	}
	return files
}

// selfResources returns the indexes of the resources of an example that instantiate the
// version's own template: through an import of its template file, or by
// a registry reference that resolves to the template (any version: an
// example names its template by a floating version).
func selfResources(ctx context.Context, r *resolve.Resolver, def resolve.Registry, t *index.Template, v *index.Version, cfg *Config) []int {
	self := map[string]bool{}
	for _, imp := range cfg.Imports {
		if path.Join(path.Dir(v.Example), imp.Path) == v.Template {
			self[imp.Path] = true
			if imp.Name != "" {
				self[imp.Name] = true
			}
		}
	}
	var out []int
	for i, rs := range cfg.Resources {
		if self[rs.Type] {
			out = append(out, i)
			continue
		}
		if res, err := r.ResolveIn(ctx, rs.Type, def); err == nil && res.Template == t {
			out = append(out, i)
		}
	}
	return out
}
