package release

import "testing"

func TestStatusValid(t *testing.T) {
	for _, tc := range []struct {
		s    Status
		want bool
	}{
		{StatusPending, true},
		{StatusDeployed, true},
		{StatusFailed, true},
		{StatusSuperseded, true},
		{StatusDeleting, true},
		{"", false},
		{"Deployed", false},
		{"pending-install", false},
	} {
		if got := tc.s.Valid(); got != tc.want {
			t.Errorf("Status(%q).Valid() = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestRecordString(t *testing.T) {
	r := &Record{Name: "web", Namespace: "prod", Revision: 3}
	if got, want := r.String(), "prod/web revision 3"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestHolderString(t *testing.T) {
	for _, tc := range []struct {
		h    Holder
		want string
	}{
		{Holder{ID: "1a2b", Host: "ci-7", PID: 4242}, "dm pid 4242 on host ci-7 (lease 1a2b)"},
		{Holder{ID: "1a2b"}, "dm (lease 1a2b)"},
		{Holder{ID: "1a2b", Host: "x7", PID: 1, Pod: "dm/x7", Instance: "TemplateInstance shop/web"},
			"dm-controller pod dm/x7 for TemplateInstance shop/web (pid 1, on host x7, lease 1a2b)"},
	} {
		if got := tc.h.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.h, got, tc.want)
		}
	}
}
