package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
)

// dm-controller and a dm deploy of the same name: neither applies while
// the other holds the deployment, neither marks a live one's revision
// interrupted, and each takes over from a holder that died once its
// lease expires.

// cli is a dm deploy in this process, as a person's dm, with the admin's
// credentials.
func (h *harness) cli(t *testing.T, ns string) *deploy.Config {
	t.Helper()
	kc, err := kube.New(context.Background(), kube.Config{Kubeconfig: h.env.Kubeconfig, Namespace: ns})
	must(t, err)
	x := expand.New(expand.Options{})
	return &deploy.Config{
		Cluster: kc,
		History: driver.NewSecrets(kc.Dynamic()),
		Expander: deploy.ExpandFunc(func(ctx context.Context, src deploy.Source) (*expand.Result, error) {
			return x.Expand(ctx, expand.Request{Config: []byte(src.Input.Config), ConfigName: src.Input.ConfigName,
				Name: src.Name, Deployment: src.Deployment, Namespace: src.Namespace})
		}),
		DMVersion: "test",
		Lease:     deploy.LeaseOptions{Duration: 3 * time.Second, RenewPeriod: 500 * time.Millisecond},
	}
}

// slowSource is a configuration whose second ConfigMap waits for a field
// of the first that never appears: its deploy holds the deployment until
// the timeout.
func slowSource(name string) deploy.Source {
	return deploy.Source{Input: release.Input{ConfigName: "slow.yaml", Config: fmt.Sprintf(`resources:
- {name: %[1]s-cli, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {a: b}}}
- {name: %[1]s-wait, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {never: "$(ref.%[1]s-cli.data.missing)"}}}
`, name)}}
}

// held waits until revision rev of name is pending with a lease, and
// returns it.
func (h *harness) held(t *testing.T, ns, name string, rev int) *release.Record {
	t.Helper()
	dyn, err := dynamic.NewForConfig(h.rc)
	must(t, err)
	var r *release.Record
	eventually(t, fmt.Sprintf("%s/%s revision %d held", ns, name, rev), func() error {
		r, err = driver.NewSecrets(dyn).Get(context.Background(), ns, name, rev)
		if err != nil {
			return err
		}
		if r.Status != release.StatusPending || r.Lease == nil {
			return fmt.Errorf("revision %d is %s, lease %+v", rev, r.Status, r.Lease)
		}
		return nil
	})
	return r
}

// A dm deploy holds the name: the controller waits (Reconciling,
// InProgress), never marks the revision interrupted and never applies
// meanwhile; once the deploy failed on its own, the controller deploys.
func TestControllerWaitsForCLI(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	cli := h.cli(t, ns)
	done := make(chan error, 1)
	go func() {
		_, err := cli.Deploy(context.Background(), deploy.DeployOptions{Name: "shared", Source: slowSource("shared"),
			ApplyOptions: deploy.ApplyOptions{Timeout: 12 * time.Second}})
		done <- err
	}()
	h.held(t, ns, "shared", 1)
	h.instance(t, ns, "shared", v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "deployer"})
	// While the deploy holds the name the instance waits.
	eventually(t, "the instance waiting", func() error {
		select {
		case err := <-done:
			done <- err
			return nil // done before the controller said so: checked below
		default:
		}
		c := meta.FindStatusCondition(h.get(t, ns, "shared").Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != "InProgress" || !strings.Contains(c.Message, "another operation (deploy) is in progress") {
			return fmt.Errorf("Ready %+v", c)
		}
		if s := meta.FindStatusCondition(h.get(t, ns, "shared").Status.Conditions, v1alpha1.ConditionStalled); s != nil && s.Status == metav1.ConditionTrue {
			return fmt.Errorf("Stalled: %s", s.Message)
		}
		return nil
	})
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "$(ref.shared-cli.data.missing)") {
		t.Fatalf("the slow deploy: %v, want its own timeout", err)
	}
	h.condition(t, ns, "shared", v1alpha1.ConditionReady, metav1.ConditionTrue)
	hist := h.history(t, ns, "shared")
	if len(hist) != 2 || hist[0].Status != release.StatusFailed || strings.Contains(hist[0].Description, "interrupted") ||
		hist[1].Status != release.StatusDeployed || hist[1].Controller == "" {
		t.Fatalf("history: 1 %s %q, then %+v", hist[0].Status, hist[0].Description, hist[1:])
	}
	if hist[1].Created.Before(hist[0].Updated) {
		t.Errorf("the controller recorded revision 2 at %s, before the deploy was done at %s", hist[1].Created, hist[0].Updated)
	}
}

// slowTemplate waits, as the controller applies it, for a field that
// never appears (15 seconds, referenceWait).
const slowTemplate = `resources:
- name: cm
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: "{{ env['deployment'] }}"}
    data: {a: b}
- name: wait
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: "{{ env['deployment'] }}-wait"}
    data: {never: "$(ref.cm.data.missing)"}
`

// The controller holds the name: a dm deploy of it waits until the
// controller is done, and is then refused (the controller manages the
// deployment); a dm update is refused at once, as it would be after the
// wait. The controller's revision is not interrupted.
func TestCLIWaitsForController(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	dir := filepath.Join(h.dir, "slowref", "v1.0.0")
	must(t, os.MkdirAll(filepath.Join(h.dir, ".slowref"), 0o755))
	tmp := filepath.Join(h.dir, ".slowref", "slowref.jinja")
	must(t, os.WriteFile(tmp, []byte(slowTemplate), 0o644))
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.Rename(tmp, filepath.Join(dir, "slowref.jinja")))
	h.instance(t, ns, "busy", v1alpha1.TemplateInstanceSpec{Template: "slowref:v1", ServiceAccountName: "deployer"})
	r := h.held(t, ns, "busy", 1)
	if want := "TemplateInstance " + ns + "/busy"; r.Lease.Holder.Instance != want {
		t.Errorf("the controller's lease names %q, want %q", r.Lease.Holder.Instance, want)
	}
	cli := h.cli(t, ns)
	ctx := context.Background()
	managed := "managed by dm-controller through TemplateInstance " + ns + "/busy"
	start := time.Now()
	if _, err := cli.Update(ctx, deploy.UpdateOptions{Name: "busy", ApplyOptions: deploy.ApplyOptions{WaitForLock: time.Minute}}); err == nil || !strings.Contains(err.Error(), managed) {
		t.Errorf("dm update while the controller applies: %v, want the refusal", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the refusal took %s: it waited for the controller", took)
	}
	done := make(chan error, 1)
	start = time.Now()
	go func() {
		_, err := cli.Deploy(ctx, deploy.DeployOptions{Name: "busy", Upgrade: true,
			Source:       deploy.Source{Input: release.Input{ConfigName: "mine.yaml", Config: "resources:\n- {name: mine, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap}}\n"}},
			ApplyOptions: deploy.ApplyOptions{WaitForLock: time.Minute}})
		done <- err
	}()
	// The controller's wait ends when the field appears; the deploy
	// waits until then.
	time.Sleep(3 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("dm deploy did not wait for the controller: %v", err)
	default:
	}
	cm := &corev1.ConfigMap{}
	eventually(t, "setting data.missing", func() error {
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "busy"}, cm); err != nil {
			return err
		}
		cm.Data["missing"] = "now"
		return h.c.Update(ctx, cm)
	})
	err := <-done
	if err == nil || !strings.Contains(err.Error(), managed) {
		t.Fatalf("dm deploy while the controller applies: %v, want the refusal once it was done", err)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("refused after %s, before the controller was done", took)
	}
	hist := h.history(t, ns, "busy")
	if len(hist) != 1 || hist[0].Status != release.StatusDeployed || hist[0].Lease != nil {
		t.Errorf("history: %d revisions, revision 1 %s %q", len(hist), hist[0].Status, hist[0].Description)
	}
	if cli := h.configMapData(t, ns, "mine"); cli != nil {
		t.Errorf("the refused deploy applied ConfigMap mine: %v", cli)
	}
	must(t, h.c.Delete(ctx, h.get(t, ns, "busy")))
}

// configMapData returns ConfigMap ns/name's data, nil if it does not
// exist.
func (h *harness) configMapData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	if cm.Data == nil {
		return map[string]string{}
	}
	return cm.Data
}

// dead writes a pending revision 1 of name held by a holder that died.
func (h *harness) dead(t *testing.T, ns, name, controller string, holder release.Holder) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(h.rc)
	must(t, err)
	now := time.Now().UTC()
	holder.ID = "deadbeef"
	must(t, driver.NewSecrets(dyn).Create(context.Background(), &release.Record{
		Name: name, Namespace: ns, Revision: 1, Status: release.StatusPending, Created: now, Updated: now, Controller: controller,
		Lease: &release.Lease{Holder: holder, Operation: "deploy", Duration: 2 * time.Second, RenewPeriod: 500 * time.Millisecond, Acquired: now, Renewed: now},
	}))
}

// A revision left by a dm or a controller pod that died is taken over
// once its lease expires, not sooner: a dm's is marked interrupted and
// the controller deploys the next, its own interrupted one is resumed.
func TestControllerTakesOverDeadHolders(t *testing.T) {
	h := setup(t)
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	for _, tc := range []struct {
		name       string
		controller bool
	}{{"from-cli", false}, {"from-pod", true}} {
		controller, holder := "", release.Holder{Host: "gone", PID: 999999}
		if tc.controller {
			controller = "TemplateInstance " + ns + "/" + tc.name
			holder = release.Holder{Host: "dm-controller-0", PID: 1, Pod: "dm/dm-controller-0", Instance: controller}
		}
		h.dead(t, ns, tc.name, controller, holder)
		start := time.Now()
		h.instance(t, ns, tc.name, v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "deployer"})
		h.condition(t, ns, tc.name, v1alpha1.ConditionReady, metav1.ConditionTrue)
		if took := time.Since(start); took < 2*time.Second {
			t.Errorf("%s: taken over after %s, before the lease of 2s expired", tc.name, took)
		}
		hist := h.history(t, ns, tc.name)
		switch {
		case tc.controller && (len(hist) != 1 || hist[0].Status != release.StatusDeployed || hist[0].Lease != nil):
			t.Errorf("%s: history %d revisions, revision 1 %s", tc.name, len(hist), hist[0].Status)
		case !tc.controller && (len(hist) != 2 || hist[0].Status != release.StatusFailed ||
			!strings.Contains(hist[0].Description, "dm pid 999999 on host gone") || hist[1].Status != release.StatusDeployed):
			t.Errorf("%s: history: 1 %s %q, then %d more", tc.name, hist[0].Status, hist[0].Description, len(hist)-1)
		}
	}
}
