// Package sigproxy verifies and signs through the dm-sigstore program,
// so that dm links no Sigstore library: sigstore-go's packages cost every
// process that links them about a hundred package initialisations and 2
// MB at start (docs/signing.md). dm starts dm-sigstore on its first
// signature to verify or make, and keeps it for the command's life.
//
// The protocol is one JSON object a line each way: a Request on the
// child's standard input, its Response on its standard output.
package sigproxy

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
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/program"
	"github.com/dmhq/dm/internal/signature"
)

// Program is the helper's name, found beside dm or on $PATH.
const Program = "dm-sigstore"

// MaxMessageBytes bounds one request or response line: a version's
// bundles (64 of 256 KiB at most), base64-encoded.
const MaxMessageBytes = 32 << 20

// Request is one request to dm-sigstore: Check (Policy, Subject, Bundles)
// or Sign (Subject, and a key or an identity token).
type Request struct {
	Op      string                  `json:"op"` // "check" or "sign"
	Policy  *signature.PolicyConfig `json:"policy,omitempty"`
	Subject signature.Subject       `json:"subject"`
	Bundles [][]byte                `json:"bundles,omitempty"`
	Sign    *SignRequest            `json:"sign,omitempty"`
}

// SignRequest says how to sign: with Key (a PEM private key; Password
// for a cosign key), or keylessly with IDToken.
type SignRequest struct {
	Key       []byte `json:"key,omitempty"`
	Password  []byte `json:"password,omitempty"`
	IDToken   string `json:"idToken,omitempty"`
	FulcioURL string `json:"fulcioURL,omitempty"`
	RekorURL  string `json:"rekorURL,omitempty"`
}

// Response answers a Request: Result or Refused for a check, Bundle and
// Signer for a sign; Err (with its derrors kind) when it failed otherwise.
type Response struct {
	Result  *signature.Result `json:"result,omitempty"`
	Refused *signature.Error  `json:"refused,omitempty"`
	Bundle  []byte            `json:"bundle,omitempty"`
	Signer  string            `json:"signer,omitempty"`
	Err     *derrors.Wire     `json:"err,omitempty"`
}

// Client is a signature.Checker (and a signer) backed by dm-sigstore.
// It is safe for concurrent use; requests run one at a time.
type Client struct {
	// Path is dm-sigstore; empty finds it with Find.
	Path string
	// Getenv reads $DM_SIGSTORE; nil is os.Getenv.
	Getenv func(string) string
	// Timeout bounds one request (60s when zero): a keyless signature
	// waits on Fulcio and Rekor.
	Timeout time.Duration

	mu    sync.Mutex
	child *child
}

var _ signature.Checker = (*Client)(nil)

// Check verifies bundles of s against p in dm-sigstore.
func (c *Client) Check(ctx context.Context, p *signature.PolicyConfig, s signature.Subject, bundles [][]byte) (*signature.Result, error) {
	resp, err := c.do(ctx, &Request{Op: "check", Policy: p, Subject: s, Bundles: bundles})
	if err != nil {
		return nil, err
	}
	if resp.Refused != nil {
		return nil, resp.Refused
	}
	if resp.Result == nil {
		return nil, fmt.Errorf("%s answered a check without a result", Program)
	}
	return resp.Result, nil
}

// Sign signs s in dm-sigstore and returns the bundle and who signed.
func (c *Client) Sign(ctx context.Context, s signature.Subject, r SignRequest) ([]byte, string, error) {
	resp, err := c.do(ctx, &Request{Op: "sign", Subject: s, Sign: &r})
	if err != nil {
		return nil, "", err
	}
	if len(resp.Bundle) == 0 {
		return nil, "", fmt.Errorf("%s answered a sign without a bundle", Program)
	}
	return resp.Bundle, resp.Signer, nil
}

// Close ends the child, if one runs.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.child == nil {
		return nil
	}
	err := c.child.close()
	c.child = nil
	return err
}

func (c *Client) do(ctx context.Context, req *Request) (*Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.child == nil {
		ch, err := c.start()
		if err != nil {
			return nil, err
		}
		c.child = ch
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	resp, err := c.child.roundTrip(ctx, req, timeout)
	if err != nil {
		// A child that failed a request is not trusted with the next.
		c.child.kill()
		c.child = nil
		return nil, err
	}
	if resp.Err != nil {
		return nil, resp.Err.Cause()
	}
	return resp, nil
}

// Find returns the dm-sigstore to run: $DM_SIGSTORE when set, else
// dm-sigstore beside this program, else on $PATH.
func Find(getenv func(string) string) (string, error) {
	return program.Find(getenv, Program, "DM_SIGSTORE", "signatures are verified and made",
		"install it beside dm: go install github.com/dmhq/dm/cmd/dm-sigstore@latest (or make install), or name it with $DM_SIGSTORE")
}

// child is one dm-sigstore process.
type child struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
	done   chan struct{}
}

func (c *Client) start() (*child, error) {
	p := c.Path
	if p == "" {
		var err error
		if p, err = Find(c.Getenv); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(p)
	// The child needs no secret of dm's environment: a key's password
	// and a token come in the request.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch := &child{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = &limitedWriter{b: ch.stderr, n: 4096}
	if err := cmd.Start(); err != nil {
		return nil, derrors.Errorf(derrors.Unavailable, "starting %s: %v", p, err)
	}
	go func() { _ = cmd.Wait(); close(ch.done) }()
	return ch, nil
}

func (ch *child) roundTrip(ctx context.Context, req *Request, timeout time.Duration) (*Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	type answer struct {
		resp *Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		if _, err := ch.in.Write(append(b, '\n')); err != nil {
			got <- answer{nil, err}
			return
		}
		line, err := readLine(ch.out, MaxMessageBytes)
		if err != nil {
			got <- answer{nil, err}
			return
		}
		var resp Response
		if err := json.Unmarshal(line, &resp); err != nil {
			got <- answer{nil, fmt.Errorf("%s's answer is not JSON: %v", Program, err)}
			return
		}
		got <- answer{&resp, nil}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-got:
		if a.err != nil {
			return nil, derrors.Errorf(derrors.Unavailable, "%s: %v%s", Program, a.err, ch.stderrSuffix())
		}
		return a.resp, nil
	case <-ch.done:
		return nil, derrors.Errorf(derrors.Unavailable, "%s exited%s", Program, ch.stderrSuffix())
	case <-t.C:
		return nil, derrors.Errorf(derrors.Unavailable, "%s did not answer within %s", Program, timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readLine reads one line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > max {
			return nil, fmt.Errorf("a message over %d bytes", max)
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// ReadRequest reads one request for dm-sigstore; io.EOF when there are
// no more.
func ReadRequest(r *bufio.Reader) (*Request, error) {
	line, err := readLine(r, MaxMessageBytes)
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil, io.EOF
		}
		return nil, err
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, fmt.Errorf("request is not JSON: %v", err)
	}
	return &req, nil
}

// WriteResponse writes one response of dm-sigstore.
func WriteResponse(w io.Writer, resp *Response) error {
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (ch *child) stderrSuffix() string {
	if s := strings.TrimSpace(ch.stderr.String()); s != "" {
		return ": " + s
	}
	return ""
}

func (ch *child) close() error {
	ch.in.Close()
	select {
	case <-ch.done:
	case <-time.After(5 * time.Second):
		ch.kill()
	}
	return nil
}

func (ch *child) kill() {
	if ch.cmd.Process != nil {
		_ = ch.cmd.Process.Kill()
	}
	ch.in.Close()
}

// limitedWriter keeps the first n bytes of what the child writes to
// stderr, for errors.
type limitedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
	n  int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.n - w.b.Len(); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		w.b.Write(p[:room])
	}
	return len(p), nil
}
