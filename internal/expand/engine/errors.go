package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// LimitError reports that a configured limit was reached; Field names the
// Options field (of package expand) that sets it.
type LimitError struct {
	Field string
	Limit any
	What  string
}

// Error names the limit and the Options field.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: exceeds the limit of %v (Options.%s)", e.What, e.Limit, e.Field)
}

// Unwrap returns derrors.LimitExceeded.
func (e *LimitError) Unwrap() error { return derrors.LimitExceeded }

// Limit returns a *LimitError for field, whose value is limit.
func Limit(field string, limit any, format string, args ...any) error {
	return &LimitError{Field: field, Limit: limit, What: fmt.Sprintf(format, args...)}
}

// WireLimit returns a copy of the LimitError err wraps, with its limit as
// text so that a duration reads "10s" on the other side of a pipe; nil
// if err wraps none.
func WireLimit(err error) *LimitError {
	var le *LimitError
	if !errors.As(err, &le) {
		return nil
	}
	return &LimitError{Field: le.Field, Limit: fmt.Sprint(le.Limit), What: le.What}
}

// Invalid wraps a message as an invalid-argument error: the input (a
// configuration or template) is wrong.
func Invalid(format string, args ...any) error {
	return &kindError{err: fmt.Errorf(format, args...), kind: derrors.InvalidArgument}
}

// kindError adds a sentinel to an error without changing its message, so
// engine messages stay readable.
type kindError struct{ err, kind error }

func (k *kindError) Error() string   { return k.err.Error() }
func (k *kindError) Unwrap() []error { return []error{k.err, k.kind} }

// LineOf returns the line a YAML parser's error names ("line 3: ..."),
// or 0.
func LineOf(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// ReplacedSize is the length of s with every old replaced by new (an
// empty old matches around every character), computed without building
// it, so a replace can be refused before it exceeds a limit.
func ReplacedSize(s, old, new string) int {
	if old == "" {
		return len(s) + (len(s)+1)*len(new)
	}
	return len(s) + strings.Count(s, old)*(len(new)-len(old))
}

// Located is an engine error that knows its file and line (0: unknown).
type Located struct {
	File string
	Line int
	Err  error
}

func (l *Located) Error() string {
	if l.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", l.File, l.Line, l.Err)
	}
	return fmt.Sprintf("%s: %v", l.File, l.Err)
}

// Unwrap returns the cause.
func (l *Located) Unwrap() error { return l.Err }

// At attaches a location to err.
func At(file string, line int, err error) error {
	return &Located{File: file, Line: line, Err: err}
}

// Recover turns a panic of a template engine (gonja, Starlark,
// text/template, the OpenShift processor or dm's own functions in them)
// into an error naming the template file and, where the engine tracks
// it, the line of the statement that was running. Every Render defers it
// directly (recover works only there), so neither dm nor registryd
// crashes on a template.
func Recover(engine, file string, line func() int, err *error) {
	p := recover()
	if p == nil {
		return
	}
	n := 0
	if line != nil {
		n = line()
	}
	*err = At(file, n, Invalid("the %s engine failed on this template: %v", engine, p))
}

// Stopped is the error of a done context: the limit whose deadline fired
// (Timeout, TotalTimeout), or the caller's cancellation or deadline.
func Stopped(ctx context.Context) error {
	cause := context.Cause(ctx)
	var le *LimitError
	if errors.As(cause, &le) {
		return cause
	}
	if errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("expansion stopped at the caller's deadline: %w", cause)
	}
	return fmt.Errorf("expansion canceled: %w", cause)
}

// LimitWriter collects rendered output up to Limit bytes
// (MaxOutputBytes) and stops a render whose Ctx is done.
type LimitWriter struct {
	Ctx   context.Context
	Buf   []byte
	Limit int
}

func (w *LimitWriter) Write(p []byte) (int, error) {
	if len(w.Buf)+len(p) > w.Limit {
		return 0, Limit("MaxOutputBytes", w.Limit, "rendered output exceeds %d bytes", w.Limit)
	}
	if err := w.Ctx.Err(); err != nil {
		return 0, err
	}
	w.Buf = append(w.Buf, p...)
	return len(p), nil
}

// Cache holds what engines compile, shared by the engines of one
// Expander and bounded by its CacheEntries; keys start with the engine's
// name.
type Cache interface {
	Get(key string) (any, bool)
	Add(key string, v any) (evicted bool)
}

// Cached returns the value under key in c, compiling it on a miss.
func Cached(c Cache, key string, compile func() (any, error)) (any, error) {
	if v, ok := c.Get(key); ok {
		return v, nil
	}
	v, err := compile()
	if err != nil {
		return nil, err
	}
	c.Add(key, v)
	return v, nil
}
