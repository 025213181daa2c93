package helmproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// TestWireError: an error crosses the pipe with its message, location and
// kind, so dm reports a chart's error as it would in-process.
func TestWireError(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     string
		kind     error
		file     string
		line     int
		limitFld string
	}{
		{"located", engine.At("web/templates/cm.yaml", 6, engine.Invalid("must is required")), "web/templates/cm.yaml:6: must is required", derrors.InvalidArgument, "web/templates/cm.yaml", 6, ""},
		{"limit", engine.Limit("MaxOutputBytes", 10, "the rendered chart"), "the rendered chart: exceeds the limit of 10 (Options.MaxOutputBytes)", derrors.LimitExceeded, "", 0, "MaxOutputBytes"},
		{"plain", errors.New("boom"), "boom", nil, "", 0, ""},
		// Kinds this pipe once lost, and one it ordered unlike HTTPStatus.
		{"conflict", fmt.Errorf("release web: %w", derrors.Conflict), "release web: conflict", derrors.Conflict, "", 0, ""},
		{"already exists", fmt.Errorf("revision 2: %w", derrors.AlreadyExists), "revision 2: already exists", derrors.AlreadyExists, "", 0, ""},
		{"unauthorized before forbidden", fmt.Errorf("%w: %w", derrors.Forbidden, derrors.Unauthorized), "forbidden: unauthorized", derrors.Unauthorized, "", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := bufio.NewWriter(&buf)
			if err := WriteFrame(w, Response{Err: ToWire(tc.err)}); err != nil {
				t.Fatal(err)
			}
			var resp Response
			if err := ReadFrame(&buf, 1<<20, "MaxResponseBytes", &resp); err != nil {
				t.Fatal(err)
			}
			got := resp.Err.Err()
			if got.Error() != tc.want {
				t.Errorf("message %q, want %q", got, tc.want)
			}
			if tc.kind != nil && !errors.Is(got, tc.kind) {
				t.Errorf("%v is not %v", got, tc.kind)
			}
			if derrors.HTTPStatus(got) != derrors.HTTPStatus(tc.err) {
				t.Errorf("status %d across the pipe, want %d", derrors.HTTPStatus(got), derrors.HTTPStatus(tc.err))
			}
			var l *engine.Located
			if tc.file != "" && (!errors.As(got, &l) || l.File != tc.file || l.Line != tc.line) {
				t.Errorf("location lost: %#v", got)
			}
			var le *engine.LimitError
			if tc.limitFld != "" && (!errors.As(got, &le) || le.Field != tc.limitFld) {
				t.Errorf("limit lost: %#v", got)
			}
		})
	}
}

// TestReadFrameLimit: a frame over the limit is refused naming the field,
// before it is read.
func TestReadFrameLimit(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := WriteFrame(w, Response{Files: map[string][]byte{"a": make([]byte, 100)}}); err != nil {
		t.Fatal(err)
	}
	var resp Response
	err := ReadFrame(&buf, 50, "MaxResponseBytes", &resp)
	var le *engine.LimitError
	if !errors.As(err, &le) || le.Field != "MaxResponseBytes" {
		t.Fatalf("got %v", err)
	}
}

// panicky is a Handler whose Render panics.
type panicky struct{}

func (panicky) Render(context.Context, *RenderRequest) (engine.Output, error) {
	panic("a chart's bug")
}

// TestServePanic: a panic while answering a request is that request's
// error, naming the program that failed, and Serve goes on to the next.
func TestServePanic(t *testing.T) {
	var in bytes.Buffer
	w := bufio.NewWriter(&in)
	for range 2 {
		if err := WriteFrame(w, Request{Op: OpRender, Render: &RenderRequest{File: "web/Chart.yaml"}}); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := Serve(t.Context(), "dm-helm-render", &in, &out, panicky{}, 0); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for i := range 2 {
		var resp Response
		if err := ReadFrame(&out, 1<<20, "MaxResponseBytes", &resp); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		const want = "dm-helm-render failed on this request: a chart's bug"
		if resp.Err == nil || resp.Err.Err().Error() != want {
			t.Errorf("answer %d: %+v, want the error %q", i, resp.Err, want)
		}
	}
}
