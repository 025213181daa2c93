package schema

import (
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dmhq/dm/internal/expand/pyre"
)

// Options tune how a schema is compiled.
type Options struct {
	// RegexTimeout bounds one match of a pattern on a backtracking
	// engine (expand's Options.RegexTimeout); 0 is pyre.DefaultTimeout.
	RegexTimeout time.Duration
}

// pattern is a schema's pattern (or patternProperties key) read as
// Deployment Manager's validator read it, with Python's re: lookahead,
// lookbehind, backreferences and the rest of Python's syntax (package
// pyre). The validator's interface has no error, so a match that runs
// out of time reports no match and is remembered: validationError turns
// it into the limit error.
type pattern struct {
	re     *pyre.Regexp
	failed atomic.Pointer[matchFailure]
}

// matchFailure is the last match that failed with an error.
type matchFailure struct {
	input string
	err   error
}

var _ jsonschema.Regexp = (*pattern)(nil)

func (p *pattern) String() string { return p.re.String() }

// MatchString reports whether s contains a match (re.search).
func (p *pattern) MatchString(s string) bool {
	ok, err := p.re.MatchString(s)
	if err != nil {
		p.failed.Store(&matchFailure{input: s, err: err})
		return false
	}
	return ok
}

// failure returns the error of the last failed match of s, or nil.
func (p *pattern) failure(s string) error {
	if f := p.failed.Load(); f != nil && f.input == s {
		return f.err
	}
	return nil
}

// patternEngine compiles a schema's patterns into patterns, kept by their
// text for validationError.
func patternEngine(o Options, patterns map[string]*pattern) jsonschema.RegexpEngine {
	return func(s string) (jsonschema.Regexp, error) {
		re, err := pyre.Compile(s, 0, o.RegexTimeout)
		if err != nil {
			return nil, err
		}
		p := &pattern{re: re}
		patterns[s] = p
		return p, nil
	}
}
