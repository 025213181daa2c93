package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/helmimport"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
)

// newImportCommand is dm import: adopting what another tool deployed.
func newImportCommand(g *globals, p *printer) *cobra.Command {
	importCmd := &cobra.Command{
		Use:   "import",
		Short: "Adopt a release another tool deployed as a dm deployment",
		Args:  noArgs,
	}
	var deleteRecord bool
	var dryRun string
	var lf lockFlags
	helmCmd := &cobra.Command{
		Use:   "helm RELEASE",
		Short: "Adopt a Helm 3 release (its newest deployed revision) as revision 1 of deployment RELEASE, without touching its workloads",
		Long: `Read the Helm 3 release's newest record (the Secrets sh.helm.release.v1.RELEASE.vN of the
namespace), and apply its manifest's objects server-side with dm as field manager, taking
over the fields Helm owned; the objects keep their uid and generation. Revision 1 of
deployment RELEASE records the chart (name and version) and the values Helm installed it
with. Helm's records stay unless --delete-helm-record. Hooks are not imported.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch dryRun {
			case "", "client", "server":
			default:
				return &usageError{fmt.Errorf("--dry-run=%q: want client or server", dryRun)}
			}
			if err := lf.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := g.deployConfig(ctx)
			if err != nil {
				return err
			}
			lf.config(c)
			kc, ok := c.Cluster.(*kube.Client)
			if !ok {
				return fmt.Errorf("dm import helm needs a cluster client")
			}
			ns := kc.Namespace()
			rel, err := helmimport.Read(ctx, kc.Dynamic(), ns, args[0])
			if err != nil {
				return err
			}
			if rel.NoChartFiles != "" {
				fmt.Fprintf(g.stderr, "dm: %s; dm update %s will need a template or configuration\n", rel.NoChartFiles, args[0])
			}
			if rel.Hooks > 0 {
				fmt.Fprintf(g.stderr, "dm: %s has %d Helm hooks; they are not imported\n", args[0], rel.Hooks)
			}
			from := fmt.Sprintf("helm release %s revision %d", rel.Name, rel.Revision)
			res, err := c.Import(ctx, deploy.ImportOptions{
				Name:    rel.Name,
				Objects: rel.Objects,
				Input: release.Input{Chart: &release.Chart{
					Name: rel.Chart, Version: rel.ChartVersion, AppVersion: rel.AppVersion, From: from, Files: rel.ChartFiles,
				}},
				Properties:  rel.Values,
				Type:        "helm:" + rel.Chart + "@" + rel.ChartVersion,
				Description: "Imported from " + from,
				DryRun:      dryRun,
				TakeOver:    []string{helmimport.FieldManager},
				WaitForLock: lf.lockWait(),
			})
			if err == nil && dryRun == "" && deleteRecord {
				if err = helmimport.DeleteRecords(ctx, kc.Dynamic(), ns, rel.Records); err == nil {
					fmt.Fprintf(g.stderr, "dm: deleted %d Helm records of %s\n", len(rel.Records), rel.Name)
				}
			}
			return p.applied(c, res, dryRun, err)
		},
	}
	helmCmd.Flags().BoolVar(&deleteRecord, "delete-helm-record", false, "delete Helm's records of the release (its sh.helm.release.v1 Secrets) once imported")
	helmCmd.Flags().StringVar(&dryRun, "dry-run", "", "`client`: print the objects; server: validate them with server-side dry-run applies; neither records anything")
	helmCmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	addLockFlags(helmCmd.Flags(), &lf)
	importCmd.AddCommand(helmCmd)
	return importCmd
}
