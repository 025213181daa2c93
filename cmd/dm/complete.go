package main

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/index"
)

// completeRef completes a template reference: names (collection/name as
// short references of the default registry resolve them, full references
// for the others) and, after the ':', the versions and the short forms
// that resolve (v1, v1.2, v1.2.3). It asks the backend dm would use, so
// completion works in-process and with --server.
func completeRef(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		b, err := g.backend()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		if name, _, ok := strings.Cut(toComplete, ":"); ok {
			t, err := b.Versions(ctx, name, g.registry)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, v := range versionForms(t.Versions) {
				if c := name + ":" + v; strings.HasPrefix(c, toComplete) {
					out = append(out, c)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
		}
		list, err := b.Templates(ctx, api.TemplateQuery{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		def := ""
		if regs, err := b.Registries(ctx); err == nil {
			for _, r := range regs.Registries {
				if r.Default {
					def = r.Name
				}
			}
		}
		var out []cobra.Completion
		for _, t := range list.Templates {
			c := t.Ref
			if t.Registry == def {
				c = api.Qualified(t.Collection, t.Name)
			}
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		slices.Sort(out)
		// No space: a ':' and a version usually follow.
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// versionForms lists what a user may write after the ':' for versions:
// vMAJOR where it resolves (it means vMAJOR.0, so only where a stable
// MAJOR.0 exists), then vMAJOR.MINOR, once each, highest first (stable
// versions only: they never pick a pre-release), then every version as
// written.
func versionForms(vs []api.VersionInfo) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, minorForms := range []bool{false, true} {
		for i := len(vs) - 1; i >= 0; i-- { // highest first
			n, ok := index.ParseSemver(vs[i].Version)
			if vs[i].Prerelease || !ok {
				continue
			}
			major := "v" + strconv.FormatInt(n.Major, 10)
			switch {
			case minorForms:
				add(major + "." + strconv.FormatInt(n.Minor, 10))
			case n.Minor == 0:
				add(major)
			}
		}
	}
	for i := len(vs) - 1; i >= 0; i-- {
		add(vs[i].Version)
	}
	return out
}

// completeOutput completes -o.
func completeOutput(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out := []cobra.Completion{"table", "json", "yaml"}
	switch cmd.Name() {
	case "expand":
		out = append(out, "manifest", "list")
	case "impact":
		out = []cobra.Completion{"text", "json", "markdown"}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
