// Package helmtest holds what the two chart parity tests share: package
// helm's (Render against helm template) and the repository root's (dm
// expand against helm template). Both render one corpus of charts, run
// the helm command the same way and compare the objects the same way.
package helmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Bin returns the helm command that hack/kube/build.sh builds (make
// testenv): helm in $DM_KUBE_BIN, else the repository's .testenv/bin. It
// fails the test when there is none; with -short it skips it instead.
func Bin(t testing.TB) string {
	t.Helper()
	var cands []string
	if d := os.Getenv("DM_KUBE_BIN"); d != "" {
		cands = append(cands, filepath.Join(d, "helm"))
	}
	if root := repoRoot(); root != "" {
		cands = append(cands, filepath.Join(root, ".testenv", "bin", "helm"))
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			p, _ := filepath.Abs(c)
			return p
		}
	}
	if testing.Short() {
		t.Skip("helm is not built (make testenv builds it); -short skips the parity test")
	}
	t.Fatalf("the chart parity test needs helm: none at %v (build it with make testenv, or hack/kube/build.sh .testenv/bin helm)", cands)
	return ""
}

// repoRoot is the directory of go.mod above the working directory (a
// test's package directory), "" if none.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Env is the environment for the helm command: the test's own, with
// Helm's cache, configuration and data (and HOME) in a directory of the
// test, so no run reads the user's repositories or another run's cache.
func Env(t testing.TB) []string {
	t.Helper()
	return append(os.Environ(), homeEnv(t)...)
}

// homeEnv puts Helm's cache, configuration, data and HOME in a directory
// of the test.
func homeEnv(t testing.TB) []string {
	home := t.TempDir()
	return []string{
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
		"HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
	}
}

// Install runs the helm command (Bin) with args against the cluster of
// kubeconfig, as a user installs or upgrades a release there, failing
// the test when it fails. Its environment is only a home of its own, so
// no $HELM_NAMESPACE or $HELM_DRIVER of the user's changes what it does.
func Install(t testing.TB, kubeconfig string, args ...string) {
	t.Helper()
	cmd := exec.Command(Bin(t), append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = homeEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Case is one chart of the corpus, with what it is rendered with.
type Case struct {
	// Dir is the chart's directory under internal/expand/helm/testdata.
	Dir string
	// Release names the case; it is the release name too unless Name is
	// set (the root test's template name in its registry, which dm's
	// --name then overrides).
	Release     string
	Name        string
	Namespace   string
	Values      string   // a values file of the chart's directory, or ""
	Set         []string // helm's --set (dm's --properties)
	KubeVersion string
	APIVersions []string
	// DMRefuses is dm expand's error for a chart helm template renders
	// but whose output Kubernetes would refuse: a document that is not
	// an object (no kind), an object name that is not a valid name. dm
	// checks every object it expands; helm template (and Render) print
	// what the chart made.
	DMRefuses string
	Empty     bool // renders no object (a chart of NOTES, a schema test)
}

// ReleaseName is the release the case renders as.
func (c Case) ReleaseName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Release
}

// Cases is the corpus: every case renders with helm template, with
// package helm's Render and with dm expand. Whether helm refuses a case
// is found by running it; the other two must then refuse it too.
var Cases = []Case{
	// Helm's own test charts (testdata/helmcharts/NOTICE).
	{Dir: "helmcharts/alpine", Release: "alp"},
	{Dir: "helmcharts/chart-with-lib-dep", Release: "libdep", Namespace: "team-a"},
	{Dir: "helmcharts/chart-with-only-crds", Release: "crdonly"},
	{Dir: "helmcharts/chart-with-schema", Release: "schema", Empty: true},
	{Dir: "helmcharts/chart-with-schema", Release: "schema-extra", Values: "extra-values.yaml", Empty: true},
	{Dir: "helmcharts/chart-with-schema-and-subchart", Release: "schemasub"},
	{Dir: "helmcharts/chart-with-secret", Release: "secret"},
	{Dir: "helmcharts/chart-with-subchart-notes", Release: "notes", Empty: true},
	{Dir: "helmcharts/chart-with-template-lib-dep", Release: "tpllib"},
	{Dir: "helmcharts/chart-with-template-lib-archive-dep", Release: "tpllibarchive"},
	{Dir: "helmcharts/issue-9027", Release: "issue9027", DMRefuses: "is not a Kubernetes kind"},
	{Dir: "helmcharts/issue1979", Release: "issue1979"},
	{Dir: "helmcharts/object-order", Release: "order"},
	{Dir: "helmcharts/subchart", Release: "subchart", Namespace: "sub"},
	{Dir: "helmcharts/subchart", Release: "subchart-tags", Set: []string{"tags.front-end=false"}},
	{Dir: "helmcharts/upgradetest", Release: "upgrade"},
	{Dir: "helmcharts/empty", Release: "empty", Empty: true},
	{Dir: "helmcharts/frobnitz", Release: "frob"},
	{Dir: "helmcharts/subpop", Release: "subpop", DMRefuses: "is not a valid Kubernetes name"},
	{Dir: "helmcharts/three-level-dependent-chart/umbrella", Release: "umbrella"},
	{Dir: "helmcharts/import-values-from-enabled-subchart/parent-chart", Release: "imports"},
	{Dir: "helmcharts/dependent-chart-alias", Release: "alias"},
	// Charts written for dm's tests.
	{Dir: "charts/basic", Release: "basic", Name: "web", Namespace: "prod"},
	{Dir: "charts/subcharts", Release: "subs"},
	{Dir: "charts/subcharts", Release: "subs-off", Set: []string{"child.enabled=false"}},
	{Dir: "charts/library", Release: "lib"},
	{Dir: "charts/tpl", Release: "tpl"},
	{Dir: "charts/lookup", Release: "lookup"},
	{Dir: "charts/hooks", Release: "hooks"},
	{Dir: "charts/required", Release: "req", Values: "parity-values.yaml"},
	{Dir: "charts/required", Release: "req-missing"},
	{Dir: "charts/fail", Release: "fail"},
	{Dir: "charts/fail", Release: "fail-wild", Set: []string{"mode=wild"}},
	{Dir: "charts/schema", Release: "myschema"},
	{Dir: "charts/schema", Release: "schema-bad", Set: []string{"replicas=0"}},
	{Dir: "charts/capabilities", Release: "caps"},
	{Dir: "charts/capabilities", Release: "caps-old", KubeVersion: "v1.22.3", APIVersions: []string{"monitoring.coreos.com/v1", "policy/v1/PodDisruptionBudget"}},
	{Dir: "charts/crds", Release: "crds"},
	{Dir: "charts/files", Release: "files"},
	{Dir: "charts/multidoc", Release: "multi"},
	{Dir: "charts/thirty", Release: "thirty"},
}

// MinCharts is how many distinct charts the corpus must hold at least.
const MinCharts = 20

// CheckCorpus fails the test when Cases holds fewer than MinCharts
// distinct charts.
func CheckCorpus(t testing.TB) {
	t.Helper()
	charts := map[string]bool{}
	for _, c := range Cases {
		charts[c.Dir] = true
	}
	if len(charts) < MinCharts {
		t.Errorf("%d charts in the parity corpus, want at least %d", len(charts), MinCharts)
	}
}

// TemplateArgs are the arguments of helm template for c, whose chart is
// at dir: test hooks left out, CRDs included, as dm renders a chart.
func TemplateArgs(c Case, dir string) []string {
	args := []string{"template", c.ReleaseName(), dir, "--skip-tests", "--include-crds"}
	return append(args, c.Flags(dir, FlagNames{Namespace: "--namespace", Values: "-f", Set: "--set"})...)
}

// FlagNames are what a command (helm template, dm expand) calls the
// flags of a case's namespace, values file and --set values; both call
// --kube-version and --api-versions so.
type FlagNames struct{ Namespace, Values, Set string }

// Flags are the flags that render c, whose chart is at dir, with a
// command that names them n.
func (c Case) Flags(dir string, n FlagNames) []string {
	var args []string
	if c.Namespace != "" {
		args = append(args, n.Namespace, c.Namespace)
	}
	if c.Values != "" {
		args = append(args, n.Values, filepath.Join(dir, c.Values))
	}
	for _, s := range c.Set {
		args = append(args, n.Set, s)
	}
	if c.KubeVersion != "" {
		args = append(args, "--kube-version", c.KubeVersion)
	}
	for _, a := range c.APIVersions {
		args = append(args, "--api-versions", a)
	}
	return args
}

// Object is one object of a YAML stream: the template it came from (helm
// template's "# Source:" line; "" without one), its helm.sh/hook
// annotation and the object as canonical JSON.
type Object struct {
	Source string
	Hook   string
	JSON   string
}

// Objects splits a YAML stream (helm template's or dm's) into its
// objects, empty documents left out.
func Objects(t testing.TB, out string) []Object {
	t.Helper()
	var objs []Object
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
		m := decode(t, doc)
		if len(m) == 0 {
			continue
		}
		meta, _ := m["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		hook, _ := ann["helm.sh/hook"].(string)
		objs = append(objs, Object{Source: src, Hook: hook, JSON: marshal(t, m)})
	}
	return objs
}

// Canonical decodes a YAML document into compact JSON with sorted keys;
// an empty document gives "".
func Canonical(t testing.TB, doc string) string {
	t.Helper()
	m := decode(t, doc)
	if len(m) == 0 {
		return ""
	}
	return marshal(t, m)
}

func decode(t testing.TB, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, doc)
	}
	return m
}

func marshal(t testing.TB, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Compare fails the test when got (what dm made, named by ours) and want
// (helm template's) differ as sets of lines, or when both are empty and
// the case expects objects: such a case tests nothing.
func Compare(t testing.TB, c Case, ours string, want, got []string) {
	t.Helper()
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("objects differ\n--- helm template (%d)\n%s\n--- %s (%d)\n%s", len(want), strings.Join(want, "\n"), ours, len(got), strings.Join(got, "\n"))
	}
	if len(want) == 0 && !c.Empty {
		t.Errorf("no objects at all: the case tests nothing")
	}
}
