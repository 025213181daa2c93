package helmproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// Handler renders charts: the work of every chart program (dm-helm and
// dm-helm-render implement it with Helm's library). A program that also
// downloads or lints charts implements FetchHandler or LintHandler; the
// others answer such requests with an error.
type Handler interface {
	Render(ctx context.Context, req *RenderRequest) (engine.Output, error)
}

// FetchHandler is a Handler that downloads charts (dm-helm).
type FetchHandler interface {
	Fetch(ctx context.Context, req *FetchRequest) (map[string][]byte, *FetchedChart, error)
}

// LintHandler is a Handler that runs Helm's lint rules (dm-helm).
type LintHandler interface {
	Lint(ctx context.Context, req *LintRequest) ([]engine.Finding, error)
}

// DefaultMaxRequestBytes bounds one request dm-helm reads: a chart's files
// and values.
const DefaultMaxRequestBytes = 64 << 20

// Serve answers the requests read from r on w, one at a time, until r
// ends (nil) or breaks. A request's failure is its answer's error; a panic
// in h is one too, naming the program (name) that failed.
func Serve(ctx context.Context, name string, r io.Reader, w io.Writer, h Handler, maxRequest int) error {
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
		resp := answer(ctx, name, h, &req)
		if err := WriteFrame(bw, resp); err != nil {
			return err
		}
	}
}

// answer runs one request.
func answer(ctx context.Context, name string, h Handler, req *Request) (resp *Response) {
	defer func() {
		if p := recover(); p != nil {
			resp = &Response{Err: ToWire(engine.Invalid("%s failed on this request: %v", name, p))}
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
		fh, ok := h.(FetchHandler)
		if !ok {
			return &Response{Err: ToWire(derrors.Errorf(derrors.InvalidArgument, "this program does not download charts (%s does)", Program))}
		}
		files, c, err := fh.Fetch(ctx, req.Fetch)
		if err != nil {
			return &Response{Err: ToWire(err)}
		}
		return &Response{Files: files, Chart: c}
	case req.Op == OpLint && req.Lint != nil:
		lh, ok := h.(LintHandler)
		if !ok {
			return &Response{Err: ToWire(derrors.Errorf(derrors.InvalidArgument, "this program does not lint charts (%s does)", Program))}
		}
		fs, err := lh.Lint(ctx, req.Lint)
		if err != nil {
			return &Response{Err: ToWire(err)}
		}
		return &Response{Findings: fs}
	}
	return &Response{Err: ToWire(engine.Invalid("unknown request %q", fmt.Sprint(req.Op)))}
}

// Main is the whole of a chart program's main (dm-helm, dm-helm-render),
// named name: it takes no arguments, bounds its own memory (charts are
// other people's code), and serves h on stdin and stdout until stdin ends
// or a signal. It returns the exit code.
func Main(name string, h Handler) int {
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "%s renders Helm charts for dm, which starts it; it takes no arguments\n", name)
		return 2
	}
	for _, p := range ApplyLimits(DefaultMaxMemory) {
		fmt.Fprintf(os.Stderr, "%s: warning: %s\n", name, p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, name, os.Stdin, os.Stdout, h, 0); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
