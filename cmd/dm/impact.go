package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/impact"
)

// impactFlags are dm impact's own flags.
type impactFlags struct {
	all            bool
	failOnChange   []string
	defaultAccount string
	concurrency    int
}

// newImpactCommand is dm impact.
func newImpactCommand(g *globals, p *printer) *cobra.Command {
	var f impactFlags
	cmd := &cobra.Command{
		Use:   "impact REF",
		Short: "Show what a template version (published or not) would change in every instance that would take it; exit 1 if one fails or --fail-on-change matches",
		Long: `dm impact lists the TemplateInstances, and the instances of every TemplateDefinition's kind,
whose reference would resolve to REF once it is published (updatePolicy Patch, no digest pin,
REF newer than what they run), expands REF for each (once per distinct properties) and
server-side dry-runs it as dm-controller applies, impersonating the instance's account. It
prints the objects each would create, update (with the changed fields) and delete, and the
roll-out wave each is in.

REF is read through the registry flags: --registry-dir PREFIX=DIR previews a version directory
before it is published. -o text (default), json or markdown (a pull-request comment).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImpact(cmd, g, p, &f, args[0])
		},
	}
	fs := cmd.Flags()
	addAllNamespacesFlag(cmd, &f.all, "look at the instances of every namespace (default: -n's, else the context's)")
	fs.StringArrayVar(&f.failOnChange, "fail-on-change", nil, "exit 1 when a change matches `KIND[:FIELD]` (repeatable): KIND a kind or *; FIELD a field path (spec.selector: it or a field below), create or delete; delete alone is *:delete")
	fs.StringVar(&f.defaultAccount, "default-service-account", "", "`account` that instances without spec.serviceAccountName apply as (dm-controller's --default-service-account)")
	fs.IntVar(&f.concurrency, "concurrency", impact.DefaultConcurrency, "instances dry-run at once")
	return cmd
}

func runImpact(cmd *cobra.Command, g *globals, p *printer, f *impactFlags, ref string) error {
	ctx := cmd.Context()
	format := g.output
	switch format {
	case "table":
		format = "text"
	case "text", "json", "markdown":
	default:
		return &usageError{fmt.Errorf("-o %q: dm impact prints text, json or markdown", g.output)}
	}
	if f.all && cmd.Flags().Changed("namespace") {
		return &usageError{errors.New("-A and -n: give one")}
	}
	if f.concurrency < 1 {
		return &usageError{fmt.Errorf("--concurrency=%d: want at least 1", f.concurrency)}
	}
	var rules []impact.Rule
	for _, s := range f.failOnChange {
		r, err := impact.ParseRule(s)
		if err != nil {
			return &usageError{err}
		}
		rules = append(rules, r)
	}
	b, err := g.backend()
	if err != nil {
		return err
	}
	res, err := b.Resolve(ctx, ref, g.registry)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", ref, err)
	}
	cl, err := g.kubeClient(ctx)
	if err != nil {
		return err
	}
	prog := newProgress(g.stderr)
	var mu sync.Mutex
	rep, err := impact.Run(ctx, impact.Options{
		Target:                impact.Target{Resolved: res.Resolved, Digest: res.Digest},
		Expander:              impactExpander(g),
		Cluster:               cl,
		Namespace:             g.kube.namespace,
		AllNamespaces:         f.all,
		DefaultRegistry:       g.defaultRegistry(),
		DefaultServiceAccount: f.defaultAccount,
		Concurrency:           f.concurrency,
		Progress: func(done, total int) {
			// Called from the previews' goroutines.
			mu.Lock()
			defer mu.Unlock()
			prog.status("%d/%d instances previewed", done, total)
		},
		Log: g.stderr,
	})
	mu.Lock()
	prog.done()
	mu.Unlock()
	if err != nil {
		return err
	}
	matches := rep.Matches(rules)
	switch format {
	case "json":
		err = writeImpactJSON(p.w, rep)
	case "markdown":
		err = writeImpactMarkdown(p.w, rep, matches, maxMarkdownInstances)
	default:
		err = writeImpactText(p.w, rep, matches)
	}
	if err != nil {
		return err
	}
	if g.verbose {
		fmt.Fprintf(g.stderr, "dm: %d instances, %d expansions; listed in %s, previewed in %s\n", len(rep.Instances), rep.Expansions,
			rep.Listing.Round(time.Millisecond), rep.Previewing.Round(time.Millisecond))
	}
	if rep.Failed() > 0 || len(matches) > 0 {
		return &silentExit{1}
	}
	return nil
}

// defaultRegistry is the registry short references resolve against: the
// --registry flag, else the in-process backend's default (the only
// --registry-dir, or the example registry).
func (g *globals) defaultRegistry() string {
	if g.registry != "" {
		return g.registry
	}
	if lb, ok := g.be.(*localBackend); ok && !lb.def.IsZero() {
		return lb.def.String()
	}
	return ""
}

// impactExpander expands as dm deploy does: charts see the cluster
// through dm-helm with the same kubeconfig.
func impactExpander(g *globals) deploy.ExpandFunc {
	g.engines()
	g.helm.Cluster = &helmproxy.Cluster{Kubeconfig: g.kube.kubeconfig, Context: g.kube.context}
	return g.expandSource
}

// writeImpactJSON writes -o json: the report as is.
func writeImpactJSON(w io.Writer, rep *impact.Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeImpactText writes a table per instance with its changes.
func writeImpactText(w io.Writer, rep *impact.Report, matches []impact.Match) error {
	fmt.Fprintf(w, "%s: %s\n", rep.Version, summary(rep))
	for _, in := range rep.Instances {
		fmt.Fprintf(w, "\n%s %s/%s  %s -> %s", in.Kind, in.Namespace, in.Name, orDash(versionOf(in.From)), versionOf(in.To))
		if in.Wave != "" {
			fmt.Fprintf(w, "  wave %s", in.Wave)
		}
		fmt.Fprintln(w)
		if in.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", in.Error)
			continue
		}
		if len(in.Changes) == 0 {
			fmt.Fprintln(w, "  no change")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ACTION\tOBJECT\tFIELDS")
		for _, c := range in.Changes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Action, changeName(c), orDash(strings.Join(c.Fields, ", ")))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(matches) > 0 {
		fmt.Fprintf(w, "\n--fail-on-change matched %d changes:\n", len(matches))
		for _, m := range matches {
			fmt.Fprintf(w, "  %s: %s %s/%s: %s %s\n", m.Rule, m.Instance.Kind, m.Instance.Namespace, m.Instance.Name, m.Change.Action, changeName(*m.Change))
		}
	}
	return nil
}

// maxMarkdownInstances bounds the rows of -o markdown: a pull-request
// comment holds 65,536 characters.
const maxMarkdownInstances = 50

// maxMarkdownFields bounds the fields a row names.
const maxMarkdownFields = 5

// writeImpactMarkdown writes a summary a pull-request comment can hold:
// counts, then a table of at most max instances, failed ones first, the
// rest counted.
func writeImpactMarkdown(w io.Writer, rep *impact.Report, matches []impact.Match, max int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### dm impact: `%s`\n\n", rep.Version)
	fmt.Fprintf(&b, "%s.\n", capitalized(summary(rep)))
	if len(matches) > 0 {
		fmt.Fprintf(&b, "\n**--fail-on-change matched %d changes** (%s).\n", len(matches), matchedRules(matches))
	}
	if len(rep.Instances) == 0 {
		_, err := io.WriteString(w, b.String())
		return err
	}
	rows := make([]impact.Instance, 0, len(rep.Instances))
	for _, in := range rep.Instances {
		if in.Error != "" {
			rows = append(rows, in)
		}
	}
	for _, in := range rep.Instances {
		if in.Error == "" {
			rows = append(rows, in)
		}
	}
	b.WriteString("\n| instance | from | wave | result |\n|---|---|---|---|\n")
	for i, in := range rows {
		if i == max {
			fmt.Fprintf(&b, "\nand %d more.\n", len(rows)-max)
			break
		}
		fmt.Fprintf(&b, "| %s `%s/%s` | %s | %s | %s |\n", in.Kind, in.Namespace, in.Name, mdCell(orDash(versionOf(in.From))), mdCell(orDash(in.Wave)), mdCell(impactResult(in)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// impactResult is an instance's outcome in a cell: its error, or its changes.
func impactResult(in impact.Instance) string {
	if in.Error != "" {
		return "❌ " + truncateText(in.Error, 300)
	}
	if len(in.Changes) == 0 {
		return "no change"
	}
	parts := make([]string, 0, len(in.Changes))
	for _, c := range in.Changes {
		s := c.Action + " " + changeName(c)
		if len(c.Fields) > 0 {
			fields := c.Fields
			more := ""
			if len(fields) > maxMarkdownFields {
				fields, more = fields[:maxMarkdownFields], fmt.Sprintf(", and %d more", len(c.Fields)-maxMarkdownFields)
			}
			s += " (" + strings.Join(fields, ", ") + more + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// summary counts instances, failures and changes.
func summary(rep *impact.Report) string {
	var create, update, del, unchanged int
	for _, in := range rep.Instances {
		if in.Error == "" && len(in.Changes) == 0 {
			unchanged++
		}
		for _, c := range in.Changes {
			switch c.Action {
			case "create":
				create++
			case "update":
				update++
			case "delete":
				del++
			}
		}
	}
	return fmt.Sprintf("%d instances would take it, %d failed, %d unchanged; objects: %d created, %d updated, %d deleted",
		len(rep.Instances), rep.Failed(), unchanged, create, update, del)
}

// matchedRules names the rules that matched, each once.
func matchedRules(ms []impact.Match) string {
	var seen []string
	for _, m := range ms {
		if r := "`" + m.Rule + "`"; !slices.Contains(seen, r) {
			seen = append(seen, r)
		}
	}
	return strings.Join(seen, ", ")
}

func changeName(c impact.Change) string {
	name := c.Kind + " "
	if c.Namespace != "" {
		name += c.Namespace + "/"
	}
	return name + c.Name
}

// versionOf is the version of a canonical reference, "" for none.
func versionOf(ref string) string {
	if i := strings.LastIndexByte(ref, ':'); i >= 0 {
		return ref[i+1:]
	}
	return ref
}

// mdCell escapes a table cell's pipes and line breaks.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", "").Replace(s)
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
