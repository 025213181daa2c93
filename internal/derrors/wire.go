package derrors

import "errors"

// wireKind is a sentinel and the name it crosses a process boundary
// under.
type wireKind struct {
	name string
	err  error
}

// wireKinds returns the sentinels that cross a process boundary (the
// pipes to registryd's sandbox workers and to dm-helm) by name, in
// HTTPStatus's order, so that an error wrapping two gets on the other
// side the status it would get in-process. It is the one table both
// protocols use: two copies once drifted, and a kind one of them lacked
// became a 500. A function, not a variable: no package state to change.
func wireKinds() [11]wireKind {
	return [...]wireKind{
		{"not_found", NotFound},
		{"invalid", InvalidArgument},
		{"ambiguous", Ambiguous},
		{"already_exists", AlreadyExists},
		{"conflict", Conflict},
		{"unauthorized", Unauthorized},
		{"forbidden", Forbidden},
		{"limit_exceeded", LimitExceeded},
		{"verification_failed", VerificationFailed},
		{"unavailable", Unavailable},
		{"not_modified", NotModified},
	}
}

// Wire is an error as it crosses a process boundary: its message, the
// name of its sentinel and, for an error about a place in a file, the
// file and line. Each protocol embeds it in its own frames, next to what
// only that protocol carries, and puts the location back into its own
// error type on the other side.
type Wire struct {
	Msg  string `json:"msg"`
	Kind string `json:"kind,omitempty"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// ToWire encodes err: its message and the first sentinel of the table it
// wraps. nil gives nil.
func ToWire(err error) *Wire {
	if err == nil {
		return nil
	}
	return &Wire{Msg: err.Error(), Kind: WireKind(err)}
}

// WireKind returns the name err's sentinel crosses a process boundary
// under, "" when it wraps none of them.
func WireKind(err error) string {
	for _, k := range wireKinds() {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

// Cause decodes w without its location: an error that reads w.Msg and
// matches (errors.Is) the sentinel w.Kind names; an unknown or empty kind
// (a newer peer's) gives a plain error with the message. nil gives nil.
// The protocol wraps the result in its own located error where w.File is
// set.
func (w *Wire) Cause() error {
	if w == nil {
		return nil
	}
	e := &remoteError{msg: w.Msg}
	for _, k := range wireKinds() {
		if k.name == w.Kind {
			e.kind = k.err
			break
		}
	}
	return e
}

// remoteError is an error decoded from the wire: its message as the peer
// formatted it, and its sentinel (nil if none).
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }
