// Package pyre is Python's regular expressions (the re module's syntax
// and matching, Python 3.11's) for schema patterns and the re module of
// Python-style templates: Deployment Manager read both with Python's re.
//
// A pattern is translated once into Go's syntax, when it needs nothing
// RE2 lacks, and into regexp2's (a backtracking engine from .NET):
// lookahead and lookbehind, backreferences, conditionals and atomic
// groups need regexp2, and so does input on which RE2 and Python read a
// pattern differently (\d, \w, \s, \b and case folding are ASCII in RE2
// and Unicode in Python; $ also matches before a final newline in
// Python). Everything else matches with RE2 in linear time. A match on
// regexp2 is bounded by a timeout (Options.RegexTimeout), so that a
// pattern that backtracks catastrophically cannot hang an expansion.
package pyre

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Python's flag values (re.I, re.M, ...), which templates may or
// together.
const (
	IgnoreCase = 2
	Locale     = 4
	Multiline  = 8
	DotAll     = 16
	Unicode    = 32
	Verbose    = 64
	ASCII      = 256
)

// DefaultTimeout bounds one match when no timeout is given. Matches of
// real patterns take microseconds; a second is long enough never to cut
// one short on a loaded machine.
const DefaultTimeout = time.Second

// TimeoutField names the option that bounds a match, in errors.
const TimeoutField = "RegexTimeout"

// Regexp is a compiled Python pattern. It is safe for concurrent use.
type Regexp struct {
	pattern string
	flags   int
	t       *translation
	timeout time.Duration

	re2 *regexp.Regexp // nil when the pattern needs regexp2
	// The anchored forms for match and fullmatch, compiled on first use.
	re2Once              sync.Once
	re2Anchored, re2Full *regexp.Regexp
	re2Err               error

	netOnce                   sync.Once
	net, netAnchored, netFull *regexp2.Regexp
	netErr                    error
	groupNames                []string // by group number; "" for unnamed
}

// Compile translates and compiles pattern with Python's flags; timeout
// bounds each match (0: DefaultTimeout). A pattern Python refuses is an
// error that says why, as Python's does.
func Compile(pattern string, flags int, timeout time.Duration) (*Regexp, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	t, err := translate(pattern, flags)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	r := &Regexp{pattern: pattern, flags: flags, t: t, timeout: timeout}
	if t.verbose {
		r.flags |= Verbose
	}
	r.groupNames = make([]string, t.groups+1)
	for name, i := range t.names {
		r.groupNames[i] = name
	}
	if t.re2 != "" {
		if r.re2, err = compileRE2(t.re2); err != nil {
			r.re2 = nil // regexp2 reads it (a repeat count RE2 cannot split)
		}
	}
	if r.re2 == nil {
		// Compiled now: a pattern regexp2 refuses is an error of the
		// template, found when it is read.
		if err := r.compileNet(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Regexp) compileNet() error {
	r.netOnce.Do(func() {
		compile := func(s string) *regexp2.Regexp {
			if r.netErr != nil {
				return nil
			}
			re, err := regexp2.Compile(s, regexp2.OptionMaintainCaptureOrder())
			if err != nil {
				r.netErr = fmt.Errorf("pattern %q: %v", r.pattern, err)
				return nil
			}
			re.MatchTimeout = r.timeout
			return re
		}
		r.net = compile(r.t.net)
		r.netAnchored = compile(`\A(?:` + r.t.net + `)`)
		r.netFull = compile(`\A(?:` + r.t.net + `)\z`)
	})
	return r.netErr
}

func (r *Regexp) compileRE2Anchored() error {
	r.re2Once.Do(func() {
		if r.re2Anchored, r.re2Err = compileRE2(`\A(?:` + r.t.re2 + `)`); r.re2Err == nil {
			r.re2Full, r.re2Err = compileRE2(`\A(?:` + r.t.re2 + `)\z`)
		}
	})
	return r.re2Err
}

// String returns the pattern as written.
func (r *Regexp) String() string { return r.pattern }

// Flags returns the flags given and those the pattern sets inline.
func (r *Regexp) Flags() int { return r.flags }

// Groups returns the number of capturing groups.
func (r *Regexp) Groups() int { return r.t.groups }

// GroupIndex returns the number of the group called name, or -1.
func (r *Regexp) GroupIndex(name string) int {
	if i, ok := r.t.names[name]; ok {
		return i
	}
	return -1
}

// GroupNames returns the name of each group by number ("" if unnamed;
// index 0 is the whole match).
func (r *Regexp) GroupNames() []string { return r.groupNames }

// UsesRE2 reports whether the pattern matches with RE2 on plain ASCII
// input (tests and benchmarks).
func (r *Regexp) UsesRE2() bool { return r.re2 != nil }

// onRE2 reports whether RE2 matches s as Python would.
func (r *Regexp) onRE2(s string) bool {
	if r.re2 == nil {
		return false
	}
	if r.t.unicode && !plainASCII(s) {
		return false
	}
	return !r.t.dollar || strings.IndexByte(s, '\n') < 0
}

// plainASCII reports whether s is ASCII without the control characters
// Python's \s matches and Go's does not (\v, \x1c-\x1f).
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c == '\v' || c >= 0x1c && c <= 0x1f {
			return false
		}
	}
	return true
}

// MatchString reports whether s contains a match (re.search, as JSON
// Schema's pattern and DM's validator read it).
func (r *Regexp) MatchString(s string) (bool, error) {
	if r.onRE2(s) {
		return r.re2.MatchString(s), nil
	}
	if err := r.compileNet(); err != nil {
		return false, err
	}
	ok, err := r.net.MatchString(s)
	return ok, r.matchError(err, s)
}

// Mode is where a match may be: anywhere (search), at the start
// (match), or the whole string (fullmatch).
type Mode int

// The modes of Find.
const (
	Search Mode = iota
	Anchored
	Full
)

// Find returns the first match of mode in s: for each group (0 the whole
// match) its start and end byte offsets, -1 for a group that did not take
// part; nil if there is none.
func (r *Regexp) Find(s string, mode Mode) ([]int, error) {
	if r.onRE2(s) {
		re := r.re2
		if mode != Search {
			if err := r.compileRE2Anchored(); err != nil {
				return nil, err
			}
			re = r.re2Anchored
			if mode == Full {
				re = r.re2Full
			}
		}
		return re.FindStringSubmatchIndex(s), nil
	}
	if err := r.compileNet(); err != nil {
		return nil, err
	}
	re := r.net
	switch mode {
	case Anchored:
		re = r.netAnchored
	case Full:
		re = r.netFull
	}
	m, err := re.FindStringMatch(s)
	if err != nil {
		return nil, r.matchError(err, s)
	}
	if m == nil {
		return nil, nil
	}
	return r.locations(m), nil
}

// FindAll calls fn with each match of s in turn, as Python's finditer
// finds them (an empty match right after a match counts, as in Python
// 3.7 and later), until fn returns false.
func (r *Regexp) FindAll(s string, fn func(loc []int) bool) error {
	if err := r.compileNet(); err != nil {
		return err
	}
	m, err := r.net.FindStringMatch(s)
	for err == nil && m != nil {
		if !fn(r.locations(m)) {
			return nil
		}
		m, err = r.net.FindNextMatch(m)
	}
	return r.matchError(err, s)
}

// locations are a regexp2 match's groups as byte offsets.
func (r *Regexp) locations(m *regexp2.Match) []int {
	loc := make([]int, 2*(r.t.groups+1))
	for g := 0; g <= r.t.groups; g++ {
		grp := m.GroupByNumber(g)
		if grp == nil || len(grp.Captures) == 0 {
			loc[2*g], loc[2*g+1] = -1, -1
			continue
		}
		i, n := grp.ByteRange()
		loc[2*g], loc[2*g+1] = i, i+n
	}
	return loc
}

// matchError names the limit a match ran into.
func (r *Regexp) matchError(err error, s string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, regexp2.ErrBacktrackingStackLimit):
		return engine.Limit(TimeoutField, r.timeout, "pattern %q backtracked past the engine's stack on a string of %d bytes (catastrophic backtracking)", r.pattern, len(s))
	case strings.Contains(err.Error(), "timeout"):
		return engine.Limit(TimeoutField, r.timeout, "pattern %q took longer than %v on a string of %d bytes (catastrophic backtracking)", r.pattern, r.timeout, len(s))
	}
	return fmt.Errorf("pattern %q: %w", r.pattern, err)
}
