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
	"runtime"
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

// proc is the parent's handle of one worker process.
type proc struct {
	cmd *exec.Cmd
	pid int
	in  *os.File
	out *bufio.Writer
	// The job's goroutine reads the worker's frames itself, with the
	// read deadline as its timer: a reading goroutine handing frames over
	// cost a wake-up per frame.
	outR   *os.File
	fr     *frameReader
	exited chan struct{} // closed when the process has been waited for
	state  *os.ProcessState
	stderr *tail
	hello  hello
	// slot is where the worker records the invocation it runs; it is
	// unmapped when the proc is garbage.
	slot *slot

	killOnce sync.Once
	// why is the reason the worker is retired, for Options.OnExit:
	// ExitRecycled unless a limit or a failure ended it.
	why string
	// resolved, gen and scope are what the worker resolved in index
	// generation gen for the caller scope (jobState.resolved).
	resolved map[string]*resolve.Resolution
	gen      uint64
	scope    string
	// sent holds the versions whose files the worker got, by
	// index.Version.CacheKey.
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
	sl, slotFile, err4 := newSlot()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		closeAll()
		sl.close()
		return nil, fmt.Errorf("sandbox: %w: %w", errWorker, err)
	}
	files = append(files, slotFile)
	cmd := exec.Command(p.opts.Command[0], p.opts.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.ExtraFiles = []*os.File{slotFile} // slotFD
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
	slotFile.Close()
	w := &proc{cmd: cmd, pid: cmd.Process.Pid, in: inW, out: bufio.NewWriterSize(inW, 64<<10), slot: sl,
		outR: outR, fr: &frameReader{r: bufio.NewReaderSize(outR, 64<<10), max: p.opts.MaxResultBytes + (1 << 20)},
		exited: make(chan struct{}), stderr: &tail{done: make(chan struct{})}}
	// Unmapped only when nothing can read it any more: a job may locate
	// its error after the worker was killed.
	runtime.AddCleanup(w, func(s *slot) { s.close() }, sl)
	log := p.opts.Logger.With("worker", w.pid)
	go func() {
		w.stderr.read(errR, log)
		errR.Close()
	}()
	go func() {
		_ = cmd.Wait()
		w.state = cmd.ProcessState
		close(w.exited)
	}()
	p.mu.Lock()
	p.live[w] = true
	closed = p.closed
	p.mu.Unlock()

	// From here Close kills the worker, and the read below fails.
	var (
		h    hello
		kind byte
		body []byte
	)
	err := w.outR.SetReadDeadline(time.Now().Add(startTimeout))
	if closed {
		err = fmt.Errorf("the pool was closed: %w", derrors.Unavailable)
	}
	if err == nil {
		kind, body, err = w.fr.next()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("no hello within %s", startTimeout)
		}
	}
	if err == nil && kind != kindHello {
		err = fmt.Errorf("frame %q where the hello was expected", kind)
	}
	if err == nil {
		err = json.Unmarshal(body, &h)
	}
	if err != nil {
		w.why = ExitCrashed
		p.retire(w)
		<-w.exited
		return nil, fmt.Errorf("sandbox: starting a worker: %w: %w%s", errWorker, err, w.stderr.suffix())
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
		_ = w.cmd.Process.Kill()
		w.in.Close()
		// A job reading ends with an error (os.ErrClosed).
		w.outR.Close()
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
	// The same rule as the worker's (worker.run), so both sides forget
	// resolutions at the same job.
	if w.resolved == nil || j.Gen != w.gen || j.Scope != w.scope || len(w.resolved) > maxCachedResolutions {
		w.resolved, w.gen, w.scope = map[string]*resolve.Resolution{}, j.Gen, j.Scope
	}
	if w.sent == nil {
		w.sent = map[string]bool{}
	}
	st := &jobState{resolved: w.resolved, sent: w.sent, started: time.Now(), slot: w.slot, base: w.slot.seq().Load(), lookup: j.lookup()}
	// A worker between jobs is blocked reading its stdin, so the write
	// does not block for long.
	if err := w.send(kindJob, j); err != nil {
		return nil, false, w.died(p, st, fmt.Errorf("sending the job: %w", err))
	}
	o := p.opts
	// The read deadline is the earlier of the job's and the running
	// invocation's; ctx ends the read by moving it to the past.
	totalAt := st.started.Add(o.Expand.TotalTimeout + o.Grace)
	invocationAt := st.started.Add(o.Expand.Timeout + o.Grace)
	stop := context.AfterFunc(ctx, func() { _ = w.outR.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		err := w.outR.SetReadDeadline(earliest(totalAt, invocationAt))
		if ctx.Err() != nil {
			return nil, false, w.canceled(ctx, st)
		}
		var (
			kind byte
			body []byte
		)
		if err == nil {
			kind, body, err = w.fr.next()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			switch now := time.Now(); {
			case ctx.Err() != nil:
				return nil, false, w.canceled(ctx, st)
			case !now.Before(totalAt):
				w.why = ExitTimeout
				w.kill()
				return nil, false, st.limit("TotalTimeout", o.Expand.TotalTimeout, "expansion ran too long; its worker was killed")
			}
			// The invocation's deadline, or a stale interruption: the
			// slot tells which invocation runs and since when, at no cost
			// per invocation.
			if left := st.left(o.Expand.Timeout + o.Grace); left > 0 {
				invocationAt = time.Now().Add(left)
				continue
			}
			w.why = ExitTimeout
			w.kill()
			return nil, false, st.limit("Timeout", o.Expand.Timeout, "template ran too long; its worker was killed")
		}
		if err != nil {
			return nil, false, w.died(p, st, err)
		}
		w.bytes += int64(len(body))
		switch kind {
		case kindCall:
			var c call
			if err := json.Unmarshal(body, &c); err != nil {
				return nil, false, w.broke(err)
			}
			if err := w.send(kindReply, p.answer(ctx, st, &c)); err != nil {
				return nil, false, w.died(p, st, fmt.Errorf("replying: %w", err))
			}
		case kindDone:
			d, result, err := decodeDone(body)
			if err != nil {
				return nil, false, w.broke(err)
			}
			if d.Err != nil {
				return nil, !d.Recycle, d.Err.err()
			}
			return result, !d.Recycle, nil
		default:
			return nil, false, w.broke(fmt.Errorf("unexpected frame %q", kind))
		}
	}
}

// canceled kills the worker of a job whose caller gave up.
func (w *proc) canceled(ctx context.Context, st *jobState) error {
	w.why = ExitCanceled
	w.kill()
	err := fmt.Errorf("expansion stopped at the caller's deadline after %s: %w", time.Since(st.started).Round(time.Millisecond), context.Cause(ctx))
	return st.locate(err)
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

// locate places err at the invocation the worker recorded last in this
// job, if any.
func (st *jobState) locate(err error) error {
	seq, _, p := st.slot.read()
	if seq == st.base || p.Template == "" {
		return err
	}
	return &expand.Error{Path: p.Path, Template: p.Template, Err: err}
}

// left is how long the invocation running may still run within limit; a
// job that has not started one has the whole limit. A start in the
// future (the slot is the worker's to write) gives no more than limit.
func (st *jobState) left(limit time.Duration) time.Duration {
	seq, started, _ := st.slot.read()
	if seq == st.base {
		return limit
	}
	return min(limit-since(started), limit)
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

// earliest returns the earlier of two times.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
