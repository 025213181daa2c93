package deploy

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
)

// The actions below read only the history: driver.Memory stands in for
// the Secrets, and no cluster is needed.

func record(ns, name string, rev int, status release.Status, layout ...*expand.LayoutResource) *release.Record {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &release.Record{
		Name: name, Namespace: ns, Revision: rev, Status: status, Created: now, Updated: now,
		Layout: expand.Layout{Resources: layout},
		References: []expand.Reference{
			{Ref: "apps/guestbook:v1.1", Resolved: "github.com/acme/templates/apps/guestbook:v1.1.0", Version: "v1.1.0"},
			{Ref: "redis:v1.1", Resolved: "github.com/acme/templates/redis:v1.1.0", Version: "v1.1.0"},
		},
	}
}

func guestbookLayout(name string) *expand.LayoutResource {
	return &expand.LayoutResource{Name: name, Type: "apps/guestbook:v1.1", Resources: []*expand.LayoutResource{
		{Name: name + "-redis", Type: "redis:v1.1", Resources: []*expand.LayoutResource{{Name: "svc", Type: "Service"}}},
		{Name: "cm", Type: "ConfigMap"},
	}}
}

func memConfig(t *testing.T, recs ...*release.Record) (*Config, *driver.Memory, *bytes.Buffer) {
	t.Helper()
	m := driver.NewMemory()
	for _, r := range recs {
		if err := m.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	return &Config{History: m, Namespace: "ns", Log: &log}, m, &log
}

func TestPendingMarkedInterrupted(t *testing.T) {
	c, m, log := memConfig(t, record("ns", "app", 1, release.StatusDeployed), record("ns", "app", 2, release.StatusPending))
	ctx := context.Background()
	// Reading does not change anything.
	hist, err := c.history(ctx, "ns", "app")
	if err != nil || hist[1].Status != release.StatusPending {
		t.Fatalf("read-only history: %v, %v", hist, err)
	}
	// The next action marks the pending revision, which has no lease (an
	// older dm's), failed at once, and goes on.
	start := time.Now()
	if hist, err = c.lockHistory(ctx, "ns", "app", lock{until: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("a pending revision without a lease was waited for (%s)", waited)
	}
	r, err := m.Get(ctx, "ns", "app", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != release.StatusFailed || !strings.Contains(r.Description, "interrupted") {
		t.Errorf("revision 2: %s %q", r.Status, r.Description)
	}
	if !strings.Contains(log.String(), "interrupted") {
		t.Errorf("nothing said: %q", log.String())
	}
	if n := nextRevision(hist); n != 3 {
		t.Errorf("next revision %d, want 3", n)
	}
}

func TestTypesAndInstances(t *testing.T) {
	c, _, _ := memConfig(t,
		record("ns", "a", 1, release.StatusDeployed, guestbookLayout("a")),
		record("ns", "b", 1, release.StatusSuperseded, guestbookLayout("b")),
		record("ns", "b", 2, release.StatusFailed),
		record("ns", "gone", 1, release.StatusDeleting, guestbookLayout("gone")),
	)
	ctx := context.Background()
	types, err := c.Types(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	// b's latest revision failed: what runs is revision 1, superseded
	// but not by a deployed one, so only a counts; gone was deleted.
	var got []string
	for _, ty := range types {
		got = append(got, ty.Template+"@"+ty.Version+"="+string(rune('0'+ty.Instances)))
	}
	want := "github.com/acme/templates/apps/guestbook@v1.1.0=1 github.com/acme/templates/redis@v1.1.0=1"
	if strings.Join(got, " ") != want {
		t.Errorf("types: %s, want %s", strings.Join(got, " "), want)
	}
	for _, q := range []string{"redis", "github.com/acme/templates/redis", "redis:v1.1", "github.com/acme/templates/redis:v1.1.0"} {
		ins, err := c.Instances(ctx, q, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 1 || ins[0].Deployment != "a" || ins[0].Path != "a/a-redis" || ins[0].Version != "v1.1.0" {
			t.Errorf("instances %s: %+v", q, ins)
		}
	}
	if ins, _ := c.Instances(ctx, "postgres", false); len(ins) != 0 {
		t.Errorf("instances postgres: %+v", ins)
	}
}

func TestControllerManagedRefused(t *testing.T) {
	r := record("ns", "app", 1, release.StatusDeployed)
	r.Controller = "TemplateInstance ns/app"
	c, _, _ := memConfig(t, r)
	c.Expander = ExpandFunc(func(context.Context, Source) (*expand.Result, error) {
		return nil, errors.New("not expanded")
	})
	ctx := context.Background()
	tests := []struct {
		name string
		run  func() error
	}{
		{"update", func() error { _, err := c.Update(ctx, UpdateOptions{Name: "app"}); return err }},
		{"rollback", func() error { _, err := c.Rollback(ctx, "app", 1, ApplyOptions{}); return err }},
		{"delete", func() error { _, err := c.Delete(ctx, "app", DeleteOptions{}); return err }},
		{"deploy --upgrade", func() error {
			_, err := c.Deploy(ctx, DeployOptions{Name: "app", Upgrade: true,
				Source: Source{Input: release.Input{Ref: "x:v1"}}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), "managed by dm-controller through TemplateInstance ns/app") {
				t.Fatalf("got %v, want a refusal naming the instance", err)
			}
		})
	}
}

// A controller interrupted applying a revision takes that revision over at
// its next reconcile; people's dm, or a revision another controller or a
// real failure left, gets one more revision.
func TestResumable(t *testing.T) {
	rec := func(rev int, status release.Status, controller, desc string) *release.Record {
		r := record("ns", "app", rev, status)
		r.Controller, r.Description = controller, desc
		return r
	}
	const me = "TemplateInstance ns/app"
	for _, tt := range []struct {
		name       string
		hist       []*release.Record
		controller string
		want       int
	}{
		{"interrupted by me", []*release.Record{rec(1, release.StatusFailed, me, interruptedDescription)}, me, 1},
		{"after a deployed one", []*release.Record{rec(1, release.StatusSuperseded, me, ""), rec(2, release.StatusFailed, me, interruptedDescription)}, me, 2},
		{"no history", nil, me, 0},
		{"people's dm", []*release.Record{rec(1, release.StatusFailed, "", interruptedDescription)}, "", 0},
		{"another controller", []*release.Record{rec(1, release.StatusFailed, "TemplateInstance ns/other", interruptedDescription)}, me, 0},
		{"a real failure", []*release.Record{rec(1, release.StatusFailed, me, "applying: forbidden")}, me, 0},
		{"deployed", []*release.Record{rec(1, release.StatusDeployed, me, "")}, me, 0},
	} {
		got := 0
		if r := resumable(tt.hist, tt.controller); r != nil {
			got = r.Revision
		}
		if got != tt.want {
			t.Errorf("%s: resumable revision %d, want %d", tt.name, got, tt.want)
		}
	}
}
