package dm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// dmRun runs the dm binary against a cluster and namespace.
type dmRun struct {
	t          *testing.T
	bin        string
	kubeconfig string
	ns         string
}

func (d *dmRun) cmd(args ...string) *exec.Cmd {
	return exec.Command(d.bin, append([]string{"--kubeconfig", d.kubeconfig, "-n", d.ns}, args...)...)
}

// run returns stdout, stderr and the exit status.
func (d *dmRun) run(args ...string) (string, string, int) {
	d.t.Helper()
	cmd := d.cmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("dm %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// ok runs dm and fails the test unless it exits 0.
func (d *dmRun) ok(args ...string) string {
	d.t.Helper()
	out, errs, code := d.run(args...)
	if code != 0 {
		d.t.Fatalf("dm %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func (d *dmRun) json(v any, args ...string) {
	d.t.Helper()
	out := d.ok(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		d.t.Fatalf("dm %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func labelledCount(t *testing.T, kubeconfig, ns, name string, kinds ...string) int {
	t.Helper()
	c, err := kube.New(context.Background(), kube.Config{Kubeconfig: kubeconfig, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := c.List(context.Background(), ns, "app.kubernetes.io/managed-by=dm,dm.io/deployment="+name, kinds)
	if err != nil {
		t.Fatal(err)
	}
	return len(objs)
}

// TestDeployContract drives issue 6's interface contract through the
// built dm binary against a real apiserver.
func TestDeployContract(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}

	// --dry-run=server creates nothing, not even a history record.
	d.ok("deploy", "redis:v1", "--name", "cache", "--dry-run=server")
	if n := labelledCount(t, env.Kubeconfig, d.ns, "cache", "services", "deployments.apps"); n != 0 {
		t.Fatalf("--dry-run=server created %d objects", n)
	}
	if _, _, code := d.run("history", "cache"); code == 0 {
		t.Fatal("--dry-run=server left a history record")
	}

	// --strict: a property the schema does not define is an error.
	if _, errs, code := d.run("deploy", "redis:v1", "--name", "cache", "--properties", "replcas=1", "--strict"); code == 0 || !strings.Contains(errs, "replcas") {
		t.Fatalf("deploy --strict with an unknown property: exit %d, stderr %q", code, errs)
	}
	d.ok("deploy", "redis:v1", "--name", "cache", "--properties", "replicas=1,port=6380")
	if n := labelledCount(t, env.Kubeconfig, d.ns, "cache", "services", "deployments.apps"); n != 4 {
		t.Fatalf("%d objects labelled app.kubernetes.io/managed-by=dm, want 4", n)
	}

	var got struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Revision  int    `json:"revision"`
		Status    string `json:"status"`
		Resources []struct {
			APIVersion string  `json:"apiVersion"`
			Kind       string  `json:"kind"`
			Name       string  `json:"name"`
			Namespace  *string `json:"namespace"`
		} `json:"resources"`
	}
	d.json(&got, "get", "cache")
	if got.Name != "cache" || got.Namespace != d.ns || got.Revision != 1 || got.Status != "deployed" || len(got.Resources) != 4 {
		t.Fatalf("get -o json: %+v", got)
	}
	for _, r := range got.Resources {
		if r.APIVersion == "" || r.Kind == "" || r.Name == "" || r.Namespace == nil || *r.Namespace != d.ns {
			t.Errorf("get -o json resource %+v", r)
		}
	}

	// diff: equal, then different.
	if out, errs, code := d.run("diff", "redis:v1", "--name", "cache", "--properties", "replicas=1,port=6380"); code != 0 {
		t.Errorf("diff of the deployed input: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := d.run("diff", "redis:v1", "--name", "cache", "--properties", "replicas=3,port=6380"); code != 1 || !strings.Contains(out, "replicas") {
		t.Errorf("diff of a change: exit %d\n%s%s", code, out, errs)
	}

	d.ok("update", "cache", "--properties", "replicas=3", "--reuse-properties")
	d.ok("update", "cache", "redis:v1.1", "--properties", "replicas=2")
	d.ok("rollback", "cache", "1")
	if _, errs, code := d.run("rollback", "cache", "99"); code == 0 || !strings.Contains(errs, "revision 99") {
		t.Errorf("rollback to a missing revision: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := d.run("update", "nosuch", "--properties", "replicas=3"); code == 0 || !strings.Contains(errs, "nosuch") {
		t.Errorf("update of a missing deployment: exit %d, stderr %q", code, errs)
	}

	var list struct {
		Items []struct {
			Name, Namespace, Status string
			Revision                int
		} `json:"items"`
	}
	d.json(&list, "list")
	if len(list.Items) != 1 || list.Items[0].Name != "cache" || list.Items[0].Namespace != d.ns || list.Items[0].Revision != 4 || list.Items[0].Status != "deployed" {
		t.Errorf("list -o json: %+v", list)
	}
	var hist struct {
		Items []struct {
			Revision int
			Status   string
		} `json:"items"`
	}
	d.json(&hist, "history", "cache")
	var hs []string
	for _, h := range hist.Items {
		hs = append(hs, fmt.Sprintf("%d:%s", h.Revision, h.Status))
	}
	if s := strings.Join(hs, " "); s != "1:superseded 2:superseded 3:superseded 4:deployed" {
		t.Errorf("history -o json: %s", s)
	}

	// The same through --registry-dir.
	dir, _ := filepath.Abs("registry-example")
	d.ok("--registry-dir", "github.com/acme/templates="+dir, "deploy", "common/configmap:v1.1", "--name", "settings", "--properties", "data={a: b}")

	// --server: registryd resolves and expands, dm applies with its own
	// credentials.
	registrydBin, _ := buildBinaries(t)
	url := startRegistryd(t, registrydBin, nil, "--registry-dir", "github.com/acme/templates="+dir)
	_, errs, code := d.run("--server", url, "deploy", "redis:v1", "--name", "viaserver")
	if code != 0 || !strings.Contains(errs, "resolved to github.com/acme/templates/redis:v1.0.2") {
		t.Fatalf("deploy --server: exit %d\n%s", code, errs)
	}
	if n := labelledCount(t, env.Kubeconfig, d.ns, "viaserver", "services", "deployments.apps"); n != 4 {
		t.Errorf("deploy --server: %d objects, want 4", n)
	}
	_, errs, code = d.run("--server", url, "update", "viaserver")
	if code != 0 || !strings.Contains(errs, "still resolves to github.com/acme/templates/redis:v1.0.2") {
		t.Errorf("update --server: exit %d\n%s", code, errs)
	}

	// dm update NAME re-resolves the same reference and says which
	// version it picked.
	reg := t.TempDir()
	if err := os.CopyFS(reg, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(reg, "redis", "v1.0.2")
	if err := os.Rename(patch, patch+".later"); err != nil {
		t.Fatal(err)
	}
	regFlag := "github.com/acme/templates=" + reg
	if _, errs, code := d.run("--registry-dir", regFlag, "deploy", "redis:v1", "--name", "moving"); code != 0 || !strings.Contains(errs, "redis:v1.0.1") {
		t.Fatalf("deploy: exit %d\n%s", code, errs)
	}
	if err := os.Rename(patch+".later", patch); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := d.run("--registry-dir", regFlag, "update", "moving"); code != 0 || !strings.Contains(errs, "redis:v1 now resolves to github.com/acme/templates/redis:v1.0.2 (was github.com/acme/templates/redis:v1.0.1)") {
		t.Errorf("update: exit %d\n%s", code, errs)
	}
	d.ok("delete", "moving")

	d.ok("delete", "viaserver")
	d.ok("delete", "cache")
	d.ok("delete", "settings")
	if n := labelledCount(t, env.Kubeconfig, d.ns, "cache", "services", "deployments.apps"); n != 0 {
		t.Errorf("after delete, %d objects remain", n)
	}
	if _, errs, code := d.run("delete", "cache"); code == 0 || errs == "" {
		t.Errorf("deleting a deleted deployment: exit %d, stderr %q", code, errs)
	}
}

// manyObjects writes a configuration of n ConfigMaps.
func manyObjects(t *testing.T, n int) string {
	var b strings.Builder
	b.WriteString("resources:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- {name: cm%d, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {i: '%d'}}}\n", i, i)
	}
	f := filepath.Join(t.TempDir(), "many.yaml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// interrupt starts dm deploy of file and calls stop once some of its
// objects exist (or it finished).
func interrupt(t *testing.T, d *dmRun, file string, stop func(cmd *exec.Cmd)) {
	t.Helper()
	// A short lease: the re-run takes over the revision this dm leaves
	// once it expires.
	cmd := d.cmd("deploy", file, "--name", "many", "--lease-duration", "3s")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Logf("dm finished before it could be interrupted (%v); the re-run still has to converge", err)
			return
		default:
		}
		if labelledCount(t, d.kubeconfig, d.ns, "many", "configmaps") > 0 {
			stop(cmd)
			select {
			case <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				<-done
				t.Errorf("dm did not end within a minute of the interruption")
			}
			t.Logf("interrupted dm: %s", errb.String())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	t.Fatal("no object appeared within 2 minutes")
}

// TestDeployKilledAndRerun SIGKILLs dm in the middle of applying, then
// re-runs the same deploy: it converges and the history is whole.
func TestDeployKilledAndRerun(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	const n = 800
	file := manyObjects(t, n)
	interrupt(t, d, file, func(cmd *exec.Cmd) { cmd.Process.Signal(syscall.SIGKILL) })
	d.ok("deploy", file, "--name", "many")
	converged(t, d, n)
}

// TestAPIServerStoppedMidDeploy stops the apiserver while dm applies, then
// restarts it and re-runs the deploy.
func TestAPIServerStoppedMidDeploy(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Start(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	const n = 800
	file := manyObjects(t, n)
	interrupt(t, d, file, func(*exec.Cmd) {
		if err := env.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	d.ok("deploy", file, "--name", "many")
	converged(t, d, n)
}

// converged checks that every object exists and that the history ends
// deployed with nothing pending.
func converged(t *testing.T, d *dmRun, n int) {
	t.Helper()
	if got := labelledCount(t, d.kubeconfig, d.ns, "many", "configmaps"); got != n {
		t.Errorf("%d objects after the re-run, want %d", got, n)
	}
	var hist struct {
		Items []struct {
			Revision int
			Status   string
		} `json:"items"`
	}
	d.json(&hist, "history", "many")
	if len(hist.Items) == 0 || hist.Items[len(hist.Items)-1].Status != "deployed" {
		t.Fatalf("history %+v", hist.Items)
	}
	for _, h := range hist.Items {
		if h.Status == "pending" {
			t.Errorf("history %+v keeps a pending revision", hist.Items)
		}
	}
	// And the next update is not blocked.
	d.ok("update", "many")
}
