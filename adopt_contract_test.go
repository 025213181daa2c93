package dm_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/gcp/kcctest"
)

// TestAdoptContract drives the interface contract of adoption one can
// trust through the built dm binary, against the test apiserver with
// Config Connector's CRDs and a stand-in for its controller that records
// the deletion policy each object carried when it was deleted:
// testdata/gcp/adopt names its resources after env["deployment"], and
// its manifest-my-web.yaml is its deployment's manifest as gcloud printed
// it.
func TestAdoptContract(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	kinds := []string{"ComputeAddress", "ComputeInstance", "StorageBucket"}
	kcctest.InstallCRDs(t, env, kinds...)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	var mu sync.Mutex
	deleted := map[string]string{} // kind/name -> the policy it carried when deleted
	c := &kcctest.Controller{
		Env: env, Namespace: d.ns, Kinds: kinds, Interval: 100 * time.Millisecond,
		Status: func(obj map[string]any) map[string]any {
			if obj["kind"] == "ComputeAddress" {
				return map[string]any{"observedState": map[string]any{"address": "203.0.113.7"}}
			}
			return nil
		},
		Deleted: func(kind, name, policy string) {
			mu.Lock()
			defer mu.Unlock()
			deleted[kind+"/"+name] = policy
		},
	}
	c.Start(t)
	// policies waits until the stand-in saw the objects of deployment
	// name deleted, and returns the policy of each.
	policies := func(name string) []string {
		t.Helper()
		keys := []string{"ComputeAddress/" + name + "-ip", "ComputeInstance/" + name + "-vm", "StorageBucket/" + name + "-logs"}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			mu.Lock()
			var got []string
			for _, k := range keys {
				if p, ok := deleted[k]; ok {
					got = append(got, p)
				}
			}
			mu.Unlock()
			if len(got) == len(keys) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("the stand-in saw %d of %v deleted", len(got), keys)
			}
		}
	}
	src := filepath.Join("testdata", "gcp", "adopt")
	cfg, man := filepath.Join(src, "config.yaml"), filepath.Join(src, "manifest-my-web.yaml")

	// Names that read env["deployment"] need --deployment (convert,
	// expand) or --name (deploy): exit 1 naming the flag and a resource.
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"convert", cfg, "--project", "acme-prod"}, "--deployment"},
		{[]string{"expand", cfg, "-o", "manifest", "--project", "acme-prod"}, "--deployment"},
		{[]string{"deploy", cfg, "--project", "acme-prod"}, "--name"},
	} {
		out, errs, code := d.run(tc.args...)
		if code != 1 || out != "" || !strings.Contains(errs, "without "+tc.flag+` is "config"`) || !strings.Contains(errs, "config-vm (compute.v1.instance, layout path web/config-vm)") || !strings.Contains(errs, "give "+tc.flag+" NAME") {
			t.Errorf("dm %v: exit %d\n%s%s", tc.args, code, out, errs)
		}
	}
	if _, _, code := d.run("history", "config"); code == 0 {
		t.Error("the refused dm deploy recorded a deployment")
	}

	// --check-manifest: 0 when DM's resources and dm's objects match by
	// name and type, else 1 with one line per difference.
	if out, errs, code := d.run("convert", cfg, "--deployment", "my-web", "--check-manifest", man); code != 0 || out != "" {
		t.Errorf("--check-manifest of the deployment's own manifest: exit %d\n%s%s", code, out, errs)
	}
	b, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "manifest.yaml")
	writeFile(t, other, strings.Replace(strings.Replace(string(b),
		"  - name: my-web-logs\n", "  - name: my-web-fw\n    properties:\n      network: global/networks/default\n      allowed: [{IPProtocol: tcp}]\n    type: compute.v1.firewall\n  - name: my-web-logs\n", 1),
		"      zone: us-central1-a\n    type: compute.v1.instance", "      zone: us-central1-b\n    type: compute.v1.instance", 1))
	out, errs, code := d.run("convert", cfg, "--deployment", "my-web", "--check-manifest", other)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 1 || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "moved: compute.v1.instance my-web-vm: Deployment Manager's is in us-central1-b of project acme-prod, dm's in us-central1-a") ||
		!strings.HasPrefix(lines[1], "DM only: compute.v1.firewall my-web-fw (resource my-web-fw)") ||
		!strings.Contains(errs, "2 differences between the objects dm makes and deployment my-web's resources") {
		t.Errorf("--check-manifest of another deployment: exit %d\n%s%s", code, out, errs)
	}

	// -o DIR with a reference only a live object can fill: 1 naming it;
	// --allow-unresolved: 0 and the warning; a rerun removes the files of
	// objects no longer made.
	dir := filepath.Join(t.TempDir(), "kcc")
	ref := "ComputeInstance my-web-vm: /spec/metadata/0/value holds $(ref.my-web-ip.address), which only the live ComputeAddress my-web-ip has (status.observedState.address)"
	if out, errs, code := d.run("convert", cfg, "--deployment", "my-web", "--project", "acme-prod", "-o", dir); code != 1 || !strings.Contains(errs, ref) || !strings.Contains(errs, "--allow-unresolved") {
		t.Errorf("dm convert -o with an unresolved reference: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := d.run("convert", cfg, "--deployment", "my-web", "--project", "acme-prod", "-o", dir, "--allow-unresolved"); code != 0 || !strings.Contains(errs, "dm: warning: "+ref) {
		t.Errorf("--allow-unresolved: exit %d\n%s", code, errs)
	}
	ls := func() []string {
		ents, _ := os.ReadDir(dir)
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}
	if want := []string{".dm-convert.json", "computeaddress-my-web-ip.yaml", "computeinstance-my-web-vm.yaml", "storagebucket-my-web-logs.yaml"}; !slices.Equal(ls(), want) {
		t.Errorf("files %v, want %v", ls(), want)
	}
	edited := t.TempDir()
	jinja, err := os.ReadFile(filepath.Join(src, "web.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := os.ReadFile(cfg)
	writeFile(t, filepath.Join(edited, "config.yaml"), string(cb))
	noBucket, _, _ := strings.Cut(string(jinja), "- name: {{ prefix }}-logs")
	writeFile(t, filepath.Join(edited, "web.jinja"), noBucket+"outputs:\n- name: ip\n  value: $(ref.{{ prefix }}-ip.address)\n")
	_, errs, code = d.run("convert", filepath.Join(edited, "config.yaml"), "--deployment", "my-web", "--project", "acme-prod", "-o", dir, "--allow-unresolved")
	if code != 0 || !strings.Contains(errs, "dm: removed "+filepath.Join(dir, "storagebucket-my-web-logs.yaml")) {
		t.Errorf("the rerun: exit %d\n%s", code, errs)
	}
	if want := []string{".dm-convert.json", "computeaddress-my-web-ip.yaml", "computeinstance-my-web-vm.yaml"}; !slices.Equal(ls(), want) {
		t.Errorf("after the rerun: files %v, want %v", ls(), want)
	}

	// dm deploy keeps Config Connector's default (delete); dm get shows
	// each object's policy.
	d.ok("deploy", cfg, "--name", "my-web", "--project", "acme-prod", "--wait", "--timeout", "60s")
	var got struct {
		Resources []struct{ Kind, Name, DeletionPolicy string }
	}
	d.json(&got, "get", "my-web")
	if len(got.Resources) != 3 {
		t.Fatalf("dm get: %+v", got)
	}
	for _, r := range got.Resources {
		if r.DeletionPolicy != gcp.PolicyDelete {
			t.Errorf("dm get: %s %s has deletion policy %q, want delete", r.Kind, r.Name, r.DeletionPolicy)
		}
	}
	if out := d.ok("get", "my-web"); !strings.Contains(out, "DELETION") || !strings.Contains(out, "/my-web-vm    web/my-web-vm    delete    Current") {
		t.Errorf("dm get's table lacks the policy:\n%s", out)
	}

	// dm delete without a terminal, --deletion-policy or --yes: 1
	// naming the objects, nothing deleted.
	out, errs, code = d.run("delete", "my-web")
	if code != 1 || !strings.Contains(errs, "deleting deployment my-web deletes the Google Cloud resources of 3 Config Connector objects") ||
		!strings.Contains(errs, "ComputeInstance.compute.cnrm.cloud.google.com "+d.ns+"/my-web-vm") || !strings.Contains(errs, "nothing was deleted") {
		t.Errorf("dm delete off a terminal: exit %d\n%s%s", code, out, errs)
	}
	vm := "/apis/compute.cnrm.cloud.google.com/v1beta1/namespaces/" + d.ns + "/computeinstances/my-web-vm"
	if live := liveObject(t, env, vm); live["metadata"].(map[string]any)["deletionTimestamp"] != nil {
		t.Error("the refused dm delete deleted my-web-vm")
	}
	d.ok("history", "my-web")

	// --deletion-policy abandon: written on every object before it is
	// deleted, so Config Connector saw it.
	_, errs = d.okErr("delete", "my-web", "--deletion-policy", "abandon", "--wait", "--timeout", "60s")
	if !strings.Contains(errs, "3 Config Connector objects annotated "+gcp.DeletionPolicyAnnotation+": abandon") {
		t.Errorf("dm delete --deletion-policy abandon:\n%s", errs)
	}
	if p := policies("my-web"); !slices.Equal(p, []string{"abandon", "abandon", "abandon"}) {
		t.Errorf("policies at deletion %v, want abandon", p)
	}
	if code, _, _ := env.Do(context.Background(), env.AdminToken, http.MethodGet, vm, nil); code != http.StatusNotFound {
		t.Errorf("after dm delete, GET my-web-vm: %d", code)
	}

	// --deletion-policy delete over objects deployed to abandon; --yes.
	// (--wait: Ready once the stand-in holds its finalizer, as KCC's.)
	d.ok("deploy", cfg, "--name", "web2", "--project", "acme-prod", "--deletion-policy", "abandon", "--wait", "--timeout", "60s")
	d.okErr("delete", "web2", "--deletion-policy", "delete")
	if p := policies("web2"); !slices.Equal(p, []string{"none", "none", "none"}) {
		t.Errorf("policies at deletion %v, want none (Config Connector's delete)", p)
	}
	d.ok("deploy", cfg, "--name", "web3", "--project", "acme-prod", "--wait", "--timeout", "60s")
	d.ok("delete", "web3", "--yes")
	if p := policies("web3"); !slices.Equal(p, []string{"", "", ""}) {
		t.Errorf("policies at deletion %v, want none written", p)
	}
}
