package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/octemplate"
	"github.com/dmhq/dm/internal/expand/openshift"
)

// newInstallCmd is dm install: definitions dm can put into a cluster.
func newInstallCmd(g *globals, stdout io.Writer) *cobra.Command {
	install := &cobra.Command{
		Use:   "install WHAT",
		Short: "Install a definition into the cluster (openshift-template-crd)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &usageError{fmt.Errorf("dm install needs what to install: openshift-template-crd")}
		},
	}
	install.AddCommand(&cobra.Command{
		Use:   "openshift-template-crd",
		Short: "Install the CustomResourceDefinition of OpenShift's template.openshift.io/v1 Template",
		Long: `Apply the CustomResourceDefinition of template.openshift.io/v1 Template (namespaced,
OpenShift's schema) with server-side apply and wait until the cluster serves it. Running
it again changes nothing. Templates kept in the cluster are then processed with
dm process NAMESPACE/NAME and deployed with dm deploy template:NAMESPACE/NAME.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.kubeClient(cmd.Context())
			if err != nil {
				return err
			}
			res, err := octemplate.InstallCRD(cmd.Context(), c, kube.ApplyOptions{})
			if err != nil {
				return err
			}
			verb := "unchanged"
			if res.Created {
				verb = "created"
			}
			_, err = fmt.Fprintf(stdout, "%s %s (established)\n", res.Ref, verb)
			return err
		},
	})
	return install
}

// clusterTemplateRE matches NAMESPACE/NAME as dm process takes a Template
// kept in the cluster: DNS labels, no version. A registry's collection
// template (apps/shop) is named with its version or the template: form
// is used.
var clusterTemplateRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`)

// isClusterTemplate reports whether a dm process argument names a
// Template in the cluster: template:NAMESPACE/NAME, or NAMESPACE/NAME.
func isClusterTemplate(arg string) bool {
	return strings.HasPrefix(arg, octemplate.Prefix) || clusterTemplateRE.MatchString(arg)
}

// readClusterTemplate reads a Template from the cluster with the user's
// credentials.
func (g *globals) readClusterTemplate(ctx context.Context, arg string) (*openshift.Template, []byte, octemplate.Ref, error) {
	r, err := octemplate.ParseRef(arg)
	if err != nil {
		return nil, nil, r, &usageError{err}
	}
	c, err := g.kubeClient(ctx)
	if err != nil {
		return nil, nil, r, err
	}
	t, data, err := octemplate.Get(ctx, c, r)
	return t, data, r, err
}

// templateSource fills req with a Template read from the cluster, given as
// a configuration document (as a kind: Template file is), and returns the
// properties as its parameters: text, as --properties gave them. With ask,
// required parameters without a value are asked for.
func (g *globals) templateSource(ctx context.Context, req *api.ExpandRequest, arg string, props map[string]any, text map[string]string, ask bool, stdin io.Reader) (map[string]any, error) {
	t, data, r, err := g.readClusterTemplate(ctx, arg)
	if err != nil {
		return nil, err
	}
	req.Config, req.ConfigName = string(data), r.Name+".yaml"
	if props == nil {
		props = map[string]any{}
	}
	for k, v := range text {
		if !strings.Contains(k, ".") { // parameter names have no dots
			props[k] = v
		}
	}
	if !ask {
		return props, nil
	}
	err = g.ask(t.Missing(openshift.TextValues(props)), "parameter", "--properties NAME=VALUE or --values FILE", stdin, func(name string, v any) { props[name] = v })
	return props, err
}
