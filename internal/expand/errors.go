package expand

import (
	"errors"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// Error is an expansion failure located in the layout: the resource names
// from the configuration down to the failing resource, the template being
// expanded there and, when the template engine reports one, the file and
// line.
//
//	frontend > web (github.com/acme/t/common/web:v1.2.3) web.jinja:14: ...
type Error struct {
	// Path holds the resource names from the top of the configuration.
	Path []string
	// Template is the resolved reference or import path of the template
	// being expanded, empty for errors in the configuration itself.
	Template string
	// File and Line locate the error in a template or configuration file;
	// Line is 0 when unknown.
	File string
	Line int
	// Err is the underlying error; it wraps a derrors sentinel.
	Err error
}

// Error formats the location and the cause.
func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString(strings.Join(e.Path, " > "))
	if e.Template != "" {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString("(" + e.Template + ")")
	}
	if e.File != "" {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(e.File)
		if e.Line > 0 {
			sb.WriteString(":" + strconv.Itoa(e.Line))
		}
	}
	if sb.Len() > 0 {
		sb.WriteString(": ")
	}
	sb.WriteString(e.Err.Error())
	return sb.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// LimitError reports that a configured limit was reached; see package
// engine, whose engines return it.
type LimitError = engine.LimitError

func limitErr(field string, limit any, format string, args ...any) error {
	return engine.Limit(field, limit, format, args...)
}

// invalid wraps a message as an invalid-argument error: the input (a
// configuration or template) is wrong.
func invalid(format string, args ...any) error {
	return engine.Invalid(format, args...)
}

// located is an engine error that knows its file and line.
type located = engine.Located

// at attaches a location to err.
func at(file string, line int, err error) error { return engine.At(file, line, err) }

// classify wraps engine errors that carry no sentinel as invalid input:
// a template that fails to render is the template's fault.
func classify(err error) error {
	for _, s := range []error{derrors.LimitExceeded, derrors.InvalidArgument, derrors.NotFound, derrors.Ambiguous, derrors.Unavailable} {
		if errors.Is(err, s) {
			return err
		}
	}
	return &kindError{err: err, kind: derrors.InvalidArgument}
}

// kindError adds a sentinel to an error without changing its message, so
// engine messages stay readable.
type kindError struct{ err, kind error }

func (k *kindError) Error() string   { return k.err.Error() }
func (k *kindError) Unwrap() []error { return []error{k.err, k.kind} }
