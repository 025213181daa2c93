package helmproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Handler does dm-helm's work: cmd/dm-helm implements it with Helm's
// library.
type Handler interface {
	Render(ctx context.Context, req *RenderRequest) (engine.Output, error)
	Fetch(ctx context.Context, req *FetchRequest) (map[string][]byte, *FetchedChart, error)
	Lint(ctx context.Context, req *LintRequest) ([]engine.Finding, error)
}

// DefaultMaxRequestBytes bounds one request dm-helm reads: a chart's files
// and values.
const DefaultMaxRequestBytes = 64 << 20

// Serve answers the requests read from r on w, one at a time, until r
// ends (nil) or breaks. A request's failure is its answer's error; a panic
// in h is one too.
func Serve(ctx context.Context, r io.Reader, w io.Writer, h Handler, maxRequest int) error {
	if maxRequest <= 0 {
		maxRequest = DefaultMaxRequestBytes
	}
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	for {
		var req Request
		err := ReadFrame(br, maxRequest, "MaxRequestBytes", &req)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp := answer(ctx, h, &req)
		if err := WriteFrame(bw, resp); err != nil {
			return err
		}
	}
}

// answer runs one request.
func answer(ctx context.Context, h Handler, req *Request) (resp *Response) {
	defer func() {
		if p := recover(); p != nil {
			resp = &Response{Err: ToWire(engine.Invalid("%s failed on this request: %v", Program, p))}
		}
	}()
	switch {
	case req.Op == OpRender && req.Render != nil:
		out, err := h.Render(ctx, req.Render)
		if err != nil {
			return &Response{Err: ToWire(err)}
		}
		return &Response{Output: &out}
	case req.Op == OpFetch && req.Fetch != nil:
		files, c, err := h.Fetch(ctx, req.Fetch)
		if err != nil {
			return &Response{Err: ToWire(err)}
		}
		return &Response{Files: files, Chart: c}
	case req.Op == OpLint && req.Lint != nil:
		fs, err := h.Lint(ctx, req.Lint)
		if err != nil {
			return &Response{Err: ToWire(err)}
		}
		return &Response{Findings: fs}
	}
	return &Response{Err: ToWire(engine.Invalid("%s: unknown request %q", Program, fmt.Sprint(req.Op)))}
}
