package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/rollout/policyctl"
)

// newRolloutCommand is dm rollout: the roll-out policies' state for
// people, and pause, resume and abort.
func newRolloutCommand(g *globals, p *printer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer the roll-out of a template's patches in waves (TemplateRolloutPolicy, or a namespace's RolloutPolicy with -n)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help()
			return &usageError{fmt.Errorf("no rollout command given: want status, pause, resume or abort")}
		},
	}
	// ref names the policy: -n given on the command line names a
	// namespace's RolloutPolicy, else the cluster's TemplateRolloutPolicy.
	ref := func(cmd *cobra.Command, name string) policyctl.Ref {
		r := policyctl.Ref{Name: name}
		if f := cmd.Flag("namespace"); f != nil && f.Changed {
			r.Namespace = g.kube.namespace
		}
		return r
	}
	sub := func(use, short string, run func(ctx context.Context, r policyctl.Ref) error) *cobra.Command {
		return &cobra.Command{Use: use + " POLICY", Short: short, Args: exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return run(cmd.Context(), ref(cmd, args[0])) }}
	}
	cmd.AddCommand(
		sub("status", "Show the patch rolling out, each wave's state and instances, and the failed patches", func(ctx context.Context, r policyctl.Ref) error {
			k, err := g.kubeClient(ctx)
			if err != nil {
				return err
			}
			pol, err := policyctl.Get(ctx, k.Dynamic(), r)
			if err != nil {
				return err
			}
			return p.rollout(pol)
		}),
		sub("pause", "Stop promotion: the wave under way keeps the patch, no further wave goes", func(ctx context.Context, r policyctl.Ref) error {
			return setPaused(ctx, g, p, r, true)
		}),
		sub("resume", "Resume promotion", func(ctx context.Context, r policyctl.Ref) error {
			return setPaused(ctx, g, p, r, false)
		}),
		sub("abort", "Abort the roll-out: every moved instance goes back to the patch before, and the patch is failed for the policy", func(ctx context.Context, r policyctl.Ref) error {
			k, err := g.kubeClient(ctx)
			if err != nil {
				return err
			}
			pol, moved, err := policyctl.Abort(ctx, k.Dynamic(), r)
			if err != nil {
				return err
			}
			if ok, err := p.structured(map[string]any{"policy": r.String(), "version": pol.Status.Version, "previous": pol.Status.Previous, "movedBack": moved}); ok {
				return err
			}
			_, err = fmt.Fprintf(p.w, "%s: %s aborted; %d instances go back to %s\n", r, pol.Status.Version, len(moved), pol.Status.Previous)
			return err
		}),
	)
	return cmd
}

func setPaused(ctx context.Context, g *globals, p *printer, r policyctl.Ref, paused bool) error {
	k, err := g.kubeClient(ctx)
	if err != nil {
		return err
	}
	if err := policyctl.SetPaused(ctx, k.Dynamic(), r, paused); err != nil {
		return err
	}
	what := "resumed"
	if paused {
		what = "paused"
	}
	_, err = fmt.Fprintf(p.w, "%s %s\n", r, what)
	return err
}

// rolloutJSON is dm rollout status -o json.
type rolloutJSON struct {
	Policy         string                `json:"policy"`
	Template       string                `json:"template"`
	Paused         bool                  `json:"paused"`
	Version        string                `json:"version"`
	Previous       string                `json:"previous,omitempty"`
	FailedVersions []string              `json:"failedVersions,omitempty"`
	Waves          []v1alpha1.WaveStatus `json:"waves"`
	Ready          string                `json:"ready,omitempty"`
	Message        string                `json:"message,omitempty"`
}

// rollout prints a policy's roll-out: a header, then one row per wave.
func (p *printer) rollout(pol *policyctl.Policy) error {
	st := &pol.Status
	out := rolloutJSON{Policy: pol.Ref.String(), Template: pol.Spec.Template, Paused: pol.Spec.Paused, Version: st.Version,
		Previous: st.Previous, FailedVersions: st.FailedVersions, Waves: st.Waves}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		out.Ready, out.Message = string(c.Status), c.Message
	}
	if ok, err := p.structured(out); ok {
		return err
	}
	w := p.w
	fmt.Fprintf(w, "Policy:    %s\nTemplate:  %s\n", out.Policy, out.Template)
	switch {
	case st.Version == "":
		fmt.Fprintf(w, "Version:   none yet (the controller has not read the registry)\n")
	case st.Previous == "":
		fmt.Fprintf(w, "Version:   %s (every instance; the next patch rolls out in waves)\n", st.Version)
	default:
		fmt.Fprintf(w, "Version:   %s (from %s)\n", st.Version, st.Previous)
	}
	if pol.Spec.Paused {
		fmt.Fprintf(w, "Paused:    yes (dm rollout resume %s)\n", pol.Ref.Name)
	}
	if len(st.FailedVersions) > 0 {
		fmt.Fprintf(w, "Failed:    %s\n", strings.Join(st.FailedVersions, ", "))
	}
	if out.Message != "" {
		fmt.Fprintf(w, "Status:    %s\n", out.Message)
	}
	if len(st.Waves) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	rows := make([][]string, 0, len(st.Waves))
	for _, wv := range st.Waves {
		started := "-"
		if wv.StartedAt != nil {
			started = wv.StartedAt.Time.UTC().Format(time.RFC3339)
		}
		rows = append(rows, []string{wv.Name, string(wv.State), fmt.Sprint(len(wv.Instances)), started, orDash(strings.Join(wv.Instances, " "))})
	}
	if err := p.table([]string{"WAVE", "STATE", "INSTANCES", "STARTED", "NAMES"}, rows); err != nil {
		return err
	}
	for _, wv := range st.Waves {
		if wv.Message != "" {
			fmt.Fprintf(w, "\n%s: %s\n", wv.Name, wv.Message)
		}
	}
	return nil
}
