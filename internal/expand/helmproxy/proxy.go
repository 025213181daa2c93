package helmproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/expand/engine"
	dmprogram "github.com/dmhq/dm/internal/program"
)

// Program is the name of the program that renders, downloads and lints
// charts for dm.
const Program = "dm-helm"

// RenderProgram is the name of the program that only renders charts, and
// only offline: it links none of dm-helm's downloaders, lint rules and
// cluster client, so an expansion pays a smaller start-up. Without it,
// dm-helm renders.
const RenderProgram = "dm-helm-render"

// installHint says how to get dm-helm and dm-helm-render, for the errors
// of a program not found by its variable env.
func installHint(env string) string {
	return "install it beside dm: go install github.com/dmhq/dm/cmd/dm-helm@latest github.com/dmhq/dm/cmd/dm-helm-render@latest (or make install), or name it with $" + env
}

// Defaults of Engine's limits.
const (
	// DefaultTimeout bounds one request to dm-helm: a render, or a fetch.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxResponseBytes bounds one answer of dm-helm.
	DefaultMaxResponseBytes = 64 << 20
)

// Engine is the helm language of dm's engine table, rendered by dm-helm.
// It starts dm-helm on its first request and keeps it until Close; a
// request past its time, or a dm-helm that dies, ends the process, and the
// next request starts another. An offline render goes to dm-helm-render
// instead (when installed), unless dm-helm already runs: most commands
// that meet a chart only render it, and dm-helm-render starts for less.
// Engine is safe for concurrent use; requests run one at a time.
type Engine struct {
	// Path is dm-helm; empty finds it with Find.
	Path string
	// RenderPath is dm-helm-render; empty finds it with FindRender, and
	// dm-helm renders when it is not installed.
	RenderPath string
	// Getenv reads $DM_HELM and $DM_HELM_RENDER for Find and FindRender;
	// nil is os.Getenv.
	Getenv func(string) string
	// KubeVersion and APIVersions are every render's .Capabilities (empty:
	// Helm's offline default, helm template's).
	KubeVersion string
	APIVersions []string
	// Cluster, when set, is the cluster charts are deployed to: renders
	// take its .Capabilities and lookup reads it (RenderRequest.Cluster).
	Cluster *Cluster
	// Timeout bounds one request; MaxResponseBytes one answer.
	Timeout          time.Duration
	MaxResponseBytes int

	mu     sync.Mutex
	child  *child // dm-helm
	render *child // dm-helm-render
}

var _ engine.Engine = (*Engine)(nil)

// Name returns "helm".
func (*Engine) Name() string { return "helm" }

// Render renders the chart whose Chart.yaml is inv.File, in dm-helm.
func (e *Engine) Render(ctx context.Context, inv engine.Invocation) (engine.Output, error) {
	req := &Request{Op: OpRender, Render: &RenderRequest{
		File: inv.File, Files: inv.Files, FilesKey: inv.FilesKey, Properties: inv.Properties,
		Env: inv.Env, Label: inv.Label, KubeVersion: e.KubeVersion, APIVersions: e.APIVersions,
		Cluster: e.Cluster,
	}}
	resp, err := e.do(ctx, req)
	if err != nil {
		return engine.Output{}, engine.At(inv.File, 0, err)
	}
	if err := resp.Err.Err(); err != nil {
		return engine.Output{}, err
	}
	if resp.Output == nil {
		return engine.Output{}, engine.At(inv.File, 0, fmt.Errorf("%s answered a render without output", Program))
	}
	return *resp.Output, nil
}

// Fetch downloads a chart in dm-helm and returns its files (relative to
// the chart's directory) and what it is.
func (e *Engine) Fetch(ctx context.Context, f FetchRequest) (map[string][]byte, *FetchedChart, error) {
	resp, err := e.do(ctx, &Request{Op: OpFetch, Fetch: &f})
	if err != nil {
		return nil, nil, err
	}
	if err := resp.Err.Err(); err != nil {
		return nil, nil, err
	}
	if resp.Chart == nil {
		return nil, nil, fmt.Errorf("%s answered a fetch without a chart", Program)
	}
	return resp.Files, resp.Chart, nil
}

// Lint runs Helm's lint rules on the chart whose Chart.yaml is file, in
// dm-helm: dm lint runs them as registryd does, without linking Helm.
func (e *Engine) Lint(ctx context.Context, files map[string][]byte, file string) ([]engine.Finding, error) {
	resp, err := e.do(ctx, &Request{Op: OpLint, Lint: &LintRequest{File: file, Files: files, KubeVersion: e.KubeVersion}})
	if err != nil {
		return nil, err
	}
	if err := resp.Err.Err(); err != nil {
		return nil, err
	}
	return resp.Findings, nil
}

var _ engine.Linter = (*Engine)(nil)

// Close ends dm-helm and dm-helm-render, if they run.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range []**child{&e.child, &e.render} {
		if *c != nil {
			(*c).close()
			*c = nil
		}
	}
	return nil
}

// do sends one request and reads its answer, starting the program that
// answers it if needed: an offline render goes to a running dm-helm, else
// to dm-helm-render; the rest to dm-helm.
func (e *Engine) do(ctx context.Context, req *Request) (*Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	slot := &e.child
	if req.Op == OpRender && req.Render.Cluster == nil && e.child == nil {
		slot = &e.render
	}
	if *slot == nil {
		c, err := e.start(slot == &e.render)
		if err != nil {
			return nil, err
		}
		*slot = c
	}
	c := *slot
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	max := e.MaxResponseBytes
	if max <= 0 {
		max = DefaultMaxResponseBytes
	}
	resp, err := c.roundTrip(ctx, req, timeout, max)
	if err != nil {
		// Whatever state it is in, this process is not asked again.
		c.kill()
		*slot = nil
	}
	return resp, err
}

// Find returns the dm-helm to run: $DM_HELM when set, else dm-helm beside
// this program's executable (where make install and go install put it),
// else dm-helm on $PATH. Not finding it is an error saying what to
// install.
func Find(getenv func(string) string) (string, error) {
	return find(getenv, Program, "DM_HELM")
}

// FindRender returns the dm-helm-render to run, found as Find finds
// dm-helm ($DM_HELM_RENDER, beside this program, $PATH).
func FindRender(getenv func(string) string) (string, error) {
	return find(getenv, RenderProgram, "DM_HELM_RENDER")
}

func find(getenv func(string) string, program, env string) (string, error) {
	return dmprogram.Find(getenv, program, env, "Helm charts are rendered", installHint(env))
}

// child is one dm-helm or dm-helm-render process.
type child struct {
	name   string // Program or RenderProgram, for errors
	cmd    *exec.Cmd
	in     io.WriteCloser
	w      *bufio.Writer
	out    io.ReadCloser
	stderr *tailBuffer
	done   chan struct{} // closed when the process has exited
}

// start starts dm-helm, or dm-helm-render for renders when installed.
func (e *Engine) start(render bool) (*child, error) {
	getenv := e.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p, name, env := e.Path, Program, "DM_HELM"
	if render {
		// A dm-helm named explicitly (Path, $DM_HELM) renders too, unless
		// dm-helm-render is named as explicitly; one named that is not
		// there is an error, one not installed is not.
		switch {
		case e.RenderPath != "":
			p, name, env = e.RenderPath, RenderProgram, "DM_HELM_RENDER"
		case getenv("DM_HELM_RENDER") != "":
			r, err := FindRender(getenv)
			if err != nil {
				return nil, err
			}
			p, name, env = r, RenderProgram, "DM_HELM_RENDER"
		case e.Path == "" && getenv("DM_HELM") == "":
			if r, err := FindRender(getenv); err == nil {
				p, name, env = r, RenderProgram, "DM_HELM_RENDER"
			}
		}
	}
	if p == "" {
		var err error
		if p, err = Find(getenv); err != nil {
			return nil, err
		}
	}
	// Not tied to a request's context: the process outlives it.
	cmd := exec.Command(p)
	cmd.Env = childEnv(os.Environ())
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &child{name: name, cmd: cmd, in: in, w: bufio.NewWriterSize(in, 64<<10), out: out, stderr: &tailBuffer{max: 4 << 10}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w; %s", p, err, installHint(env))
	}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// childGOGC is dm-helm's GC percent: a short-lived process whose memory
// RLIMIT_AS and a soft limit bound (ApplyLimits), which collects less often
// than Go's default, also while its packages initialise, which is most of
// its start-up.
const childGOGC = "GOGC=400"

// childEnv is dm-helm's environment: environ with childGOGC unless it sets
// GOGC.
func childEnv(environ []string) []string {
	if slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") }) {
		return environ
	}
	return append(slices.Clip(environ), childGOGC)
}

// roundTrip sends req and reads the answer within timeout.
func (c *child) roundTrip(ctx context.Context, req *Request, timeout time.Duration, max int) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		resp *Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		if err := WriteFrame(c.w, req); err != nil {
			ch <- result{err: err}
			return
		}
		var resp Response
		err := ReadFrame(c.out, max, "MaxResponseBytes", &resp)
		ch <- result{&resp, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			var le *engine.LimitError
			if errors.As(r.err, &le) {
				return nil, r.err
			}
			c.kill()
			return nil, fmt.Errorf("%s failed: %w%s", c.name, r.err, c.stderrSuffix())
		}
		return r.resp, nil
	case <-ctx.Done():
		c.kill()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && context.Cause(ctx) == context.DeadlineExceeded {
			return nil, engine.Limit("Timeout", timeout, "%s's %s request", c.name, req.Op)
		}
		return nil, ctx.Err()
	}
}

// stderrSuffix is what dm-helm wrote on stderr, for an error.
func (c *child) stderrSuffix() string {
	<-c.done
	if s := strings.TrimSpace(c.stderr.String()); s != "" {
		return ": " + s
	}
	return ""
}

// close ends the process: its stdin closes, so it exits; one that does not
// within a second is killed.
func (c *child) close() error {
	_ = c.in.Close()
	select {
	case <-c.done:
	case <-time.After(time.Second):
		c.kill()
	}
	return nil
}

// kill kills the process and waits for it.
func (c *child) kill() {
	_ = c.in.Close()
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
	<-c.done
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if t.b.Len() > t.max {
		t.b.Next(t.b.Len() - t.max)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
