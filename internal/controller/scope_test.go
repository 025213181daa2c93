package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/api"
)

func TestCheckScope(t *testing.T) {
	regs := []api.Registry{
		{Name: "github.com/acme/shared"},
		{Name: "github.com/acme/team", Namespace: "team-a"},
		// A longer prefix is its own registry.
		{Name: "github.com/acme/team/more"},
	}
	lists := 0
	s := &serverScopes{stale: true, list: func(context.Context) (*api.RegistryList, error) {
		lists++
		return &api.RegistryList{Registries: regs}, nil
	}}
	for _, tt := range []struct {
		ns, ref string
		want    string // "" allowed, else a part of the error
	}{
		{"team-a", "github.com/acme/team/cm:v1.0.0", ""},
		{"team-b", "github.com/acme/team/cm:v1.0.0", "registry github.com/acme/team, a Registry of namespace team-a: its templates serve namespace team-a only, and x is in namespace team-b"},
		{"", "github.com/acme/team/cm:v1.0.0", "x is in no namespace"},
		{"team-b", "github.com/acme/shared/cm:v1.0.0", ""},
		{"team-b", "github.com/acme/team/more/cm:v1.0.0", ""},
		// Unknown registries are left to resolution to refuse.
		{"team-b", "github.com/other/r/cm:v1.0.0", ""},
		{"team-b", "github.com/acme/teamx/cm:v1.0.0", ""},
	} {
		err := checkScope(context.Background(), s, tt.ns, "x", tt.ref)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s in %q: %v, want allowed", tt.ref, tt.ns, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errOutOfScope)):
			t.Errorf("%s in %q: %v, want errOutOfScope with %q", tt.ref, tt.ns, err, tt.want)
		}
	}
	// Read once, then again for each reference no registry serves.
	if lists != 3 {
		t.Errorf("the registry list was read %d times, want 3", lists)
	}
	s.invalidate()
	if err := checkScope(context.Background(), s, "team-a", "x", "github.com/acme/team/cm:v1.0.0"); err != nil || lists != 4 {
		t.Errorf("after invalidate: %v, %d reads; want allowed after a 4th read", err, lists)
	}
	if err := checkScope(context.Background(), nil, "team-b", "x", "github.com/acme/team/cm:v1.0.0"); err != nil {
		t.Errorf("without scopes: %v", err)
	}
}
