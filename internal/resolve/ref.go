// Package resolve parses template references and resolves them against
// registry indexes to one concrete version.
//
// The grammar:
//
//	ref      = [host "/" owner "/" repo "/"] [collection "/"] template [":" version] ["@" digest]
//	version  = "v" MAJOR ["." MINOR ["." PATCH]] ["-" prerelease]
//	digest   = "sha256:" 64*hexdigit
//
// A reference with a host is full; one without is short and resolves against
// the default registry. A raw GitHub content URL of a template file
// (https://raw.githubusercontent.com/o/r/<git ref>/[c/]t/v/t.py) is accepted
// and read as github.com/o/r/[c/]t:v.
package resolve

import (
	"fmt"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
)

// DefaultHost is the host of full references and registries written without
// one.
const DefaultHost = "github.com"

// Ref is a parsed template reference.
type Ref struct {
	// Host, Owner and Repo are empty in a short reference.
	Host, Owner, Repo string
	// Collection is empty for the root collection (or, in a short
	// reference, for the default registry's collection).
	Collection string
	Template   string
	// Version is as written, without expansion (v1, v1.2.3-rc.1); empty
	// means the highest stable version.
	Version string
	// Digest is "sha256:<hex>" or empty.
	Digest string
}

// Full reports whether the reference names its registry.
func (r Ref) Full() bool { return r.Host != "" }

// Registry returns the reference prefix of the reference's registry
// (host/owner/repo), empty for a short reference.
func (r Ref) Registry() string {
	if !r.Full() {
		return ""
	}
	return r.Host + "/" + r.Owner + "/" + r.Repo
}

// String formats the reference so that Parse(r.String()) == r.
func (r Ref) String() string {
	var sb strings.Builder
	if r.Full() {
		sb.WriteString(r.Registry())
		sb.WriteByte('/')
	}
	if r.Collection != "" {
		sb.WriteString(r.Collection)
		sb.WriteByte('/')
	}
	sb.WriteString(r.Template)
	if r.Version != "" {
		sb.WriteByte(':')
		sb.WriteString(r.Version)
	}
	if r.Digest != "" {
		sb.WriteByte('@')
		sb.WriteString(r.Digest)
	}
	return sb.String()
}

// parseError names the reference and its offending part.
func parseError(ref, format string, args ...any) error {
	return fmt.Errorf("reference %q: %s: %w", ref, fmt.Sprintf(format, args...), derrors.InvalidArgument)
}

const rawPrefix = "https://raw.githubusercontent.com/"

// Parse parses a template reference.
func Parse(s string) (Ref, error) {
	var r Ref
	if len(s) > 512 {
		return r, parseError(s[:32]+"...", "longer than 512 bytes")
	}
	if strings.HasPrefix(s, rawPrefix) || strings.HasPrefix(s, "http://raw.githubusercontent.com/") {
		return parseRaw(s)
	}
	if strings.Contains(s, "://") {
		return r, parseError(s, "URL references other than raw.githubusercontent.com template files are not registry references")
	}
	rest := s
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		r.Digest = rest[i+1:]
		rest = rest[:i]
		if err := checkDigest(r.Digest); err != nil {
			return Ref{}, parseError(s, "%v", err)
		}
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		r.Version = rest[i+1:]
		rest = rest[:i]
		if !index.IsVersion(r.Version) {
			return Ref{}, parseError(s, "version %q: want v<MAJOR>[.<MINOR>[.<PATCH>]][-<pre-release>], such as v1 or v1.2.3", r.Version)
		}
	}
	var buf [6]string
	parts, ok := splitPath(rest, buf[:0])
	if !ok {
		return Ref{}, parseError(s, "%q has more than %d path segments between repository and template; at most one (the collection) is allowed", rest, len(buf)-4)
	}
	// A dotted first segment is a host only when there is room for
	// owner/repo/template after it: collections may contain dots too.
	if len(parts) > 2 && strings.Contains(parts[0], ".") {
		// Full form: host/owner/repo/[collection/]template.
		switch {
		case len(parts) < 4:
			return Ref{}, parseError(s, "want %s/<owner>/<repo>/[<collection>/]<template>", parts[0])
		case len(parts) > 5:
			return Ref{}, parseError(s, "%q has %d path segments between repository and template; at most one (the collection) is allowed", rest, len(parts)-4)
		}
		r.Host, r.Owner, r.Repo = parts[0], parts[1], parts[2]
		parts = parts[3:]
		for _, p := range []struct{ what, v string }{{"host", r.Host}, {"owner", r.Owner}, {"repository", r.Repo}} {
			if err := checkSegment(p.v); err != nil {
				return Ref{}, parseError(s, "%s %q: %v", p.what, p.v, err)
			}
		}
	} else if len(parts) > 2 {
		return Ref{}, parseError(s, "a short reference is [<collection>/]<template>[:<version>]; a full one starts with a host, such as %s/%s", DefaultHost, rest)
	}
	if len(parts) == 2 {
		r.Collection = parts[0]
		if err := checkSegment(r.Collection); err != nil {
			return Ref{}, parseError(s, "collection %q: %v", r.Collection, err)
		}
	}
	r.Template = parts[len(parts)-1]
	if err := checkSegment(r.Template); err != nil {
		return Ref{}, parseError(s, "template %q: %v", r.Template, err)
	}
	return r, nil
}

// parseRaw maps https://raw.githubusercontent.com/o/r/<gitref>/[c/]t/v/<file>
// to github.com/o/r/[c/]t:v.
func parseRaw(s string) (Ref, error) {
	rest := s[strings.Index(s, "://")+3+len("raw.githubusercontent.com/"):]
	parts := strings.Split(rest, "/")
	// owner, repo, gitref, [collection], template, version, file
	if len(parts) < 6 {
		return Ref{}, parseError(s, "want %s<owner>/<repo>/<branch>/[<collection>/]<template>/<version>/<template file>", rawPrefix)
	}
	if len(parts) > 7 {
		return Ref{}, parseError(s, "%d path segments between branch and template; at most one (the collection) is allowed", len(parts)-6)
	}
	n := len(parts)
	tmpl, ver, file := parts[n-3], parts[n-2], parts[n-1]
	if strings.TrimSuffix(file, fileExt(file)) != tmpl {
		return Ref{}, parseError(s, "file %q is not the template file of template %q", file, tmpl)
	}
	r := Ref{Host: DefaultHost, Owner: parts[0], Repo: parts[1], Template: tmpl, Version: ver}
	if n == 7 {
		r.Collection = parts[3]
	}
	if !index.IsVersion(ver) {
		return Ref{}, parseError(s, "version directory %q is not a version", ver)
	}
	parts = []string{r.Owner, r.Repo, r.Template}
	if n == 7 {
		parts = append(parts, r.Collection)
	}
	for _, v := range parts {
		if err := checkSegment(v); err != nil {
			return Ref{}, parseError(s, "segment %q: %v", v, err)
		}
	}
	return r, nil
}

// splitPath splits p at slashes into buf without allocating; ok is false
// when there are more parts than buf holds.
func splitPath(p string, buf []string) ([]string, bool) {
	for {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			break
		}
		if len(buf) == cap(buf)-1 {
			return nil, false
		}
		buf = append(buf, p[:i])
		p = p[i+1:]
	}
	return append(buf, p), true
}

func fileExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[i:]
	}
	return ""
}

// checkSegment accepts the characters GitHub allows in owner, repository
// and path names that references may use.
func checkSegment(v string) error {
	if v == "" {
		return fmt.Errorf("empty")
	}
	if v == "." || v == ".." {
		return fmt.Errorf("not a name")
	}
	if len(v) > 100 {
		return fmt.Errorf("longer than 100 characters")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("character %q is not allowed (letters, digits, '-', '_' and '.')", c)
		}
	}
	return nil
}

func checkDigest(d string) error {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return fmt.Errorf("digest %q: want sha256:<64 hex digits>", d)
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("digest %q: want sha256:<64 lower-case hex digits>", d)
		}
	}
	return nil
}

// Registry is a default registry: where short references resolve.
type Registry struct {
	Host, Owner, Repo string
	// Collection, if set, applies to short references that name none.
	Collection string
}

// Prefix returns host/owner/repo.
func (g Registry) Prefix() string { return g.Host + "/" + g.Owner + "/" + g.Repo }

// String returns host/owner/repo[/collection].
func (g Registry) String() string {
	if g.Collection != "" {
		return g.Prefix() + "/" + g.Collection
	}
	return g.Prefix()
}

// IsZero reports whether no registry is set.
func (g Registry) IsZero() bool { return g.Owner == "" }

// ParseRegistry parses [host/]owner/repo[/collection], as given to
// --registry. A first segment with a dot is a host; the default is
// github.com.
func ParseRegistry(s string) (Registry, error) {
	parts := strings.Split(strings.TrimSuffix(s, "/"), "/")
	g := Registry{Host: DefaultHost}
	if strings.Contains(parts[0], ".") {
		g.Host = parts[0]
		parts = parts[1:]
	}
	if len(parts) < 2 || len(parts) > 3 {
		return Registry{}, derrors.Errorf(derrors.InvalidArgument, "registry %q: want [%s/]<owner>/<repo>[/<collection>]", s, DefaultHost)
	}
	g.Owner, g.Repo = parts[0], parts[1]
	if len(parts) == 3 {
		g.Collection = parts[2]
	}
	for _, v := range parts {
		if err := checkSegment(v); err != nil {
			return Registry{}, fmt.Errorf("registry %q: segment %q: %v: %w", s, v, err, derrors.InvalidArgument)
		}
	}
	return g, nil
}
