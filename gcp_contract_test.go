package dm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/gcp/kcctest"
)

// gcpKinds are the Config Connector kinds testdata/gcp/app makes.
var gcpKinds = []string{"ComputeNetwork", "ComputeSubnetwork", "ComputeFirewall", "ComputeAddress", "ComputeInstance", "StorageBucket"}

// standIn starts a stand-in for Config Connector's controller in ns: the
// address gets its IP in status.observedState, the instance (annotated
// state-into-spec: merge) its internal IP in its spec, as KCC writes
// them; objects named in fail fail with Google Cloud's 403.
func standIn(t *testing.T, env *kubetest.Env, ns string, fail ...string) {
	t.Helper()
	c := &kcctest.Controller{
		Env: env, Namespace: ns, Kinds: gcpKinds,
		Status: func(obj map[string]any) map[string]any {
			if obj["kind"] == "ComputeAddress" {
				return map[string]any{"observedState": map[string]any{"address": "203.0.113.10"}}
			}
			return nil
		},
		Spec: func(obj map[string]any) map[string]any {
			spec, _ := obj["spec"].(map[string]any)
			nics, _ := spec["networkInterface"].([]any)
			if obj["kind"] != "ComputeInstance" || len(nics) == 0 {
				return nil
			}
			nic, _ := nics[0].(map[string]any)
			if nic["networkIp"] != nil {
				return nil
			}
			nic["networkIp"] = "10.10.0.5"
			return map[string]any{"networkInterface": nics}
		},
		Fail: func(obj map[string]any) string {
			name, _ := obj["metadata"].(map[string]any)["name"].(string)
			for _, f := range fail {
				if name == f {
					return fmt.Sprintf("googleapi: Error 403: Required 'compute.firewalls.create' permission for 'projects/acme/global/firewalls/%s', forbidden", name)
				}
			}
			return ""
		},
	}
	c.Start(t)
}

// liveObject reads an object as the admin.
func liveObject(t *testing.T, env *kubetest.Env, path string) map[string]any {
	t.Helper()
	code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, path, nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", path, code, err, body)
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestGCPContract drives issue 29 through the built dm binary against the
// test apiserver with Config Connector's CRDs and a stand-in for its
// controller: a DM configuration of Jinja and Python templates (imports,
// a schema, template outputs, references, dependsOn) beside a Kubernetes
// object, deployed, waited for, its outputs read from the live objects,
// updated, its history, deleted; a refused Google Cloud call named by
// --wait; the project from the namespace's annotation; diff.
func TestGCPContract(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	kcctest.InstallCRDs(t, env, gcpKinds...)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	standIn(t, env, d.ns, "deny")
	cfg := filepath.Join("testdata", "gcp", "app", "config.yaml")

	// dm convert: the objects as files, the references only live
	// objects have named on stderr; --list-types.
	out := filepath.Join(t.TempDir(), "kcc")
	_, errs := d.okErr("convert", cfg, "--project", "acme", "-o", out, "--allow-unresolved")
	files, _ := os.ReadDir(out)
	if len(files) != 8 || // and the record, .dm-convert.json
		!strings.Contains(errs, "ComputeInstance web-vm: /spec/metadata/0/value holds $(ref.net-ip.address), which only the live ComputeAddress net-ip has (status.observedState.address)") {
		t.Errorf("dm convert -o: %d files\n%s", len(files), errs)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "computeinstance-web-vm.yaml")); !strings.Contains(string(b), gcp.DeletionPolicyAnnotation+": abandon") {
		t.Errorf("dm convert's default deletion policy is not abandon:\n%s", b)
	}
	if types := d.ok("convert", "--list-types"); !strings.Contains(types, "gcp-types/storage-v1:buckets") || strings.Count(types, "\n") != len(gcp.Types()) {
		t.Errorf("dm convert --list-types: %d lines", strings.Count(types, "\n"))
	}

	_, errs = d.okErr("deploy", cfg, "--name", "web", "--project", "acme", "--deletion-policy", "abandon", "--wait", "--timeout", "60s")
	for _, want := range []string{
		"waiting for ComputeAddress.compute.cnrm.cloud.google.com " + d.ns + "/net-ip to be ready and have status.observedState.address",
		"waiting for 1 Config Connector objects that others depend on to be ready",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("deploy's stderr lacks %q:\n%s", want, errs)
		}
	}
	base := "/apis/compute.cnrm.cloud.google.com/v1beta1/namespaces/" + d.ns
	vm := liveObject(t, env, base+"/computeinstances/web-vm")
	md := vm["metadata"].(map[string]any)
	ann := md["annotations"].(map[string]any)
	if ann[gcp.ProjectAnnotation] != "acme" || ann[gcp.DeletionPolicyAnnotation] != "abandon" || ann["dm.io/layout-path"] != "web/web-vm" {
		t.Errorf("web-vm's annotations: %v", ann)
	}
	if md["labels"].(map[string]any)["dm.io/deployment"] != "web" {
		t.Errorf("web-vm's labels: %v", md["labels"])
	}
	// The deferred reference, read from the address's status once it
	// was Ready.
	script := vm["spec"].(map[string]any)["metadata"].([]any)[0].(map[string]any)["value"]
	if script != "echo backend=http://203.0.113.10:8080 > /etc/web.env" {
		t.Errorf("startup-script %q: the address was not filled in", script)
	}
	cm := liveObject(t, env, "/api/v1/namespaces/"+d.ns+"/configmaps/web-settings")
	data := cm["data"].(map[string]any)
	if data["internalIP"] != "10.10.0.5" || data["network"] != "https://www.googleapis.com/compute/v1/projects/acme/computenetworks/net-vpc" {
		t.Errorf("the ConfigMap's live fields of Google Cloud resources: %v", data)
	}
	if _, ok := cm["metadata"].(map[string]any)["annotations"].(map[string]any)[gcp.ProjectAnnotation]; ok {
		t.Error("the ConfigMap carries a Config Connector annotation")
	}
	bucket := liveObject(t, env, "/apis/storage.cnrm.cloud.google.com/v1beta1/namespaces/"+d.ns+"/storagebuckets/logs")
	if bucket["spec"].(map[string]any)["location"] != "US" {
		t.Errorf("bucket: %v", bucket["spec"])
	}

	// dm get: each object Current (KCC's Ready), and the outputs.
	var got struct {
		Status    string
		Resources []struct{ Kind, Name, Path, Status, Message string }
		Outputs   map[string]any
	}
	d.json(&got, "get", "web")
	if got.Status != "deployed" || len(got.Resources) != 7 {
		t.Fatalf("dm get: %+v", got)
	}
	for _, r := range got.Resources {
		if r.Status != kube.Current {
			t.Errorf("%s %s: %s %s", r.Kind, r.Name, r.Status, r.Message)
		}
	}
	want := map[string]any{"backendAddress": "203.0.113.10", "internalIP": "10.10.0.5", "url": "http://203.0.113.10:8080/", "bucket": "logs"}
	if fmt.Sprint(got.Outputs) != fmt.Sprint(want) {
		t.Errorf("dm get outputs %v, want %v", got.Outputs, want)
	}
	if out := d.ok("get", "web"); !strings.Contains(out, "url             http://203.0.113.10:8080/") && !strings.Contains(out, "http://203.0.113.10:8080/") {
		t.Errorf("dm get's table lacks the outputs:\n%s", out)
	}

	// dm update without --project or --deletion-policy keeps them
	// (recorded with the revision); the instance's spec, which Config
	// Connector writes into (state-into-spec), is taken back.
	d.ok("update", "web", "--wait", "--timeout", "60s")
	vm = liveObject(t, env, base+"/computeinstances/web-vm")
	if ann := vm["metadata"].(map[string]any)["annotations"].(map[string]any); ann[gcp.ProjectAnnotation] != "acme" || ann[gcp.DeletionPolicyAnnotation] != "abandon" {
		t.Errorf("after dm update: annotations %v", ann)
	}
	// dm diff of the same input: no difference, though Config Connector
	// wrote into the instance's spec (networkIp) and references were
	// filled from live objects.
	if out, errs, code := d.run("diff", cfg, "--name", "web", "--project", "acme", "--deletion-policy", "abandon"); code != 0 {
		t.Errorf("diff of the deployed input: exit %d\n%s%s", code, out, errs)
	}
	if out := d.ok("history", "web"); strings.Count(out, "\n") != 3 || !strings.Contains(out, "deployed") || !strings.Contains(out, "superseded") {
		t.Errorf("dm history:\n%s", out)
	}

	// A refused Google Cloud call: --wait names the object and KCC's
	// reason and message.
	deny := filepath.Join(t.TempDir(), "deny.yaml")
	writeFile(t, deny, `resources:
- name: deny
  type: compute.v1.firewall
  properties:
    network: global/networks/default
    allowed: [{IPProtocol: tcp, ports: ["22"]}]
`)
	_, errs, code := d.run("deploy", deny, "--project", "acme", "--wait", "--timeout", "5s")
	if code != 1 || !strings.Contains(errs, "ComputeFirewall.compute.cnrm.cloud.google.com "+d.ns+"/deny: Failed: UpdateFailed: Update call failed: error applying desired state: googleapi: Error 403: Required 'compute.firewalls.create' permission") {
		t.Errorf("deploy --wait of a refused resource: exit %d\n%s", code, errs)
	}

	// A cluster without the kinds: refused before anything is applied.
	sql := filepath.Join(t.TempDir(), "sql.yaml")
	writeFile(t, sql, "resources:\n- {name: db, type: sqladmin.v1beta4.instance, properties: {region: us-central1, settings: {tier: db-f1-micro}}}\n- {name: cfg, type: ConfigMap}\n")
	_, errs, code = d.run("deploy", sql, "--project", "acme")
	if code != 1 || !strings.Contains(errs, "the cluster does not serve Config Connector's kinds SQLInstance (sql.cnrm.cloud.google.com/v1beta1)") || !strings.Contains(errs, "install Config Connector") {
		t.Errorf("deploy without the SQLInstance CRD: exit %d\n%s", code, errs)
	}
	if _, _, code := d.run("history", "sql"); code == 0 {
		t.Error("the refused deploy left a history record")
	}
	if _, _, code := d.run("get", "cfg"); code == 0 {
		t.Error("the refused deploy applied something")
	}

	// The project from the namespace's annotation, as Config Connector
	// reads it; templates see it as env.project.
	ns2 := env.Namespace(t)
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{gcp.ProjectAnnotation: "from-namespace"}}}
	if err := mergePatch(env, "/api/v1/namespaces/"+ns2, patch); err != nil {
		t.Fatal(err)
	}
	d2 := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: ns2}
	tmp := t.TempDir()
	jinja, err := os.ReadFile(filepath.Join("testdata", "gcp", "app", "network.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tmp, "network.jinja"), string(jinja))
	netOnly := filepath.Join(tmp, "net.yaml")
	writeFile(t, netOnly, "imports: [network.jinja]\nresources:\n- {name: n2, type: network.jinja, properties: {region: europe-west1, cidr: 10.2.0.0/20}}\n")
	d2.ok("deploy", netOnly, "--name", "n2")
	addr := liveObject(t, env, "/apis/compute.cnrm.cloud.google.com/v1beta1/namespaces/"+ns2+"/computeaddresses/n2-ip")
	if a := addr["metadata"].(map[string]any)["annotations"].(map[string]any); a[gcp.ProjectAnnotation] != "from-namespace" || a[gcp.DeletionPolicyAnnotation] != nil {
		t.Errorf("project from the namespace: annotations %v", a)
	}
	if desc := addr["spec"].(map[string]any)["description"]; desc != "backend address in from-namespace" {
		t.Errorf("env.project in the template: %v", desc)
	}
	// diff: the same input is no difference; another region is one.
	if out, errs, code := d2.run("diff", netOnly, "--name", "n2"); code != 0 {
		t.Errorf("diff of the deployed input: exit %d\n%s%s", code, out, errs)
	}
	if out, _, code := d2.run("diff", netOnly, "--name", "n2", "--properties", "n2.cidr=10.3.0.0/20"); code != 1 || !strings.Contains(out, "10.3.0.0/20") {
		t.Errorf("diff of a change: exit %d\n%s", code, out)
	}

	// dm delete: the objects go (Config Connector then abandons or
	// deletes the Google Cloud resources, as their annotation says).
	d.ok("delete", "web")
	code, _, _ = env.Do(context.Background(), env.AdminToken, http.MethodGet, base+"/computeinstances/web-vm", nil)
	if code != http.StatusNotFound {
		t.Errorf("after dm delete, GET web-vm: %d", code)
	}
}

// okErr runs dm and fails the test unless it exits 0; it returns stdout
// and stderr.
func (d *dmRun) okErr(args ...string) (string, string) {
	d.t.Helper()
	out, errs, code := d.run(args...)
	if code != 0 {
		d.t.Fatalf("dm %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out, errs
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mergePatch sends a JSON merge patch as the admin.
func mergePatch(env *kubetest.Env, path string, patch any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPatch, env.Server+path, strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := env.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PATCH %s: %s", path, resp.Status)
	}
	return nil
}
