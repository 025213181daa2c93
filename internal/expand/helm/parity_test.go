package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// helmBin finds the helm command that hack/kube/build.sh builds (make
// testenv): $DM_HELM, else helm in $DM_KUBE_BIN, else the repository's
// .testenv/bin.
func helmBin(t *testing.T) string {
	t.Helper()
	var cands []string
	if p := os.Getenv("DM_HELM"); p != "" {
		cands = append(cands, p)
	}
	if d := os.Getenv("DM_KUBE_BIN"); d != "" {
		cands = append(cands, filepath.Join(d, "helm"))
	}
	cands = append(cands, "../../../.testenv/bin/helm")
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			p, _ := filepath.Abs(c)
			return p
		}
	}
	if testing.Short() {
		t.Skip("helm is not built (make testenv builds it); -short skips the parity test")
	}
	t.Fatalf("the parity test needs helm: none at %v (build it with make testenv, or hack/kube/build.sh .testenv/bin helm)", cands)
	return ""
}

// parityCase is one chart rendered by helm template and by Render.
type parityCase struct {
	dir         string // under testdata
	release     string
	namespace   string
	values      string // a values file of the chart's directory, or ""
	set         map[string]any
	setArgs     []string // the same as set, for helm's --set
	kubeVersion string
	apiVersions []string
	empty       bool // renders no object (a chart of NOTES, a schema test)
}

var parityCases = []parityCase{
	// Helm's own test charts (testdata/helmcharts/NOTICE).
	{dir: "helmcharts/alpine", release: "alp"},
	{dir: "helmcharts/chart-with-lib-dep", release: "libdep", namespace: "team-a"},
	{dir: "helmcharts/chart-with-only-crds", release: "crdonly"},
	{dir: "helmcharts/chart-with-schema", release: "schema", empty: true},
	{dir: "helmcharts/chart-with-schema", release: "schema-extra", values: "extra-values.yaml", empty: true},
	{dir: "helmcharts/chart-with-schema-and-subchart", release: "schemasub"},
	{dir: "helmcharts/chart-with-secret", release: "secret"},
	{dir: "helmcharts/chart-with-subchart-notes", release: "notes", empty: true},
	{dir: "helmcharts/chart-with-template-lib-dep", release: "tpllib"},
	{dir: "helmcharts/chart-with-template-lib-archive-dep", release: "tpllibarchive"},
	{dir: "helmcharts/issue-9027", release: "issue9027"},
	{dir: "helmcharts/issue1979", release: "issue1979"},
	{dir: "helmcharts/object-order", release: "order"},
	{dir: "helmcharts/subchart", release: "subchart", namespace: "sub"},
	{dir: "helmcharts/subchart", release: "subchart-tags", set: map[string]any{"tags": map[string]any{"front-end": false}}, setArgs: []string{"tags.front-end=false"}},
	{dir: "helmcharts/upgradetest", release: "upgrade"},
	{dir: "helmcharts/empty", release: "empty", empty: true},
	{dir: "helmcharts/frobnitz", release: "frob"},
	{dir: "helmcharts/subpop", release: "subpop"},
	{dir: "helmcharts/three-level-dependent-chart/umbrella", release: "umbrella"},
	{dir: "helmcharts/import-values-from-enabled-subchart/parent-chart", release: "imports"},
	{dir: "helmcharts/dependent-chart-alias", release: "alias"},
	// Charts written for dm's tests.
	{dir: "charts/basic", release: "web", namespace: "prod"},
	{dir: "charts/subcharts", release: "subs"},
	{dir: "charts/subcharts", release: "subs-off", set: map[string]any{"child": map[string]any{"enabled": false}}, setArgs: []string{"child.enabled=false"}},
	{dir: "charts/library", release: "lib"},
	{dir: "charts/tpl", release: "tpl"},
	{dir: "charts/lookup", release: "lookup"},
	{dir: "charts/hooks", release: "hooks"},
	{dir: "charts/required", release: "req", values: "parity-values.yaml"},
	{dir: "charts/required", release: "req-missing"},
	{dir: "charts/fail", release: "fail"},
	{dir: "charts/fail", release: "fail-wild", set: map[string]any{"mode": "wild"}, setArgs: []string{"mode=wild"}},
	{dir: "charts/schema", release: "myschema"},
	{dir: "charts/schema", release: "schema-bad", set: map[string]any{"replicas": 0}, setArgs: []string{"replicas=0"}},
	{dir: "charts/capabilities", release: "caps"},
	{dir: "charts/capabilities", release: "caps-old", kubeVersion: "v1.22.3", apiVersions: []string{"monitoring.coreos.com/v1", "policy/v1/PodDisruptionBudget"}},
	{dir: "charts/crds", release: "crds"},
	{dir: "charts/files", release: "files"},
	{dir: "charts/multidoc", release: "multi"},
	{dir: "charts/thirty", release: "thirty"},
}

// TestParity renders every chart with `helm template` and with Render and
// compares the objects (each with its source template), order aside. A
// chart helm refuses must be refused by Render too.
func TestParity(t *testing.T) {
	helm := helmBin(t)
	home := t.TempDir()
	env := append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	charts := map[string]bool{}
	for _, pc := range parityCases {
		charts[pc.dir] = true
		t.Run(pc.release, func(t *testing.T) {
			dir := filepath.Join("testdata", pc.dir)
			args := []string{"template", pc.release, dir, "--skip-tests", "--include-crds"}
			if pc.namespace != "" {
				args = append(args, "--namespace", pc.namespace)
			}
			vals := map[string]any{}
			if pc.values != "" {
				args = append(args, "-f", filepath.Join(dir, pc.values))
				v, err := chartutil.ReadValuesFile(filepath.Join(dir, pc.values))
				if err != nil {
					t.Fatal(err)
				}
				vals = v
			}
			for _, s := range pc.setArgs {
				args = append(args, "--set", s)
			}
			for k, v := range pc.set {
				vals[k] = v
			}
			if pc.kubeVersion != "" {
				args = append(args, "--kube-version", pc.kubeVersion)
			}
			for _, a := range pc.apiVersions {
				args = append(args, "--api-versions", a)
			}
			cmd := exec.Command(helm, args...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, helmErr := cmd.Output()

			c, err := LoadFS(os.DirFS(dir), 0)
			var res *Result
			if err == nil {
				res, err = Render(context.Background(), c, vals, Options{
					ReleaseName: pc.release, Namespace: pc.namespace,
					KubeVersion: pc.kubeVersion, APIVersions: pc.apiVersions,
				})
			}
			if helmErr != nil {
				if err == nil {
					t.Fatalf("helm template failed (%v: %s) but Render did not", helmErr, stderr.String())
				}
				t.Logf("both refuse: helm: %s; dm: %v", strings.TrimSpace(stderr.String()), err)
				return
			}
			if err != nil {
				t.Fatalf("Render: %v (helm template succeeded)", err)
			}
			want := helmObjects(t, string(out))
			got := ourObjects(t, res)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("objects differ\n--- helm template (%d)\n%s\n--- Render (%d)\n%s", len(want), strings.Join(want, "\n"), len(got), strings.Join(got, "\n"))
			}
			if len(want) == 0 && !pc.empty {
				t.Errorf("no objects at all: the case tests nothing")
			}
		})
	}
	if len(charts) < 20 {
		t.Errorf("%d charts in the parity corpus, want at least 20", len(charts))
	}
}

// helmObjects splits helm template's output into "source object-JSON"
// lines, sorted.
func helmObjects(t *testing.T, out string) []string {
	t.Helper()
	var objs []string
	src := ""
	for _, doc := range strings.Split("\n"+out, "\n---\n") {
		// The line break before a separator ends the document before it,
		// as Kubernetes' YAML reader reads helm's output.
		doc += "\n"
		// A document without its own Source line is a later document of
		// the same file (helm template prints a crds/ file whole).
		for _, l := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(l, "# Source: "); ok {
				src = s
				break
			}
		}
		if o := canonical(t, doc); o != "" {
			objs = append(objs, src+" "+o)
		}
	}
	sort.Strings(objs)
	return objs
}

// ourObjects gives Render's objects and hooks (each hook once, as helm
// template prints it) in helmObjects' form.
func ourObjects(t *testing.T, res *Result) []string {
	t.Helper()
	var objs []string
	for _, o := range res.Objects {
		objs = append(objs, o.Source+" "+canonical(t, o.Manifest))
	}
	seen := map[string]bool{}
	for _, tiers := range res.Hooks {
		for _, tier := range tiers {
			for _, h := range tier.Hooks {
				line := h.Source + " " + canonical(t, h.Manifest)
				if !seen[line] {
					seen[line] = true
					objs = append(objs, line)
				}
			}
		}
	}
	sort.Strings(objs)
	return objs
}

// canonical decodes a YAML document into compact JSON with sorted keys;
// an empty document gives "".
func canonical(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, doc)
	}
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
