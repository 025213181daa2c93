package dm_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// buildDMHelm builds dm and dm-helm into one directory, as make install
// puts them, and returns dm's path.
func buildDMHelm(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/dm", "./cmd/dm-helm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "dm")
}

// helmCLI finds the helm command make testenv builds.
func helmCLI(t *testing.T) string {
	t.Helper()
	cands := []string{}
	if d := os.Getenv("DM_KUBE_BIN"); d != "" {
		cands = append(cands, filepath.Join(d, "helm"))
	}
	cands = append(cands, ".testenv/bin/helm")
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			p, _ := filepath.Abs(c)
			return p
		}
	}
	t.Fatalf("the chart parity test needs helm: none at %v (make testenv builds it)", cands)
	return ""
}

// chartCase is a chart of internal/expand/helm's parity corpus, rendered
// by dm expand and by helm template.
type chartCase struct {
	dir         string // under internal/expand/helm/testdata
	release     string // the template's name in the registry, so the release name
	name        string // --name, if the release is not the template's name
	namespace   string
	values      string // a values file of the chart's directory
	set         []string
	kubeVersion string
	apiVersions []string
	refused     bool // helm template refuses it
	// dmRefuses is dm's error for a chart helm template renders but whose
	// output Kubernetes would refuse: a document that is not an object
	// (no kind), an object name that is not a valid name. dm checks every
	// object it expands; helm template prints what the chart made.
	dmRefuses string
	empty     bool // no object
}

var chartCases = []chartCase{
	{dir: "helmcharts/alpine", release: "alp"},
	{dir: "helmcharts/chart-with-lib-dep", release: "libdep", namespace: "team-a"},
	{dir: "helmcharts/chart-with-only-crds", release: "crdonly"},
	{dir: "helmcharts/chart-with-schema", release: "schema", empty: true},
	{dir: "helmcharts/chart-with-schema-and-subchart", release: "schemasub", refused: true},
	{dir: "helmcharts/chart-with-secret", release: "secret"},
	{dir: "helmcharts/chart-with-template-lib-dep", release: "tpllib"},
	{dir: "helmcharts/chart-with-template-lib-archive-dep", release: "tpllibarchive"},
	{dir: "helmcharts/issue-9027", release: "issue9027", dmRefuses: "is not a Kubernetes kind"},
	{dir: "helmcharts/issue1979", release: "issue1979", refused: true},
	{dir: "helmcharts/object-order", release: "order"},
	{dir: "helmcharts/subchart", release: "subchart", namespace: "sub"},
	{dir: "helmcharts/subchart", release: "subchart-tags", set: []string{"tags.front-end=false"}},
	{dir: "helmcharts/frobnitz", release: "frob", refused: true},
	{dir: "helmcharts/subpop", release: "subpop", dmRefuses: "is not a valid Kubernetes name"},
	{dir: "helmcharts/three-level-dependent-chart/umbrella", release: "umbrella", refused: true},
	{dir: "helmcharts/import-values-from-enabled-subchart/parent-chart", release: "imports"},
	{dir: "helmcharts/dependent-chart-alias", release: "alias", refused: true},
	{dir: "helmcharts/chart-with-subchart-notes", release: "notes", empty: true},
	{dir: "helmcharts/empty", release: "empty", empty: true},
	{dir: "charts/basic", release: "basic", name: "web", namespace: "prod"},
	{dir: "charts/subcharts", release: "subs"},
	{dir: "charts/subcharts", release: "subs-off", set: []string{"child.enabled=false"}},
	{dir: "charts/library", release: "lib"},
	{dir: "charts/tpl", release: "tpl"},
	{dir: "charts/lookup", release: "lookup"},
	{dir: "charts/hooks", release: "hooks"},
	{dir: "charts/required", release: "req", values: "parity-values.yaml"},
	{dir: "charts/required", release: "req-missing", refused: true},
	{dir: "charts/fail", release: "fail"},
	{dir: "charts/fail", release: "fail-wild", set: []string{"mode=wild"}, refused: true},
	{dir: "charts/schema", release: "myschema"},
	{dir: "charts/schema", release: "schema-bad", set: []string{"replicas=0"}, refused: true},
	{dir: "charts/capabilities", release: "caps"},
	{dir: "charts/capabilities", release: "caps-old", kubeVersion: "v1.22.3", apiVersions: []string{"monitoring.coreos.com/v1", "policy/v1/PodDisruptionBudget"}},
	{dir: "charts/crds", release: "crds"},
	{dir: "charts/files", release: "files"},
	{dir: "charts/multidoc", release: "multi"},
	{dir: "charts/thirty", release: "thirty"},
}

// TestChartParityDM is issue 15's contract: dm --registry-dir PREFIX=DIR
// expand REF -o manifest renders a chart version directory as helm
// template does. Helm template prints every hook; dm expands a chart as a
// first install, so its install hooks (pre-install, post-install) are
// among the objects and hooks of other events and test hooks are not: the
// test compares with helm template --skip-tests less the hooks of no
// install event. Objects compare as canonical JSON, order aside.
func TestChartParityDM(t *testing.T) {
	helm := helmCLI(t)
	dm := buildDMHelm(t)
	home := t.TempDir()
	env := append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"),
	)
	reg := t.TempDir()
	charts := map[string]bool{}
	for _, c := range chartCases {
		charts[c.dir] = true
		copyTree(t, filepath.Join("internal/expand/helm/testdata", c.dir), filepath.Join(reg, c.release, "v1"))
	}
	if len(charts) < 20 {
		t.Errorf("%d charts, want at least 20", len(charts))
	}
	for _, c := range chartCases {
		t.Run(c.release, func(t *testing.T) {
			src := filepath.Join("internal/expand/helm/testdata", c.dir)
			release := c.release
			dargs := []string{"--registry-dir", "example.com/helm/parity=" + reg, "expand", c.release + ":v1", "-o", "manifest"}
			if c.name != "" {
				release = c.name
				dargs = append(dargs, "--name", c.name)
			}
			hargs := []string{"template", release, src, "--skip-tests", "--include-crds"}
			if c.namespace != "" {
				hargs = append(hargs, "--namespace", c.namespace)
				dargs = append(dargs, "-n", c.namespace)
			}
			if c.values != "" {
				hargs = append(hargs, "-f", filepath.Join(src, c.values))
				dargs = append(dargs, "--values", filepath.Join(src, c.values))
			}
			for _, s := range c.set {
				hargs = append(hargs, "--set", s)
				dargs = append(dargs, "--properties", s)
			}
			if c.kubeVersion != "" {
				hargs = append(hargs, "--kube-version", c.kubeVersion)
				dargs = append(dargs, "--kube-version", c.kubeVersion)
			}
			for _, a := range c.apiVersions {
				hargs = append(hargs, "--api-versions", a)
				dargs = append(dargs, "--api-versions", a)
			}
			hout, herr := run(t, env, helm, hargs...)
			dout, derr := run(t, env, dm, dargs...)
			if c.dmRefuses != "" {
				if herr != "" || !strings.Contains(derr, c.dmRefuses) {
					t.Fatalf("want helm to render and dm to refuse with %q; helm: %q, dm: %q", c.dmRefuses, herr, derr)
				}
				return
			}
			if c.refused {
				if herr == "" || derr == "" {
					t.Fatalf("want both to refuse; helm: %q, dm: %q", herr, derr)
				}
				t.Logf("both refuse: helm: %s; dm: %s", herr, derr)
				return
			}
			if herr != "" || derr != "" {
				t.Fatalf("helm: %s\ndm: %s", herr, derr)
			}
			want := manifestObjects(t, hout, true)
			got := manifestObjects(t, dout, false)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("objects differ\n--- helm template (%d)\n%s\n--- dm expand (%d)\n%s", len(want), strings.Join(want, "\n"), len(got), strings.Join(got, "\n"))
			}
			if len(want) == 0 && !c.empty {
				t.Errorf("no objects at all: the case tests nothing")
			}
		})
	}
}

// run runs a program and returns its stdout, and its stderr when it failed.
func run(t *testing.T, env []string, prog string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), strings.TrimSpace(err.Error() + ": " + stderr.String())
	}
	return stdout.String(), ""
}

// manifestObjects splits a YAML stream into canonical JSON objects,
// sorted; with installOnly, hooks of no install event are left out.
func manifestObjects(t *testing.T, out string, installOnly bool) []string {
	t.Helper()
	var objs []string
	for _, doc := range strings.Split("\n"+out, "\n---\n") {
		// The line break before a separator ends the document before it,
		// as Kubernetes' YAML reader reads helm's output.
		doc += "\n"
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		if installOnly {
			meta, _ := m["metadata"].(map[string]any)
			ann, _ := meta["annotations"].(map[string]any)
			if h, ok := ann["helm.sh/hook"].(string); ok && !strings.Contains(h, "-install") {
				continue
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, string(b))
	}
	sort.Strings(objs)
	return objs
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
