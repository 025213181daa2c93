// Package version reports what build of dm or registryd is running: the
// module version and the VCS revision that `go build` stamps into the
// binary (debug.ReadBuildInfo). Deployment records carry it too, so a
// revision says which dm wrote it.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info describes a build.
type Info struct {
	// Version is the main module's version: a release tag such as v1.2.0
	// when built with `go install ...@v1.2.0`, a pseudo-version, or
	// "(devel)" for a build from a work tree.
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, if known.
	Revision string `json:"revision,omitempty"`
	// Time is the commit time of Revision (RFC 3339), if known.
	Time string `json:"time,omitempty"`
	// Modified reports uncommitted changes in the work tree at build time.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go"`
}

// Get returns the running binary's build information.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(unknown)"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one-line form both binaries print for --version:
// "v1.2.0 (revision 0123456789ab, 2026-11-22T10:00:00Z, go1.26.8)".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(in.Version)
	var extra []string
	if in.Revision != "" {
		r := in.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		if in.Modified {
			r += "+modified"
		}
		extra = append(extra, "revision "+r)
	}
	if in.Time != "" {
		extra = append(extra, in.Time)
	}
	if in.GoVersion != "" {
		extra = append(extra, in.GoVersion)
	}
	if len(extra) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(extra, ", "))
	}
	return b.String()
}

// Short is Version, with the short revision for development builds: what a
// deployment record stores as the dm version that wrote it.
func (in Info) Short() string {
	if in.Version != "(devel)" || in.Revision == "" {
		return in.Version
	}
	r := in.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	return in.Version + "+" + r
}
