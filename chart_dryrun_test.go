package dm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// TestChartDryRunHooks: dm deploy --dry-run of a chart prints its install
// hooks around its objects, marked as hooks, in the YAML stream and in
// -o json; --dry-run=server has the apiserver check them too, and a hook
// it refuses fails the dry run naming the hook. Nothing is created.
func TestChartDryRunHooks(t *testing.T) {
	t.Parallel()
	dm := buildDMHelm(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dm, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: hooked\nversion: 1.0.0\n",
		"templates/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-app
`,
		"templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "5"
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-post
  annotations:
    helm.sh/hook: post-install
{{- if .Values.bad }}
bogus: a field ConfigMaps do not have
{{- end }}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  containers: [{name: test, image: busybox}]
`,
	} {
		p := filepath.Join(dir, "charts", "hooked", "v1.0.0", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := "--registry-dir=github.com/acme/hooked=" + dir

	for _, dry := range []string{"--dry-run", "--dry-run=server"} {
		out := d.ok(reg, "deploy", "charts/hooked:v1", "--name", "h", dry)
		pre := strings.Index(out, "---\n# hook: pre-install, weight 5, layout path h/h-migrate\napiVersion: batch/v1\nkind: Job\n")
		app := strings.Index(out, "name: h-app\n")
		post := strings.Index(out, "---\n# hook: post-install, weight 0, layout path h/h-post\napiVersion: v1\nkind: ConfigMap\n")
		if pre < 0 || app < pre || post < app || strings.Contains(out, "h-test") {
			t.Errorf("dm deploy %s: want the pre-install hook, the objects, the post-install hook, and no test hook:\n%s", dry, out)
		}
	}

	out := d.ok(reg, "deploy", "charts/hooked:v1", "--name", "h", "--dry-run=server", "-o", "json")
	var list struct {
		Items []struct{ Metadata struct{ Name string } }
		Hooks []struct {
			Event  string
			Weight int
			Object struct{ Metadata struct{ Name string } }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(list.Items) != 1 || list.Items[0].Metadata.Name != "h-app" || len(list.Hooks) != 2 ||
		list.Hooks[0].Event != "pre-install" || list.Hooks[0].Weight != 5 || list.Hooks[0].Object.Metadata.Name != "h-migrate" ||
		list.Hooks[1].Event != "post-install" || list.Hooks[1].Object.Metadata.Name != "h-post" {
		t.Errorf("-o json: items %+v, hooks %+v", list.Items, list.Hooks)
	}

	_, errs, code := d.run(reg, "deploy", "charts/hooked:v1", "--name", "h", "--dry-run=server", "--properties", "bad=true")
	if code != 1 || !strings.Contains(errs, "post-install hook ConfigMap "+d.ns+"/h-post (weight 0, layout path h/h-post)") || !strings.Contains(errs, "bogus") {
		t.Errorf("a hook the server refuses: exit %d\n%s", code, errs)
	}
	for _, line := range strings.Split(d.ok("list"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "h" {
			t.Errorf("a dry run recorded deployment h: %s", line)
		}
	}
}
