package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name        string
		bi          debug.BuildInfo
		want, short string
	}{
		{
			name:  "release",
			bi:    debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}},
			want:  "v1.2.0 (go1.26.8)",
			short: "v1.2.0",
		},
		{
			name: "work tree",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "0123456789abcdef0123"},
				{Key: "vcs.time", Value: "2026-11-22T10:00:00Z"},
				{Key: "vcs.modified", Value: "true"},
			}},
			want:  "(devel) (revision 0123456789ab+modified, 2026-11-22T10:00:00Z, go1.26.8)",
			short: "(devel)+0123456789ab",
		},
		{
			name:  "no version at all",
			bi:    debug.BuildInfo{},
			want:  "(devel)",
			short: "(devel)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fromBuildInfo(&tt.bi)
			if got := in.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := in.Short(); got != tt.short {
				t.Errorf("Short() = %q, want %q", got, tt.short)
			}
		})
	}
}

func TestGet(t *testing.T) {
	if in := Get(); in.Version == "" || in.GoVersion == "" {
		t.Errorf("Get() = %+v, want a version and a Go version", in)
	}
}
