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
