package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
)

// The protocol between registryd (the parent) and a worker is a sequence of
// frames over the worker's stdin and stdout: a 4-byte big-endian length, a
// 1-byte kind and a JSON payload of length-1 bytes. One job runs at a time;
// while it runs the worker may send calls, each answered before the next
// frame. The invocation running is not sent: the worker records it in its
// slot, memory shared with the parent.
const (
	// Parent to worker.
	kindJob   byte = 'J' // job
	kindReply byte = 'R' // reply to a call

	// Worker to parent.
	kindHello byte = 'H' // hello: the limits the worker could apply
	kindCall  byte = 'C' // call: resolve a reference or read a file
	kindDone  byte = 'D' // the job's result or error
)

// headerSize is the length and kind before each frame's payload.
const headerSize = 5

// errFrameTooLarge is returned by readFrame for frames over the limit.
var errFrameTooLarge = errors.New("frame too large")

// writeFrame writes one frame and flushes it.
func writeFrame(w *bufio.Writer, kind byte, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding frame %q: %w", kind, err)
	}
	return writeRaw(w, kind, body)
}

func writeRaw(w *bufio.Writer, kind byte, body []byte) error {
	var h [headerSize]byte
	binary.BigEndian.PutUint32(h[:4], uint32(len(body)+1))
	h[4] = kind
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	return w.Flush()
}

// readFrame reads one frame of at most max payload bytes. A frame over the
// limit is an error wrapping errFrameTooLarge; its bytes are not read.
func readFrame(r io.Reader, max int) (byte, []byte, error) {
	fr := frameReader{r: r, max: max}
	return fr.next()
}

// A frameReader reads frames and can be interrupted: when a read fails
// with a deadline, what was read of the frame is kept, and the next call
// goes on from there.
type frameReader struct {
	r   io.Reader
	max int
	hdr [headerSize]byte
	nh  int    // header bytes read
	buf []byte // the payload, once the header is whole
	nb  int    // payload bytes read
}

// next reads the next frame, or the rest of one interrupted.
func (fr *frameReader) next() (byte, []byte, error) {
	for fr.nh < headerSize {
		n, err := fr.r.Read(fr.hdr[fr.nh:])
		fr.nh += n
		if fr.nh == headerSize {
			break
		}
		if err != nil {
			if err == io.EOF && fr.nh > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, err
		}
	}
	if fr.buf == nil {
		n := binary.BigEndian.Uint32(fr.hdr[:4])
		if n == 0 {
			return 0, nil, fmt.Errorf("frame with length 0")
		}
		n-- // the kind byte
		if uint64(n) > uint64(fr.max) {
			return 0, nil, fmt.Errorf("frame %q of %d bytes (limit %d): %w", fr.hdr[4], n, fr.max, errFrameTooLarge)
		}
		fr.buf = make([]byte, n)
	}
	for fr.nb < len(fr.buf) {
		n, err := fr.r.Read(fr.buf[fr.nb:])
		fr.nb += n
		if fr.nb == len(fr.buf) {
			break
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, err
		}
	}
	kind, body := fr.hdr[4], fr.buf
	fr.nh, fr.buf, fr.nb = 0, nil, 0
	return kind, body, nil
}

// job is what the parent asks of a worker.
type job struct {
	// Expand is an expansion; Process, instead, an OpenShift Template to
	// process (POST /processedTemplates).
	Expand  *expand.Request `json:"expand,omitempty"`
	Process []byte          `json:"process,omitempty"`
	// Default is the default registry for short references.
	Default string `json:"default,omitempty"`
	// Gen changes whenever a registry's index does: the worker keeps the
	// resolutions it was given while Gen and Scope stay the same.
	Gen uint64 `json:"gen,omitempty"`
	// Scope is who asks (resolve.ScopeKey): what one caller resolved is
	// never another's, who may see other registries under the same names.
	Scope string `json:"scope,omitempty"`
}

// lookup is the Lookup of the cluster the job is deployed to, nil when
// it renders offline. It stays in the parent (it is not JSON): the
// worker's lookups come back as calls, answered with it.
func (j *job) lookup() engine.Lookup {
	if j.Expand == nil || j.Expand.Cluster == nil {
		return nil
	}
	return j.Expand.Cluster.Lookup
}

// hello is the worker's first frame.
type hello struct {
	PID int `json:"pid"`
	// Landlock is the Landlock ABI version enforced, 0 when the kernel has
	// none; LandlockNet tells whether TCP connect and bind are denied.
	Landlock    int  `json:"landlock"`
	LandlockNet bool `json:"landlock_net"`
	// Seccomp tells whether the filter of sockets, programs and child
	// processes is installed.
	Seccomp bool `json:"seccomp"`
	// MemoryLimit is the address-space limit set, 0 if none could be.
	MemoryLimit uint64 `json:"memory_limit"`
	// Problems lists limits that could not be applied.
	Problems []string `json:"problems,omitempty"`
}

// progress is the record of a template invocation in a slot.
type progress struct {
	Path     []string `json:"path"`
	Template string   `json:"template"`
}

// call is a request from the worker to the parent.
type call struct {
	// Op is "resolve" (Ref against Registry) or "read" (file Name of the
	// version Resolved resolved earlier in the same job).
	Op       string `json:"op"`
	Ref      string `json:"ref,omitempty"`
	Registry string `json:"registry,omitempty"`
	Resolved string `json:"resolved,omitempty"`
	Name     string `json:"name,omitempty"`
	// Render, for Op "render", is an invocation of an engine the parent
	// attached (forward.go).
	Render *renderCall `json:"render,omitempty"`
	// Chart, for Op "chart", is a chart to download (forward.go).
	Chart *engine.ChartSource `json:"chart,omitempty"`
	// Lookup, for Op "lookup", is an object or list of the cluster the
	// job is deployed to, read as its account (forward.go).
	Lookup *engine.LookupQuery `json:"lookup,omitempty"`
}

// reply answers a call.
type reply struct {
	Resolution *wireResolution `json:"resolution,omitempty"`
	// Files, with a resolution the worker was not sent before, are the
	// version's files: the worker is about to read them all, and one
	// round trip is cheaper than one per file.
	Files map[string][]byte `json:"files,omitempty"`
	Data  []byte            `json:"data,omitempty"`
	// Output is a render's.
	Output *engine.Output `json:"output,omitempty"`
	// Chart is a downloaded chart.
	Chart *engine.Chart `json:"chart,omitempty"`
	// Object is a lookup's object or list; Missing, instead, says it
	// does not exist (or the job has no cluster: offline, nothing is).
	Object  json.RawMessage `json:"object,omitempty"`
	Missing bool            `json:"missing,omitempty"`
	Err     *wireError      `json:"error,omitempty"`
}

// wireResolution is resolve.Resolution without the registry handle: the
// worker reads files through the parent.
type wireResolution struct {
	Ref       string         `json:"ref"`
	Requested string         `json:"requested,omitempty"`
	Note      string         `json:"note,omitempty"`
	Version   *index.Version `json:"version"`
}

// done ends a job. Its frame holds the done as JSON, a newline (which
// encoding/json never writes) and the job's result as the worker wrote it:
// the expansion (expand.Result) or the processed Template, as JSON. The
// result is not wrapped in the done's JSON because that would have each
// side scan it once more.
type done struct {
	Err *wireError `json:"error,omitempty"`
	// Recycle asks the parent to replace the worker: a render may still
	// run in an abandoned goroutine, or the heap grew large.
	Recycle bool `json:"recycle,omitempty"`
}

// encodeDone encodes a done frame's body.
func encodeDone(d *done, result []byte) ([]byte, error) {
	hdr, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encoding the done frame: %w", err)
	}
	return append(append(hdr, '\n'), result...), nil
}

// decodeDone decodes a done frame's body. The result is checked to be
// JSON, since registryd passes it on as it is.
func decodeDone(body []byte) (*done, json.RawMessage, error) {
	hdr, result, _ := bytes.Cut(body, []byte{'\n'})
	var d done
	if err := json.Unmarshal(hdr, &d); err != nil {
		return nil, nil, fmt.Errorf("done frame: %w", err)
	}
	if len(result) == 0 {
		return &d, nil, nil
	}
	if d.Err != nil || !json.Valid(result) {
		return nil, nil, fmt.Errorf("done frame: the result is not JSON")
	}
	return &d, result, nil
}

// wireError carries an error in derrors' wire form (message, sentinel,
// file and line), so HTTP status mapping survives the pipe. Located
// expansion errors keep their other parts.
type wireError struct {
	derrors.Wire
	// Path and Template are the rest of an *expand.Error's location; Limit
	// an *expand.LimitError.
	Path     []string           `json:"path,omitempty"`
	Template string             `json:"template,omitempty"`
	Limit    *expand.LimitError `json:"limit,omitempty"`
}

// kindChanged is the kind fetch.ErrChanged crosses under, ahead of
// derrors' table (it wraps NotFound and is no derrors sentinel): the
// parent re-lists local registries on it and runs the job again.
const kindChanged = "changed"

// toWire encodes err.
func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Wire: *derrors.ToWire(err)}
	if errors.Is(err, fetch.ErrChanged) {
		w.Kind = kindChanged
	}
	var e *expand.Error
	if errors.As(err, &e) {
		w.Path, w.Template, w.File, w.Line = e.Path, e.Template, e.File, e.Line
		w.Msg = e.Err.Error()
	}
	w.Limit = engine.WireLimit(err)
	return w
}

// err decodes w.
func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	inner := w.Cause()
	if w.Kind == kindChanged {
		inner = derrors.Errorf(fetch.ErrChanged, "%s", w.Msg)
	}
	if w.Limit != nil && w.Limit.Error() == w.Msg {
		inner = w.Limit
	}
	if w.Path == nil && w.Template == "" && w.File == "" {
		return inner
	}
	return &expand.Error{Path: w.Path, Template: w.Template, File: w.File, Line: w.Line, Err: inner}
}
