package dm_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/deploy/release"
)

// The lease a dm holds on a deployment while it applies, driven through
// the built binary as separate processes (internal/deploy's race tests do
// the same in one process, many more times).

// tempFile writes content to a file of the test's and returns its path.
func tempFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	writeFile(t, p, content)
	return p
}

// leaseHistory reads a deployment's records as the tests' own client.
func leaseHistory(t *testing.T, kubeconfig, ns, name string) []*release.Record {
	t.Helper()
	c, err := kube.New(context.Background(), kube.Config{Kubeconfig: kubeconfig, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := driver.NewSecrets(c.Dynamic()).History(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// slowConfig applies a Service and waits (up to --timeout) for a field the
// apiserver alone never fills: dm holds the revision meanwhile.
const slowConfig = `resources:
- name: slow-svc
  type: Service
  properties: {apiVersion: v1, kind: Service, spec: {ports: [{port: 80}]}}
- name: slow-cm
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, data: {lb: "$(ref.slow-svc.status.loadBalancer.ingress[0].ip)"}}
`

// TestKilledDeployTakenOver: while a dm applies, another fails after
// --wait-for-lock naming it, and dm history shows it; killed with SIGKILL,
// it is taken over by the next dm once its lease expires, not sooner, and
// the revision it left names it.
func TestKilledDeployTakenOver(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	const lease = 3 * time.Second
	slow := tempFile(t, "slow.yaml", slowConfig)
	holder := d.cmd("deploy", slow, "--name", "slow", "--timeout", "5m", "--lease-duration", lease.String())
	var herr bytes.Buffer
	holder.Stderr = &herr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- holder.Wait() }()
	defer func() {
		holder.Process.Kill()
		<-exited
	}()
	pid := holder.Process.Pid
	// Wait until it holds revision 1.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _, _ := d.run("history", "slow", "-o", "json")
		if strings.Contains(out, `"pid": `+strconv.Itoa(pid)) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the slow deploy ended (%v) before it was seen holding its revision:\n%s", err, herr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow deploy held no revision within 2 minutes:\n%s", herr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := d.ok("history", "slow"); !strings.Contains(out, "deploy in progress: held by dm pid "+strconv.Itoa(pid)+" on host") {
		t.Errorf("dm history does not show the holder:\n%s", out)
	}

	// A second dm waits, then fails naming the holder.
	start := time.Now()
	_, errs, code := d.run("update", "slow", "--wait-for-lock", "1s")
	if code != 1 || !strings.Contains(errs, "another operation (deploy) is in progress on deployment "+d.ns+"/slow") ||
		!strings.Contains(errs, "dm pid "+strconv.Itoa(pid)) {
		t.Fatalf("update while another dm deploys: exit %d\n%s", code, errs)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("it gave up after %s, before --wait-for-lock", waited)
	}
	if hist := leaseHistory(t, d.kubeconfig, d.ns, "slow"); len(hist) != 1 || hist[0].Status != release.StatusPending || hist[0].Lease == nil || hist[0].Lease.Holder.PID != pid {
		t.Fatalf("the holder's revision was changed: %+v", hist[0])
	}

	// Killed, it blocks the next dm for its lease, and no longer.
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	exited <- nil // for the deferred cleanup
	killed := time.Now()
	fast := tempFile(t, "fast.yaml", "resources:\n- {name: fast-cm, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {a: b}}}\n")
	_, errs, code = d.run("deploy", fast, "--name", "slow", "--upgrade")
	took := time.Since(killed)
	if code != 0 {
		t.Fatalf("deploy after the holder was killed: exit %d\n%s", code, errs)
	}
	if took < lease {
		t.Errorf("took over %s after the kill, before the lease of %s expired", took, lease)
	}
	if took > lease+time.Minute {
		t.Errorf("took over only %s after the kill (lease %s)", took, lease)
	}
	if !strings.Contains(errs, "stopped renewing its lease") || !strings.Contains(errs, "dm pid "+strconv.Itoa(pid)) {
		t.Errorf("the take-over was not said, naming the holder:\n%s", errs)
	}
	hist := leaseHistory(t, d.kubeconfig, d.ns, "slow")
	if len(hist) != 2 || hist[0].Status != release.StatusFailed || !strings.Contains(hist[0].Description, "interrupted") ||
		!strings.Contains(hist[0].Description, "dm pid "+strconv.Itoa(pid)) || hist[1].Status != release.StatusDeployed || hist[1].Lease != nil {
		t.Errorf("history: %s %q, then %+v", hist[0].Status, hist[0].Description, hist[1:])
	}
	// The revision that was interrupted is pruned with the next one.
	if n := labelledCount(t, d.kubeconfig, d.ns, "slow", "services", "configmaps"); n != 1 {
		t.Errorf("%d objects after the take-over, want the new revision's 1", n)
	}
}

// TestConcurrentDeployProcesses starts pairs of dm processes deploying one
// name together: with --upgrade both deploy, one after the other; without,
// exactly one does and the other says the deployment exists.
func TestConcurrentDeployProcesses(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	const pairs = 4
	files := make([][2]string, pairs)
	for i := range pairs {
		for j := range 2 {
			var b strings.Builder
			b.WriteString("resources:\n")
			for k := range 5 {
				fmt.Fprintf(&b, "- {name: proc-%d-cm%d, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {writer: w%d}}}\n", i, k, j)
			}
			files[i][j] = tempFile(t, fmt.Sprintf("proc-%d-w%d.yaml", i, j), b.String())
		}
	}
	var wg sync.WaitGroup
	for i := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("proc-%d", i)
			upgrade := i%2 == 1
			var codes [2]int
			var errs [2]string
			var pw sync.WaitGroup
			for j := range 2 {
				pw.Add(1)
				go func() {
					defer pw.Done()
					args := []string{"deploy", files[i][j], "--name", name, "--wait-for-lock", "1m", "--force-conflicts"}
					if upgrade {
						args = append(args, "--upgrade")
					}
					cmd := d.cmd(args...)
					var eb bytes.Buffer
					cmd.Stderr = &eb
					err := cmd.Run()
					if ee, ok := err.(*exec.ExitError); ok {
						codes[j] = ee.ExitCode()
					} else if err != nil {
						codes[j] = -1
					}
					errs[j] = eb.String()
				}()
			}
			pw.Wait()
			won := 0
			for j := range 2 {
				switch {
				case codes[j] == 0:
					won++
				case upgrade:
					t.Errorf("%s: deploy --upgrade: exit %d\n%s", name, codes[j], errs[j])
				case !strings.Contains(errs[j], "dm update "+name):
					t.Errorf("%s: the loser's error is not clear: exit %d\n%s", name, codes[j], errs[j])
				}
			}
			want := map[bool]int{false: 1, true: 2}[upgrade]
			if won != want {
				t.Errorf("%s: %d won, want %d", name, won, want)
			}
			hist := leaseHistory(t, d.kubeconfig, d.ns, name)
			if len(hist) != want {
				t.Errorf("%s: %d revisions after %d deploys", name, len(hist), want)
			}
			for _, r := range hist {
				if r.Status == release.StatusFailed || r.Status == release.StatusPending || r.Lease != nil {
					t.Errorf("%s: revision %d is %s: %s", name, r.Revision, r.Status, r.Description)
				}
			}
			if strings.Contains(errs[0]+errs[1], "is held by dm pid") {
				t.Logf("%s: one dm waited for the other", name)
			}
		}()
	}
	wg.Wait()
}
