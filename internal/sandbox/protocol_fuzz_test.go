package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
)

// FuzzDecode feeds arbitrary bytes to the parent's side of the protocol:
// frames are read with a bound and decoded by kind; nothing may panic or
// allocate past the bound, and a frame written is read back unchanged.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	writeFrame(w, kindHello, hello{PID: 1, Landlock: 6, LandlockNet: true, MemoryLimit: 1 << 29})
	writeFrame(w, kindCall, call{Op: "resolve", Ref: "t:v1", Registry: "github.com/o/r"})
	for _, d := range []struct {
		d      *done
		result string
	}{
		{&done{Err: &wireError{Wire: derrors.Wire{Msg: "m", Kind: "limit_exceeded", Line: 3}, Path: []string{"x"}, Template: "t"}}, ""},
		{&done{Recycle: true}, `{"config":{"resources":[]}}`},
	} {
		body, _ := encodeDone(d.d, []byte(d.result))
		writeRaw(w, kindDone, body)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 0, 'D'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 'D'})
	f.Add([]byte{0, 0, 0, 3, 'D', '{', '}'})
	const max = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			kind, body, err := readFrame(r, max)
			if err != nil {
				if len(body) != 0 {
					t.Fatalf("error %v with a body", err)
				}
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errFrameTooLarge) && err.Error() != "frame with length 0" {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(body) > max {
				t.Fatalf("body of %d bytes over the limit %d", len(body), max)
			}
			switch kind {
			case kindHello:
				var h hello
				_ = json.Unmarshal(body, &h)
			case kindCall:
				var c call
				_ = json.Unmarshal(body, &c)
			case kindDone:
				d, result, err := decodeDone(body)
				if err == nil && len(result) > 0 && !json.Valid(result) {
					t.Fatalf("result %q is not JSON", result)
				}
				if err == nil && d.Err != nil {
					if err := d.Err.err(); err == nil || err.Error() == "" && d.Err.Msg != "" {
						t.Fatalf("decoded error %v from %+v", err, d.Err)
					}
				}
			}
			// What was read writes back to the same bytes.
			var out bytes.Buffer
			bw := bufio.NewWriter(&out)
			if err := writeRaw(bw, kind, body); err != nil {
				t.Fatal(err)
			}
			k2, b2, err := readFrame(&out, max)
			if err != nil || k2 != kind || !bytes.Equal(b2, body) {
				t.Fatalf("round trip: %q %q %v, want %q %q", k2, b2, err, kind, body)
			}
		}
	})
}

// TestWireErrorStatus: an error keeps its HTTP status across the pipe, also
// one that wraps two kinds, and a local registry's change stays one.
func TestWireErrorStatus(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("template: %w: %w", fmt.Errorf("x: %w", derrors.LimitExceeded), derrors.InvalidArgument),
		fmt.Errorf("a: %w: %w", derrors.Unavailable, derrors.NotFound),
		fmt.Errorf("reading: %w", fetch.ErrChanged),
		fmt.Errorf("forbidden: %w", derrors.Unauthorized),
		fmt.Errorf("taken: %w", derrors.Conflict),
		// Kinds the pipe once lost: a chart host not allowed was a 500.
		fmt.Errorf("chart: %w: host not allowed", derrors.Forbidden),
		fmt.Errorf("%w: %w", derrors.Forbidden, derrors.Unauthorized),
	} {
		for range 20 { // the order of kinds was once a map's
			got := toWire(err).err()
			if derrors.HTTPStatus(got) != derrors.HTTPStatus(err) || errors.Is(got, fetch.ErrChanged) != errors.Is(err, fetch.ErrChanged) {
				t.Fatalf("%v: status %d across the pipe, want %d", err, derrors.HTTPStatus(got), derrors.HTTPStatus(err))
			}
		}
	}
}
