package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/resolve"
)

// printer writes answers in the format of -o.
type printer struct {
	w io.Writer
	g *globals
}

// structured prints v as JSON or YAML when -o asks for it, and reports
// whether it did.
func (p *printer) structured(v any) (bool, error) {
	switch p.g.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = p.w.Write(b)
		return true, err
	}
	return false, nil
}

// table prints rows under a header, aligned.
func (p *printer) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return "sha256:" + d
}

func cmdRegistries(ctx context.Context, g *globals, p *printer) error {
	b, err := g.backend()
	if err != nil {
		return err
	}
	list, err := b.Registries(ctx)
	if err != nil {
		return err
	}
	if ok, err := p.structured(list); ok {
		return err
	}
	var rows [][]string
	for _, r := range list.Registries {
		name := r.Name
		if r.Default {
			name += " (default)"
		}
		rows = append(rows, []string{name, r.Kind, r.Status, strconv.Itoa(r.Templates), strconv.Itoa(r.Versions),
			fmt.Sprintf("%d (%d errors)", r.FindingCount, r.ErrorCount), r.Location})
	}
	return p.table([]string{"REGISTRY", "KIND", "STATUS", "TEMPLATES", "VERSIONS", "FINDINGS", "LOCATION"}, rows)
}

func cmdTemplates(ctx context.Context, g *globals, p *printer, pattern string) error {
	b, err := g.backend()
	if err != nil {
		return err
	}
	list, err := b.Templates(ctx, api.TemplateQuery{Registry: g.registry, Q: pattern})
	if err != nil {
		return err
	}
	if ok, err := p.structured(list); ok {
		return err
	}
	var rows [][]string
	for _, t := range list.Templates {
		var vs []string
		for _, v := range t.Versions {
			vs = append(vs, v.Version)
		}
		rows = append(rows, []string{api.Qualified(t.Collection, t.Name), orDash(t.Latest), strings.Join(vs, ", "), t.Registry})
	}
	return p.table([]string{"TEMPLATE", "LATEST", "VERSIONS", "REGISTRY"}, rows)
}

func cmdVersions(ctx context.Context, g *globals, p *printer, ref string) error {
	b, err := g.backend()
	if err != nil {
		return err
	}
	t, err := b.Versions(ctx, ref, g.registry)
	if err != nil {
		return err
	}
	if ok, err := p.structured(t); ok {
		return err
	}
	var rows [][]string
	for _, v := range t.Versions {
		note := ""
		switch {
		case v.Problem != "":
			note = "unusable: " + v.Problem
		case v.Prerelease:
			note = "pre-release"
		case v.Version == t.Latest:
			note = "latest"
		}
		rows = append(rows, []string{v.Version, v.Name, orDash(v.Language), shortDigest(v.Digest), note})
	}
	return p.table([]string{"VERSION", "DIRECTORY", "LANGUAGE", "DIGEST", "NOTE"}, rows)
}

func cmdResolve(ctx context.Context, g *globals, p *printer, ref string) error {
	b, err := g.backend()
	if err != nil {
		return err
	}
	res, err := b.Resolve(ctx, ref, g.registry)
	if err != nil {
		return err
	}
	if res.Note != "" {
		fmt.Fprintln(g.stderr, "dm:", res.Note)
	}
	if res.Signer != "" {
		fmt.Fprintln(g.stderr, "dm: signed by", res.Signer)
	}
	if ok, err := p.structured(res); ok {
		return err
	}
	_, err = fmt.Fprintln(p.w, res.Resolved)
	return err
}

func cmdDescribe(ctx context.Context, g *globals, p *printer, ref string) error {
	b, err := g.backend()
	if err != nil {
		return err
	}
	tv, err := b.Template(ctx, ref, g.registry)
	if err != nil {
		return err
	}
	if ok, err := p.structured(tv); ok {
		return err
	}
	return describe(p.w, tv)
}

// describe prints a template version for people.
func describe(w io.Writer, tv *api.TemplateVersion) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	field("Reference", tv.Resolved)
	field("Title", tv.Title)
	field("Language", tv.Language)
	field("Template", tv.TemplateFile)
	field("Schema", tv.Schema)
	field("Digest", tv.Digest)
	field("Note", tv.Note)
	if err := tw.Flush(); err != nil {
		return err
	}
	if tv.Description != "" {
		fmt.Fprintf(w, "Description:\n%s\n", indent(tv.Description, "  "))
	}
	if tv.SchemaError != "" {
		fmt.Fprintf(w, "Schema error: %s\n", tv.SchemaError)
	}
	if len(tv.Properties) > 0 {
		fmt.Fprintln(w, "\nProperties:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tTYPE\tDEFAULT\tREQUIRED\tDESCRIPTION")
		for _, pr := range tv.Properties {
			req := "no"
			if pr.Required {
				req = "yes"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", pr.Name, orDash(pr.Type), formatDefault(pr.Default), req, strings.ReplaceAll(pr.Description, "\n", " "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nFiles:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range tv.Files {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", f.Path, f.Size, f.SHA)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(tv.Findings) > 0 {
		fmt.Fprintln(w, "\nFindings:")
		for _, f := range tv.Findings {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if tv.Example != "" {
		fmt.Fprintf(w, "\nExample (%s):\n%s\n", tv.Example, indent(strings.TrimRight(tv.ExampleContent, "\n"), "  "))
	}
	return nil
}

// formatDefault shows a schema default compactly, as JSON.
func formatDefault(v any) string {
	if v == nil {
		return "-"
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return `""`
		}
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

func cmdSearch(ctx context.Context, g *globals, p *printer, words []string) error {
	b, err := g.backend()
	if err != nil {
		return err
	}
	res, err := b.Search(ctx, strings.Join(words, " "), g.registry)
	if err != nil {
		return err
	}
	if ok, err := p.structured(res); ok {
		return err
	}
	var rows [][]string
	for _, r := range res.Results {
		rows = append(rows, []string{api.Qualified(r.Collection, r.Template), orDash(r.Latest), orDash(r.Title), r.Match, r.Registry})
	}
	return p.table([]string{"TEMPLATE", "LATEST", "TITLE", "MATCH", "REGISTRY"}, rows)
}

// lintResult is dm lint's structured output.
type lintResult struct {
	Dir      string        `json:"dir"`
	Errors   int           `json:"errors"`
	Warnings int           `json:"warnings"`
	Findings []api.Finding `json:"findings"`
}

// lintFailed reports error findings; the findings were printed already.
type lintFailed struct{ errors int }

func (e *lintFailed) Error() string { return fmt.Sprintf("%d error findings", e.errors) }

// lintFlags are dm lint's flags.
type lintFlags struct {
	prefix string
	expand bool
}

func cmdLint(ctx context.Context, g *globals, p *printer, dir string, f *lintFlags) error {
	if _, err := resolve.ParseRegistry(f.prefix); err != nil {
		return &usageError{fmt.Errorf("--prefix: %w", err)}
	}
	rep, err := expand.LintDir(ctx, dir, f.prefix, f.expand, g.engines()...)
	if err != nil {
		return err
	}
	res := lintResult{Dir: dir, Errors: rep.Errors, Warnings: rep.Warnings, Findings: api.Findings(rep.Findings)}
	if ok, err := p.structured(res); ok {
		if err != nil {
			return err
		}
	} else {
		for _, f := range res.Findings {
			fmt.Fprintln(p.w, f)
		}
		fmt.Fprintf(g.stderr, "dm lint: %s: %s, %s, %s, %s\n", dir, count(rep.Templates, "template"), count(rep.Versions, "version"), count(res.Errors, "error"), count(res.Warnings, "warning"))
	}
	if res.Errors > 0 {
		return &lintFailed{res.Errors}
	}
	return nil
}

// count counts n things: "1 version", "2 versions".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
