package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary serve as the pool's worker: the pool
// re-executes os.Executable, which here is the test binary.
func TestMain(m *testing.M) {
	if IsWorker() {
		if len(os.Args) > 1 && os.Args[1] == lookupWorkerArg {
			ServeWorker(lookupEngine{})
		}
		ServeWorker()
	}
	if os.Getenv("SANDBOX_TEST_PROBE") != "" {
		probe()
	}
	os.Exit(m.Run())
}

func exampleResolver(t testing.TB) *resolve.Resolver {
	t.Helper()
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(os.DirFS("../expand/testdata/registry"))}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry(dm.ExampleRegistryPrefix)
	return resolve.New(def, reg)
}

func newPool(t testing.TB, o Options) *Pool {
	t.Helper()
	if o.Resolver == nil {
		o.Resolver = exampleResolver(t)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

const composite = "resources:\n- name: app\n  type: stack:v1\n  properties: {image: nginx}\n"

// TestSameAsInProcess: a worker's expansion equals the in-process one,
// references resolved through the parent.
func TestSameAsInProcess(t *testing.T) {
	ctx := t.Context()
	r := exampleResolver(t)
	p := newPool(t, Options{Resolver: r, Workers: 1})
	svc := api.NewService(r, expand.Options{})
	for _, req := range []*api.ExpandRequest{
		{Config: composite, Deployment: "d", Namespace: "ns"},
		{Ref: "single:v1", Properties: map[string]any{"app": "shop", "replicas": int64(3)}},
		{Ref: "ostpl:v1", Properties: map[string]any{"NAME": "db"}},
		{Ref: "single:v1", Registry: "github.com/acme/templates", Properties: map[string]any{"app": "shop", "ratio": 0.5}},
		// The worker applies the request's options: without validation
		// this expands (with a warning), as in-process.
		{Ref: "single:v1", SkipSchemaValidation: true, Properties: map[string]any{"app": int64(3)}},
	} {
		want, err := svc.Expand(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 { // the second time from warm caches
			got, err := p.Expand(ctx, req)
			if err != nil {
				t.Fatalf("%+v (run %d): %v", req, i, err)
			}
			if ostpl := req.Ref == "ostpl:v1"; ostpl {
				// Generated values differ between runs.
				if len(got.Config.Resources) != len(want.Config.Resources) {
					t.Errorf("%s: %d resources, want %d", req.Ref, len(got.Config.Resources), len(want.Config.Resources))
				}
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%+v (run %d):\n got %+v\nwant %+v", req, i, got, want)
			}
		}
	}
}

// TestErrorsCrossThePipe: engine errors keep their message, location and
// sentinel.
func TestErrorsCrossThePipe(t *testing.T) {
	ctx := t.Context()
	r := exampleResolver(t)
	p := newPool(t, Options{Resolver: r, Workers: 1})
	svc := api.NewService(r, expand.Options{})
	for _, req := range []*api.ExpandRequest{
		{Ref: "nosuch:v1"},
		{Ref: "single:v1", Properties: map[string]any{"app": 3}},
		{Config: "resources:\n- name: a\n  type: t.jinja\n", Imports: map[string]string{"t.jinja": "{{ nope( }}"}},
		{Config: "resources: [", ConfigName: "c.yaml"},
		{Ref: "single:v1", Strict: true, Properties: map[string]any{"app": "shop", "ratio": 0.5}},
	} {
		_, want := svc.Expand(ctx, req)
		_, got := p.Expand(ctx, req)
		if want == nil || got == nil {
			t.Fatalf("%+v: errors %v, %v", req, want, got)
		}
		if got.Error() != want.Error() {
			t.Errorf("%+v:\n got %v\nwant %v", req, got, want)
		}
		if derrors.HTTPStatus(got) != derrors.HTTPStatus(want) {
			t.Errorf("%+v: status %d, want %d", req, derrors.HTTPStatus(got), derrors.HTTPStatus(want))
		}
	}
}

func hostile(name, src string) *api.ExpandRequest {
	return &api.ExpandRequest{Config: "resources:\n- name: evil\n  type: " + name + "\n", Imports: map[string]string{name: src}}
}

// TestDeadlineKills: a Starlark step that ignores cancellation is ended by
// the parent at the per-template timeout plus grace.
func TestDeadlineKills(t *testing.T) {
	ctx := t.Context()
	var exits []string
	p := newPool(t, Options{Workers: 1, Grace: 200 * time.Millisecond, Expand: expand.Options{Timeout: 500 * time.Millisecond},
		OnExit: func(why string) { exits = append(exits, why) }})
	start := time.Now()
	_, err := p.Expand(ctx, hostile("slow.py", "def GenerateConfig(ctx):\n  return str(int('9' * 4000000))\n"))
	if !errors.Is(err, derrors.LimitExceeded) || !strings.Contains(err.Error(), "Options.Timeout") || !strings.Contains(err.Error(), "slow.py") {
		t.Fatalf("got %v, want a Timeout limit error naming slow.py", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	if !reflect.DeepEqual(exits, []string{ExitTimeout}) {
		t.Errorf("worker exits %q, want [%s]", exits, ExitTimeout)
	}
	if _, err := p.Expand(ctx, &api.ExpandRequest{Config: composite}); err != nil {
		t.Fatalf("after the slow template: %v", err)
	}
}

// TestCallerDeadline: the caller's deadline names itself, not Timeout.
func TestCallerDeadline(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := p.Expand(ctx, hostile("slow.py", "def GenerateConfig(ctx):\n  return str(int('9' * 4000000))\n"))
	if err == nil || strings.Contains(err.Error(), "Options.Timeout") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the caller's deadline", err)
	}
}

// TestResultLimit: an answer over MaxResultBytes is refused by name.
func TestResultLimit(t *testing.T) {
	p := newPool(t, Options{Workers: 1, MaxResultBytes: 1 << 20})
	_, err := p.Expand(t.Context(), hostile("big.jinja", "resources:\n{% for i in range(30) %}\n- name: r{{ i }}\n  type: ConfigMap\n  properties: {data: {a: '{{ 'x' * 100000 }}'}}\n{% endfor %}"))
	if !errors.Is(err, derrors.LimitExceeded) || !strings.Contains(err.Error(), "MaxResultBytes") {
		t.Fatalf("got %v, want a MaxResultBytes error", err)
	}
}

// TestProcessTemplate runs POST /processedTemplates' job.
func TestProcessTemplate(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	out, err := p.ProcessTemplate(t.Context(), []byte(`{"kind":"Template","apiVersion":"v1","metadata":{"name":"t"},"parameters":[{"name":"N","value":"x"}],"objects":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"${N}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"name":"x"`) {
		t.Errorf("got %s", out)
	}
	if _, err := p.ProcessTemplate(t.Context(), []byte("kind: Nope")); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("bad template: got %v", err)
	}
}

// TestKernelLimits applies the worker's limits in a child process and
// checks that files, TCP connections, programs and memory are refused.
func TestKernelLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_PROBE="+ln.Addr().String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	t.Logf("probe: %v", got)
	if got["landlock"] == "0" {
		t.Skipf("no Landlock in this kernel (%s): file and network access are not refused by the kernel", got["problems"])
	}
	for _, k := range []string{"read", "write"} {
		if !strings.Contains(got[k], "permission denied") {
			t.Errorf("%s: %s, want permission denied", k, got[k])
		}
	}
	// Programs and TCP are refused by Landlock (permission denied) and,
	// before it, by the seccomp filter (operation not permitted).
	refused := regexp.MustCompile(`permission denied|operation not permitted`)
	if !refused.MatchString(got["exec"]) {
		t.Errorf("exec: %s, want it refused", got["exec"])
	}
	if (got["landlock_net"] == "true" || got["seccomp"] == "true") && !refused.MatchString(got["dial"]) {
		t.Errorf("dial: %s, want it refused", got["dial"])
	}
	if got["seccomp"] != "true" {
		t.Fatalf("no seccomp filter: %s", got["problems"])
	}
	for _, k := range []string{"udp", "socketpair", "fork"} {
		if !strings.Contains(got[k], "operation not permitted") {
			t.Errorf("%s: %s, want operation not permitted", k, got[k])
		}
	}
	if got["alloc"] != "refused" && !raceEnabled {
		t.Errorf("alloc: %s, want refused", got["alloc"])
	}
}

// probe is TestKernelLimits' child.
func probe() {
	h := applyLimits(64 << 20)
	got := map[string]string{"landlock": fmt.Sprint(h.Landlock), "landlock_net": fmt.Sprint(h.LandlockNet), "seccomp": fmt.Sprint(h.Seccomp), "problems": strings.Join(h.Problems, "; ")}
	errText := func(err error) string {
		if err == nil {
			return "allowed"
		}
		return err.Error()
	}
	_, err := os.ReadFile("/etc/hostname")
	got["read"] = errText(err)
	err = os.WriteFile(os.TempDir()+"/sandbox-probe", nil, 0o600)
	got["write"] = errText(err)
	cmd := exec.Command("/bin/true")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stderr, os.Stderr // no /dev/null
	err = cmd.Run()
	got["exec"] = errText(err)
	c, err := net.Dial("tcp", os.Getenv("SANDBOX_TEST_PROBE"))
	if err == nil {
		c.Close()
	}
	got["dial"] = errText(err)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err == nil {
		pc.Close()
	}
	got["udp"] = errText(err)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
	got["socketpair"] = errText(err)
	// A child process without exec: fork by clone(2) with SIGCHLD only.
	pid, _, errno := unix.RawSyscall(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0)
	switch {
	case errno != 0:
		got["fork"] = errno.Error()
	case pid == 0: // the child
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	default:
		got["fork"] = "allowed"
	}
	// mmap past the address-space limit fails without the runtime's help.
	if _, err := unix.Mmap(-1, 0, 128<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE); err != nil {
		got["alloc"] = "refused"
	} else {
		got["alloc"] = "allowed"
	}
	b, _ := json.Marshal(got)
	os.Stdout.Write(b)
	os.Exit(0)
}

// TestWorkerHello: a real worker reports the limits it applied.
func TestWorkerHello(t *testing.T) {
	h := probeHello(t)
	if h.Landlock == 0 {
		t.Skipf("no Landlock in this kernel: %v", h.Problems)
	}
	if !h.LandlockNet {
		t.Logf("Landlock ABI %d: no network rules", h.Landlock)
	}
	if h.MemoryLimit == 0 && !raceEnabled {
		t.Errorf("no memory limit: %v", h.Problems)
	}
}

// probeHello starts a worker and returns its hello.
func probeHello(t *testing.T) hello {
	p := newPool(t, Options{Workers: 1})
	w, err := p.start()
	if err != nil {
		t.Fatal(err)
	}
	defer p.retire(w)
	return w.hello
}

// TestOthersCarryOn: while one expansion runs past its deadline and gets
// its worker killed, the others, sharing the pool, succeed.
func TestOthersCarryOn(t *testing.T) {
	ctx := t.Context()
	p := newPool(t, Options{Workers: 2, Grace: 200 * time.Millisecond, Expand: expand.Options{Timeout: 500 * time.Millisecond}})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				if _, err := p.Expand(ctx, &api.ExpandRequest{Config: composite}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() {
		_, err := p.Expand(ctx, hostile("slow.py", "def GenerateConfig(ctx):\n  return str(int('9' * 4000000))\n"))
		if !errors.Is(err, derrors.LimitExceeded) {
			errs <- fmt.Errorf("slow.py: got %v, want a limit error", err)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWorkerEnv: a worker's environment holds its configuration and no
// secret of its parent's.
func TestWorkerEnv(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_secret")
	t.Setenv("REGISTRYD_ADMIN_TOKEN", "admin")
	env := workerEnv(`{"max_memory":1}`)
	if len(env) == 0 || env[0] != envWorker+`={"max_memory":1}` {
		t.Errorf("env %q does not start with the configuration", env)
	}
	for _, kv := range env {
		if strings.Contains(kv, "ghp_secret") || strings.Contains(kv, "admin") {
			t.Errorf("worker environment has %q", kv)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{"512MiB": 512 << 20, "512Mi": 512 << 20, "512M": 512 << 20, "1GiB": 1 << 30, "1g": 1 << 30, "4096": 4096, "64KiB": 64 << 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "MiB", "-1MiB", "12XB", "1.5GiB", "99999999999GiB"} {
		if _, err := ParseBytes(in); !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("ParseBytes(%q): got %v, want an invalid-argument error", in, err)
		}
	}
}

// blindSource lists what src lists and reads nothing: a tenant's server
// that names another tenant's blob SHAs.
type blindSource struct{ fetch.Source }

func (blindSource) Blob(context.Context, string) ([]byte, error) {
	return nil, fmt.Errorf("no content here: %w", derrors.NotFound)
}

// TestScopeIsolation: a worker that expanded for one caller keeps nothing
// another caller resolves differently can use: team-b's registry of the
// same prefix, whose listing names the same blobs (so the same digest),
// gets none of team-a's files from the worker's or the parent's caches.
func TestScopeIsolation(t *testing.T) {
	ctx := t.Context()
	files := fstest.MapFS{"cm/v1.0.0/cm.jinja": {Data: []byte("resources:\n- name: cm\n  type: ConfigMap\n  properties: {data: {text: team-a-secret}}\n")}}
	regA := &index.Registry{Name: "github.com/acme/private", Namespace: "team-a", Object: "private", Identity: "a", Source: fetch.NewLocal(files)}
	regB := &index.Registry{Name: "github.com/acme/private", Namespace: "team-b", Object: "private", Identity: "b", Source: blindSource{fetch.NewLocal(files)}}
	for _, g := range []*index.Registry{regA, regB} {
		if err := g.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p := newPool(t, Options{Resolver: resolve.New(resolve.Registry{}, regA, regB), Workers: 1})
	req := &api.ExpandRequest{Ref: "github.com/acme/private/cm:v1"}
	for i := range 2 { // the second time from the worker's warm caches
		a, err := p.Expand(resolve.WithScope(ctx, resolve.Trusted("team-a")), req)
		if err != nil || !strings.Contains(fmt.Sprint(a.Config.Resources), "team-a-secret") {
			t.Fatalf("team-a (run %d): %v %v", i, a, err)
		}
		b, err := p.Expand(resolve.WithScope(ctx, resolve.Trusted("team-b")), req)
		if err == nil || strings.Contains(fmt.Sprint(b), "team-a-secret") || !errors.Is(err, derrors.NotFound) {
			t.Errorf("team-b (run %d): %v, %v; want its own registry's read to fail", i, b, err)
		}
		if _, err := p.Expand(ctx, req); !errors.Is(err, derrors.NotFound) || !strings.Contains(err.Error(), "not configured") {
			t.Errorf("anonymous (run %d): %v", i, err)
		}
	}
}
