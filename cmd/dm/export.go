package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/deploy/kube"
)

// exportFlags are dm export's flags.
type exportFlags struct {
	selector string
	kinds    []string
	params   []string
	name     string
}

func newExportCmd(g *globals, stdout io.Writer) *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export [-n NS] [-l SELECTOR] [--kinds K,...] [--param NAME=JSONPATH ...]",
		Short: "Export live objects of a namespace as an OpenShift-style Template that dm process turns back into them",
		Long: `Export reads the live objects of a namespace (every listable kind, or --kinds, matching
-l) and prints them as a kind: Template, with what the server set stripped: status, uid,
resourceVersion, managedFields, creationTimestamp, generation, the namespace, owner
references, generated names, Service cluster IPs, kubectl's last-applied annotation.
Objects a controller generated, events, and what every namespace gets by itself (the
default ServiceAccount, its token Secrets, kube-root-ca.crt) are left out.
--param NAME=JSONPATH lifts the value at that path of every object that has it into
parameter NAME, leaving ${NAME} (or ${{NAME}} for a non-string) in its place.
YAML unless -o json.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := g.output
			if !cmd.Flags().Changed("output") {
				out = "yaml"
			}
			return cmdExport(cmd.Context(), g, &f, out, stdout)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.selector, "selector", "l", "", "label `selector` the objects must match")
	fl.StringSliceVar(&f.kinds, "kinds", nil, "resource `kinds` to export, kubectl-style (configmaps,deploy,Service.v1; default every listable namespaced kind)")
	fl.StringArrayVar(&f.params, "param", nil, "`NAME=JSONPATH`: lift the value at JSONPATH into parameter NAME (repeatable)")
	fl.StringVar(&f.name, "name", "", "template `name` (default: the namespace)")
	return cmd
}

// cmdExport prints the live objects as a Template.
func cmdExport(ctx context.Context, g *globals, f *exportFlags, output string, w io.Writer) error {
	if output != "yaml" && output != "json" {
		return &usageError{fmt.Errorf("dm export: -o %s: want yaml or json", output)}
	}
	var params []kube.ExportParam
	for _, s := range f.params {
		p, err := kube.ParseExportParam(s)
		if err != nil {
			return &usageError{err}
		}
		params = append(params, p)
	}
	c, err := g.kubeClient(ctx)
	if err != nil {
		return err
	}
	var kinds []string
	for _, k := range f.kinds {
		if k = strings.TrimSpace(k); k != "" {
			kinds = append(kinds, k)
		}
	}
	objs, err := c.List(ctx, c.Namespace(), f.selector, kinds)
	if err != nil {
		return err
	}
	name := f.name
	if name == "" {
		name = c.Namespace()
	}
	t, err := kube.Export(name, objs, params)
	if err != nil {
		return err
	}
	return printJSONOrYAML(w, t, output)
}
