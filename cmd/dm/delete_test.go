package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/gcp/kcctest"
)

// TestDeleteConfirm: dm delete of a deployment whose Google Cloud
// resources deleting it would delete lists them and asks on a terminal,
// as gcloud deployment-manager deployments delete asked: anything but yes
// deletes nothing; yes deletes.
func TestDeleteConfirm(t *testing.T) {
	env := kubetest.Shared(t)
	kcctest.InstallCRDs(t, env, "ComputeNetwork")
	ns := env.Namespace(t)
	cfg := filepath.Join(writeTree(t, map[string]string{"net.yaml": "resources:\n- {name: n1, type: compute.v1.network, properties: {autoCreateSubnetworks: false}}\n- {name: cm, type: ConfigMap}\n"}), "net.yaml")
	if r := dmRun(t, nil, "--kubeconfig", env.Kubeconfig, "-n", ns, "deploy", cfg, "--name", "net", "--project", "p"); r.code != 0 {
		t.Fatalf("dm deploy: exit %d\n%s", r.code, r.stderr)
	}
	path := "/apis/compute.cnrm.cloud.google.com/v1beta1/namespaces/" + ns + "/computenetworks/n1"
	exists := func() bool {
		code, _, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, path, nil)
		return err == nil && code == http.StatusOK
	}
	for _, tc := range []struct {
		answer  string
		deleted bool
	}{{"", false}, {"no", false}, {"y", true}} {
		master, tty := openPTY(t)
		tm := &terminal{t: t, master: master}
		stdout, done := runOnTerminal(t, tty, "--kubeconfig", env.Kubeconfig, "-n", ns, "delete", "net")
		tm.expect("deleting deployment net deletes the Google Cloud resources of 1 Config Connector object")
		tm.expect("ComputeNetwork.compute.cnrm.cloud.google.com " + ns + "/n1\nDelete them? (y/N) ")
		tm.answer(tc.answer)
		err := <-done
		switch {
		case tc.deleted && (err != nil || !strings.Contains(stdout.String(), "deployment net deleted (2 objects)")):
			t.Errorf("answer %q: %v %s", tc.answer, err, stdout)
		case !tc.deleted && (err == nil || !strings.Contains(err.Error(), "not confirmed; nothing was deleted")):
			t.Errorf("answer %q: %v", tc.answer, err)
		}
		if exists() == tc.deleted {
			t.Errorf("answer %q: n1 exists: %v", tc.answer, exists())
		}
	}
}
