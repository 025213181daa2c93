package dm_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// TestMakeTestenv checks the Makefile's set-up as a new user meets it: in a
// copy of the repository's files with no .testenv/, and with no etcd
// anywhere on $PATH, `make testenv` builds kube-apiserver,
// kube-controller-manager and etcd from the tools module, and what it built
// starts: the apiserver and etcd list namespaces, and the controller
// manager (built without the controllers a cluster without nodes has no use
// for) gives a new namespace its default ServiceAccount. A second run finds
// them current and builds nothing. The Go build cache stays warm: what is
// tested is the Makefile and hack/kube, not the compiler's speed.
func TestMakeTestenv(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the cluster programs: -short (make test-short) leaves it out")
	}
	for _, tool := range []string{"make", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := copyReadmeTree(root, dir); err != nil {
		t.Fatal(err)
	}
	// DM_TESTENV_THP=keep: the other tests run meanwhile, on the
	// machine's own setting.
	env := []string{"PATH=" + pathWithout("etcd"), "DM_TESTENV_THP=keep"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "DM_KUBE_BIN", "DM_TESTENV_THP", "GOFLAGS", "MAKEFLAGS", "MAKELEVEL", "MFLAGS":
			continue
		}
		env = append(env, kv)
	}
	make := func() string {
		cmd := exec.Command("make", "testenv")
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make testenv: %v\n%s", err, out)
		}
		return string(out)
	}
	make()
	bin := filepath.Join(dir, ".testenv", "bin")
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "etcd"} {
		if fi, err := os.Stat(filepath.Join(bin, b)); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("make testenv left no executable %s: %v", b, err)
		}
	}
	if out := make(); !strings.Contains(out, "already in") {
		t.Errorf("a second make testenv built again:\n%s", out)
	}

	// ControllerManager waits for the default ServiceAccount of the
	// default namespace, made by the ServiceAccount controllers.
	e, err := kubetest.Launch(context.Background(), kubetest.Options{ControllerManager: true, Binaries: kubetest.Binaries{
		APIServer:         filepath.Join(bin, "kube-apiserver"),
		Etcd:              filepath.Join(bin, "etcd"),
		ControllerManager: filepath.Join(bin, "kube-controller-manager"),
	}})
	if err != nil {
		t.Fatalf("starting what make testenv built: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	code, body, err := e.Do(context.Background(), e.AdminToken, "GET", "/api/v1/namespaces", nil)
	if err != nil || code != 200 {
		t.Fatalf("listing namespaces: %d %s, %v", code, body, err)
	}
	for _, ns := range []string{`"name":"default"`, `"name":"kube-system"`} {
		if !strings.Contains(string(body), ns) {
			t.Errorf("the namespace list lacks %s:\n%s", ns, body)
		}
	}
}

// pathWithout is $PATH less every directory holding an executable named
// prog, so that only what the test builds can be found.
func pathWithout(prog string) string {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(d, prog)); err == nil && !fi.IsDir() {
			continue
		}
		keep = append(keep, d)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}
