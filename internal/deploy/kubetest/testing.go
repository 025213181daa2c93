package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// shared is the package's one apiserver, started by the first Shared call
// while Main runs and stopped when Main's tests end. It is the only state
// kept between tests, and Main is what scopes it to one test binary.
var shared struct {
	mu     sync.Mutex
	inMain bool
	env    *Env
	err    error
}

// Main runs the tests of a package whose TestMain calls it, then stops the
// apiserver Shared started (if any test asked for one) and exits with the
// tests' code:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it runs the tests, stops the shared
// apiserver and returns the tests' code, for a TestMain that has its own
// clean-up to do before it exits.
func Run(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.env != nil {
		if err := shared.env.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "kubetest:", err)
		}
		shared.env = nil
	}
	shared.inMain = false
	shared.mu.Unlock()
	return code
}

// Shared returns the package's apiserver, starting it on first use. It
// needs a TestMain that calls Main; without one it gives the test an Env of
// its own, as Start does. With -short (make test-short) the test is
// skipped; otherwise a missing kube-apiserver or etcd fails it with how to
// get them (make test builds them first).
//
// Tests that share an Env must not disturb one another: each takes its own
// namespace (Namespace) and restarts the apiserver only if it does not run
// in parallel.
func Shared(t testing.TB) *Env {
	t.Helper()
	return SharedWith(t, Options{})
}

// SharedWith is Shared with opts for the first launch (Binaries, when
// unset, from FindBinaries): a package whose tests need
// kube-controller-manager asks for it in every call.
func SharedWith(t testing.TB, opts Options) *Env {
	t.Helper()
	skipShort(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		return StartWith(t, opts)
	}
	if shared.env == nil && shared.err == nil {
		shared.env, shared.err = launch(opts)
	}
	if shared.err != nil {
		fail(t, shared.err)
	}
	// A test that stopped the apiserver and failed before starting it
	// again must not fail the tests after it.
	if shared.env.api == nil {
		if err := shared.env.StartAPIServer(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	logOnFailure(t, shared.env)
	return shared.env
}

// Start returns an Env of the test's own, closed when the test ends. With
// -short the test is skipped; otherwise a missing kube-apiserver or etcd
// fails it with how to get them.
func Start(t testing.TB) *Env {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with opts (Binaries, when unset, from FindBinaries).
func StartWith(t testing.TB, opts Options) *Env {
	t.Helper()
	skipShort(t)
	env, err := launch(opts)
	if err != nil {
		fail(t, err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("kubetest: %v", err)
		}
	})
	logOnFailure(t, env)
	return env
}

func launch(opts Options) (*Env, error) {
	if opts.Binaries.APIServer == "" {
		bins, err := FindBinaries()
		if err != nil {
			return nil, err
		}
		opts.Binaries = bins
	}
	return Launch(context.Background(), opts)
}

// SkipReason is why a test that needs an apiserver is skipped with -short.
const SkipReason = "needs kube-apiserver and etcd: -short (make test-short) leaves the apiserver suites out"

// skipShort skips the test with -short, the one deliberate way to run
// without an apiserver: a missing program is never a silent skip.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipReason)
	}
}

// fail fails the test: a suite that cannot run is a failure, not a skip,
// so that `make test` never passes by leaving it out.
func fail(t testing.TB, err error) {
	t.Helper()
	t.Fatal(err)
}

// logOnFailure prints the tail of the apiserver's log when the test fails.
// Cleanups run in reverse order, so for Start this runs before Close.
func logOnFailure(t testing.TB, env *Env) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubetest: last lines of %s:\n%s", env.APIServerLog, env.LogTail(20))
		}
	})
}

// Namespace creates a namespace for the test, named after it, and returns
// its name. The namespace and its objects stay when the test ends: without
// a controller-manager a namespace's deletion never finishes, and the Env
// goes away with its test binary.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := dnsLabel(t.Name(), 63-7) + "-" + hex.EncodeToString(b)
	if err := e.CreateNamespace(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return name
}

// dnsLabel turns s into a lowercase DNS label of at most max characters.
func dnsLabel(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= max {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" || out[0] < 'a' {
		out = "t" + out
		if len(out) > max {
			out = out[:max]
		}
	}
	return strings.TrimRight(out, "-")
}

// Restart stops the apiserver and starts it again on the same port with the
// same etcd, failing the test if it does not come back.
func (e *Env) Restart(t testing.TB) {
	t.Helper()
	if err := e.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := e.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
}
