package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// startTimeout bounds a worker's start, up to its hello.
const startTimeout = 10 * time.Second

// frame is one frame read from a worker, or the error that ended reading.
type frame struct {
	kind byte
	body []byte
	err  error
}

// proc is the parent's handle of one worker process.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	in     *os.File
	out    *bufio.Writer
	frames chan frame
	exited chan struct{} // closed when the process has been waited for
	stop   chan struct{} // closed by kill: nobody reads frames any more
	state  *os.ProcessState
	stderr *tail
	hello  hello

	killOnce sync.Once
	// why is the reason the worker is retired, for Options.OnExit:
	// ExitRecycled unless a limit or a failure ended it.
	why string
	// resolved and gen are what the worker resolved in index generation
	// gen (jobState.resolved).
	resolved map[string]*resolve.Resolution
	gen      uint64
	// sent holds the digests of the versions whose files the worker got.
	sent map[string]bool
	// jobs and bytes count the worker's life, for recycling.
	jobs  int
	bytes int64
}

// start starts a worker and waits for its hello.
func (p *Pool) start() (*proc, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("sandbox: the pool is closed: %w", derrors.Unavailable)
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("sandbox: %w: %w", errWorker, err)
	}
	cmd := exec.Command(p.opts.Command[0], p.opts.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.Env = workerEnv(string(p.cfg))
	// A worker never outlives its parent.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("sandbox: starting a worker: %w: %w", errWorker, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	w := &proc{cmd: cmd, pid: cmd.Process.Pid, in: inW, out: bufio.NewWriterSize(inW, 64<<10),
		frames: make(chan frame, 1), exited: make(chan struct{}), stop: make(chan struct{}), stderr: &tail{done: make(chan struct{})}}
	log := p.opts.Logger.With("worker", w.pid)
	go func() {
		w.stderr.read(errR, log)
		errR.Close()
	}()
	go func() {
		r := bufio.NewReaderSize(outR, 64<<10)
		defer outR.Close()
		for {
			kind, body, err := readFrame(r, p.opts.MaxResultBytes+(1<<20))
			select {
			case w.frames <- frame{kind, body, err}:
			case <-w.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		w.state = cmd.ProcessState
		close(w.exited)
	}()
	p.mu.Lock()
	p.live[w] = true
	p.mu.Unlock()

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var f frame
	select {
	case f = <-w.frames:
	case <-timer.C:
		f.err = fmt.Errorf("no hello within %s", startTimeout)
	case <-p.done:
		// Closed while this worker started: Close did not see it.
		f.err = fmt.Errorf("the pool was closed: %w", derrors.Unavailable)
	}
	var h hello
	if f.err == nil && f.kind != kindHello {
		f.err = fmt.Errorf("frame %q where the hello was expected", f.kind)
	}
	if f.err == nil {
		f.err = json.Unmarshal(f.body, &h)
	}
	if f.err != nil {
		w.why = ExitCrashed
		p.retire(w)
		<-w.exited
		return nil, fmt.Errorf("sandbox: starting a worker: %w: %w%s", errWorker, f.err, w.stderr.suffix())
	}
	w.hello = h
	log.Debug("expansion worker started", "landlock_abi", h.Landlock, "memory_limit", h.MemoryLimit)
	if len(h.Problems) > 0 {
		p.warnOnce.Do(func() {
			log.Warn("expansion workers run with fewer kernel limits", "missing", strings.Join(h.Problems, "; "))
		})
	}
	return w, nil
}

// workerEnv is the worker's environment: its configuration and nothing
// else of the parent's, so tokens never reach a worker. Coverage and race
// detector settings pass, for tests.
func workerEnv(cfg string) []string {
	env := []string{envWorker + "=" + cfg}
	for _, k := range []string{"GOCOVERDIR", "GORACE", "GOTRACEBACK"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// kill ends the worker at once.
func (w *proc) kill() {
	w.killOnce.Do(func() {
		close(w.stop)
		_ = w.cmd.Process.Kill()
		w.in.Close()
	})
}

// send writes one frame to the worker.
func (w *proc) send(kind byte, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.bytes += int64(len(body))
	return writeRaw(w.out, kind, body)
}

// do runs one job. keep reports whether the worker may serve another.
func (w *proc) do(ctx context.Context, p *Pool, j *job) (raw json.RawMessage, keep bool, err error) {
	w.jobs++
	if w.resolved == nil || j.Gen != w.gen {
		w.resolved, w.gen = map[string]*resolve.Resolution{}, j.Gen
	}
	if w.sent == nil {
		w.sent = map[string]bool{}
	}
	st := &jobState{resolved: w.resolved, sent: w.sent, started: time.Now()}
	// A worker between jobs is blocked reading its stdin, so the write
	// does not block for long.
	body, err := json.Marshal(j)
	if err != nil {
		return nil, true, fmt.Errorf("sandbox: encoding the job: %w", err)
	}
	w.bytes += int64(len(body))
	if err := writeRaw(w.out, kindJob, body); err != nil {
		return nil, false, w.died(p, st, fmt.Errorf("sending the job: %w", err))
	}
	o := p.opts
	total := time.NewTimer(o.Expand.TotalTimeout + o.Grace)
	defer total.Stop()
	// perTemplate runs while a template is rendering.
	perTemplate := time.NewTimer(time.Hour)
	perTemplate.Stop()
	defer perTemplate.Stop()
	for {
		select {
		case f := <-w.frames:
			if f.err != nil {
				return nil, false, w.died(p, st, f.err)
			}
			w.bytes += int64(len(f.body))
			switch f.kind {
			case kindTemplate:
				var pr progress
				if err := json.Unmarshal(f.body, &pr); err != nil {
					return nil, false, w.broke(err)
				}
				st.path, st.template = pr.Path, pr.Template
				perTemplate.Reset(o.Expand.Timeout + o.Grace)
			case kindCall:
				var c call
				if err := json.Unmarshal(f.body, &c); err != nil {
					return nil, false, w.broke(err)
				}
				if err := w.send(kindReply, p.answer(ctx, st, &c)); err != nil {
					return nil, false, w.died(p, st, fmt.Errorf("replying: %w", err))
				}
			case kindDone:
				var d done
				if err := json.Unmarshal(f.body, &d); err != nil {
					return nil, false, w.broke(err)
				}
				if d.Err != nil {
					return nil, !d.Recycle, d.Err.err()
				}
				return d.Result, !d.Recycle, nil
			default:
				return nil, false, w.broke(fmt.Errorf("unexpected frame %q", f.kind))
			}
		case <-perTemplate.C:
			w.why = ExitTimeout
			w.kill()
			return nil, false, st.limit("Timeout", o.Expand.Timeout, "template ran too long; its worker was killed")
		case <-total.C:
			w.why = ExitTimeout
			w.kill()
			return nil, false, st.limit("TotalTimeout", o.Expand.TotalTimeout, "expansion ran too long; its worker was killed")
		case <-ctx.Done():
			w.why = ExitCanceled
			w.kill()
			err := fmt.Errorf("expansion stopped at the caller's deadline after %s: %w", time.Since(st.started).Round(time.Millisecond), context.Cause(ctx))
			return nil, false, st.locate(err)
		}
	}
}

// broke kills a worker that broke the protocol.
func (w *proc) broke(err error) error {
	w.why = ExitCrashed
	w.kill()
	return fmt.Errorf("sandbox: %w: protocol: %w", errWorker, err)
}

// died explains why reading from a worker failed: it answered too much, or
// it died, and then of what.
func (w *proc) died(p *Pool, st *jobState, err error) error {
	if errors.Is(err, errFrameTooLarge) {
		w.why = ExitAnswerSize
		w.kill()
		return st.limit("MaxResultBytes", formatBytes(uint64(p.opts.MaxResultBytes)), "the worker's answer is too large")
	}
	// Its output ended: the worker is exiting, or broke down; see how
	// before killing it, so a SIGKILL seen is the kernel's, not ours.
	killedByKernel := false
	select {
	case <-w.exited:
		killedByKernel = w.signaled(syscall.SIGKILL)
	case <-time.After(time.Second):
	}
	w.kill()
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
	}
	select {
	case <-w.stderr.done:
	case <-time.After(time.Second):
	}
	msg := w.stderr.String()
	switch {
	case outOfMemory(msg) || killedByKernel:
		// The only SIGKILL the kernel sends a worker unasked is the
		// out-of-memory killer's.
		w.why = ExitMemory
		return st.limit("MaxMemory", formatBytes(p.opts.MaxMemory), "template used too much memory; its worker was stopped")
	case strings.Contains(msg, cpuLimitMessage) || w.signaled(syscall.SIGXCPU):
		w.why = ExitCPU
		return st.limit("TotalTimeout", p.opts.Expand.TotalTimeout, "expansion used more CPU time than its budget (twice the limit); its worker was stopped")
	}
	w.why = ExitCrashed
	status := "worker ended"
	if st := w.exitState(); st != nil {
		status = "worker " + st.String()
	}
	return st.locate(fmt.Errorf("expansion worker died (%s: %v): %w%s: %w", status, err, errWorker, w.stderr.suffix(), derrors.Unavailable))
}

// outOfMemory tells whether a dead worker's stderr says an allocation
// failed: the Go runtime's "fatal error: runtime: out of memory", a thread
// it could not create, or the race detector's allocator (in tests).
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "failed to create new OS thread", "ThreadSanitizer failed to allocate", "failed to mmap"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// exitState is the worker's exit status, nil while it runs.
func (w *proc) exitState() *os.ProcessState {
	select {
	case <-w.exited:
		return w.state
	default:
		return nil
	}
}

func (w *proc) signaled(sig syscall.Signal) bool {
	st := w.exitState()
	if st == nil {
		return false
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// limit is a limit error located at the invocation that was running.
func (st *jobState) limit(field string, lim any, what string) error {
	return st.locate(&expand.LimitError{Field: field, Limit: lim, What: what})
}

func (st *jobState) locate(err error) error {
	if st.template == "" {
		return err
	}
	return &expand.Error{Path: st.path, Template: st.template, Err: err}
}

// stripFindings returns v without its lint findings, which workers do not
// need.
func stripFindings(v *index.Version) *index.Version {
	if len(v.Findings) == 0 {
		return v
	}
	c := *v
	c.Findings = nil
	return &c
}

// tail keeps the start and the end of a worker's stderr, and logs its
// first lines: a dying Go program prints every goroutine's stack.
type tail struct {
	mu    sync.Mutex
	first []string
	last  []string
	done  chan struct{}
}

const (
	tailLines   = 8
	loggedLines = 20
)

func (t *tail) read(r io.Reader, log interface{ Warn(string, ...any) }) {
	defer close(t.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if n < loggedLines {
			log.Warn("expansion worker", "stderr", line)
		}
		n++
		t.mu.Lock()
		if len(t.first) < tailLines {
			t.first = append(t.first, line)
		} else {
			t.last = append(t.last, line)
			if len(t.last) > tailLines {
				t.last = t.last[1:]
			}
		}
		t.mu.Unlock()
	}
	// Drain what the scanner refused (an over-long line).
	_, _ = io.Copy(io.Discard, r)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(append([]string{}, t.first...), t.last...), "\n")
}

// suffix is the first line of stderr that explains a failure, for errors.
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.first {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "expand worker:") {
			return ": " + l
		}
	}
	return ""
}
