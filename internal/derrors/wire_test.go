package derrors

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// TestWireRoundTrip: an error crosses a process boundary (as JSON) with
// its message, its sentinel and its location.
func TestWireRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		wire *Wire
		msg  string
		kind error // nil: matches no sentinel
		file string
		line int
	}{
		{name: "not found", wire: ToWire(fmt.Errorf("redis:v9: %w", NotFound)), msg: "redis:v9: not found", kind: NotFound},
		{name: "invalid", wire: ToWire(fmt.Errorf("bad: %w", InvalidArgument)), msg: "bad: invalid argument", kind: InvalidArgument},
		{name: "ambiguous", wire: ToWire(Errorf(Ambiguous, "v1 and v1.0.0")), msg: "v1 and v1.0.0", kind: Ambiguous},
		{name: "unavailable", wire: ToWire(fmt.Errorf("github: %w", Unavailable)), msg: "github: unavailable", kind: Unavailable},
		{name: "not modified", wire: ToWire(NotModified), msg: "not modified", kind: NotModified},
		{name: "unauthorized", wire: ToWire(fmt.Errorf("token: %w", Unauthorized)), msg: "token: unauthorized", kind: Unauthorized},
		{name: "forbidden", wire: ToWire(fmt.Errorf("host: %w", Forbidden)), msg: "host: forbidden", kind: Forbidden},
		{name: "limit exceeded", wire: ToWire(fmt.Errorf("big: %w", LimitExceeded)), msg: "big: limit exceeded", kind: LimitExceeded},
		{name: "already exists", wire: ToWire(fmt.Errorf("revision 3: %w", AlreadyExists)), msg: "revision 3: already exists", kind: AlreadyExists},
		{name: "conflict", wire: ToWire(fmt.Errorf("raced: %w", Conflict)), msg: "raced: conflict", kind: Conflict},
		{name: "plain", wire: ToWire(errors.New("boom")), msg: "boom"},
		{name: "unknown kind", wire: &Wire{Msg: "from a newer peer", Kind: "teapot"}, msg: "from a newer peer"},
		{name: "located", wire: at("web/templates/cm.yaml", 6, Errorf(InvalidArgument, "must is required")),
			msg: "must is required", kind: InvalidArgument, file: "web/templates/cm.yaml", line: 6},
		{name: "located, no line", wire: at("web.jinja", 0, errors.New("boom")), msg: "boom", file: "web.jinja"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.wire)
			if err != nil {
				t.Fatal(err)
			}
			var w *Wire
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatal(err)
			}
			got := w.Cause()
			if got == nil || got.Error() != tc.msg {
				t.Fatalf("decoded %v, want %q", got, tc.msg)
			}
			for _, k := range wireKinds() {
				if is := errors.Is(got, k.err); is != (k.err == tc.kind) {
					t.Errorf("errors.Is(%v, %v) = %v", got, k.err, is)
				}
			}
			if w.File != tc.file || w.Line != tc.line {
				t.Errorf("location %s:%d, want %s:%d", w.File, w.Line, tc.file, tc.line)
			}
		})
	}
}

// TestWireStatus: an error that wraps two sentinels keeps the HTTP status
// it has in-process, since the table follows HTTPStatus's order.
func TestWireStatus(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("%w: %w", Forbidden, Unauthorized),
		fmt.Errorf("%w: %w", Unauthorized, Forbidden),
		fmt.Errorf("%w: %w", LimitExceeded, InvalidArgument),
		fmt.Errorf("%w: %w", Unavailable, NotFound),
		fmt.Errorf("%w: %w", Conflict, Ambiguous),
	} {
		if got, want := HTTPStatus(ToWire(err).Cause()), HTTPStatus(err); got != want {
			t.Errorf("%v: status %d across the wire, want %d", err, got, want)
		}
	}
}

// TestWireNil: no error crosses as none.
func TestWireNil(t *testing.T) {
	if w := ToWire(nil); w != nil {
		t.Errorf("ToWire(nil) = %#v", w)
	}
	var w *Wire
	if err := w.Cause(); err != nil {
		t.Errorf("nil Cause = %v", err)
	}
}

// at encodes cause as a protocol does an error located at file and line:
// the location in its own fields, the message the cause's.
func at(file string, line int, cause error) *Wire {
	w := ToWire(cause)
	w.File, w.Line = file, line
	return w
}
