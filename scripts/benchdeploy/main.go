// Command benchdeploy times `dm deploy` against `kubectl apply
// --server-side` of the same objects, as whole processes, against one
// kube-apiserver (package kubetest) started for the run. `make
// bench-deploy` runs it.
//
// The objects are 100 ConfigMaps of 10 keys each, made by one Jinja
// template with loops in a temporary registry; kubectl applies the objects
// `dm expand -o json` gives for it, written to a file once. Each timing is
// the median (and the best) of -runs runs, interleaved so that load on the
// machine falls on all of them alike:
//
//   - cold: into a fresh namespace (dm: a new deployment);
//   - unchanged: the same objects again (dm: deploy --upgrade of the same
//     deployment, a new revision with nothing changed).
//
// kubectl runs with --validate=false (the comparison: no OpenAPI download
// and parse before the first PATCH; dm leaves validation to the server) and,
// for reference, with its default client-side validation, both with its
// OpenAPI cache warm (as a person's ~/.kube/cache usually is) and empty.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

const template = `{#- benchdeploy: properties.count ConfigMaps of properties.keys keys each. #}
resources:
{%- for i in range(properties["count"]) %}
- name: {{ env["name"] }}-cm-{{ i }}
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{ env["name"] }}-{{ i }}
    data:
      {%- for k in range(properties["keys"]) %}
      key-{{ k }}: "value {{ k }} of configmap {{ i }}"
      {%- endfor %}
{%- endfor %}
`

const schema = `info:
  title: ConfigMaps
  description: properties.count ConfigMaps of properties.keys keys each, for make bench-deploy.
properties:
  count:
    type: integer
    default: 100
  keys:
    type: integer
    default: 10
`

func main() {
	runs := flag.Int("runs", 5, "runs of each measurement; the median is reported")
	dm := flag.String("dm", "bin/dm", "the dm executable")
	flag.Parse()
	if err := run(*dm, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "benchdeploy:", err)
		os.Exit(1)
	}
}

// sample is one whole process's wall time and CPU time (user + system).
type sample struct{ wall, cpu time.Duration }

// series are the samples of one measurement.
type series struct {
	name      string
	wall, cpu []time.Duration
}

// bench holds what every measurement needs.
type bench struct {
	env     *kubetest.Env
	dm      string
	tmp     string
	regFlag string
	objects string
	kcache  string
	seq     int
}

func run(dm string, runs int) error {
	if runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	dm, err := filepath.Abs(dm)
	if err != nil {
		return err
	}
	bins, err := kubetest.FindBinaries()
	if err != nil {
		return err
	}
	if bins.Kubectl == "" {
		return errors.New("kubectl not found beside kube-apiserver (make testenv builds both)")
	}
	tmp, err := os.MkdirTemp("", "benchdeploy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	reg := filepath.Join(tmp, "registry")
	if err := os.MkdirAll(filepath.Join(reg, "cms", "v1.0.0"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(reg, "cms", "v1.0.0", "cms.jinja"), []byte(template), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(reg, "cms", "v1.0.0", "cms.jinja.schema"), []byte(schema), 0o644); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	env, err := kubetest.Launch(ctx, kubetest.Options{Binaries: bins})
	if err != nil {
		return err
	}
	defer env.Close()
	b := &bench{
		env:     env,
		dm:      dm,
		tmp:     tmp,
		regFlag: "--registry-dir=github.com/bench/deploy=" + reg,
		objects: filepath.Join(tmp, "objects.json"),
		kcache:  filepath.Join(tmp, "kubectl-cache"),
	}
	n, err := b.writeObjects(ctx)
	if err != nil {
		return err
	}
	_, version, err := env.Do(ctx, env.AdminToken, "GET", "/version", nil)
	if err != nil {
		return err
	}
	var v struct{ GitVersion string }
	_ = json.Unmarshal(version, &v)
	fmt.Printf("kube-apiserver %s at %s; %d objects (100 ConfigMaps of 10 keys), %d runs of each\n",
		v.GitVersion, env.Server, n, runs)

	// Warm up both clients (discovery caches, page cache of the binaries)
	// and check that both made every object; these runs are not counted.
	kns, _, err := b.kubectlColdNS(ctx, false, b.kcache)
	if err != nil {
		return err
	}
	if err := b.check(ctx, kns, "", n); err != nil {
		return err
	}
	// The apiserver builds its OpenAPI documents on first request: let
	// that fall on a warm-up run, not on kubectl's first validating one.
	if _, err := b.kubectlCold(ctx, true, b.kcache); err != nil {
		return err
	}
	ns, _, err := b.dmCold(ctx)
	if err != nil {
		return err
	}
	if err := b.check(ctx, ns, "app.kubernetes.io/managed-by=dm", n); err != nil {
		return err
	}

	dmCold := &series{name: "dm deploy, cold (new deployment, fresh namespace)"}
	dmSame := &series{name: "dm deploy --upgrade, unchanged"}
	kCold := &series{name: "kubectl apply --server-side --validate=false, cold"}
	kSame := &series{name: "kubectl apply --server-side --validate=false, unchanged"}
	kVal := &series{name: "kubectl apply --server-side (validation on), cold"}
	kValNoCache := &series{name: "  the same with an empty cache (OpenAPI downloaded)"}
	for i := 0; i < runs; i++ {
		steps := []struct {
			into *series
			f    func() (sample, error)
		}{
			{dmCold, func() (sample, error) { _, d, err := b.dmCold(ctx); return d, err }},
			{dmSame, func() (sample, error) { return b.dmUnchanged(ctx, ns) }},
			{kCold, func() (sample, error) { return b.kubectlCold(ctx, false, b.kcache) }},
			{kSame, func() (sample, error) { return b.kubectl(ctx, kns, false, b.kcache) }},
			{kVal, func() (sample, error) { return b.kubectlCold(ctx, true, b.kcache) }},
			{kValNoCache, func() (sample, error) {
				return b.kubectlCold(ctx, true, filepath.Join(tmp, fmt.Sprintf("kubectl-cache-%d", i)))
			}},
		}
		for _, s := range steps {
			d, err := s.f()
			if err != nil {
				return err
			}
			s.into.wall = append(s.into.wall, d.wall)
			s.into.cpu = append(s.into.cpu, d.cpu)
		}
	}
	fmt.Printf("%-56s %8s %8s %8s  %s\n", "whole process; medians but for best", "wall", "best", "CPU", "wall of each run")
	for _, s := range []*series{dmCold, dmSame, kCold, kSame, kVal, kValNoCache} {
		fmt.Printf("%-56s %8s %8s %8s  %s\n", s.name, ms(median(s.wall)), ms(slices.Min(s.wall)), ms(median(s.cpu)), list(s.wall))
	}
	ratio := func(f func([]time.Duration) time.Duration, a, b []time.Duration) float64 {
		return float64(f(a)) / float64(f(b))
	}
	best := slices.Min[[]time.Duration]
	fmt.Printf("dm / kubectl --validate=false (target <= 0.50x): cold %.2fx, unchanged %.2fx (medians); best runs %.2fx, %.2fx; CPU %.2fx, %.2fx\n",
		ratio(median, dmCold.wall, kCold.wall), ratio(median, dmSame.wall, kSame.wall),
		ratio(best, dmCold.wall, kCold.wall), ratio(best, dmSame.wall, kSame.wall),
		ratio(median, dmCold.cpu, kCold.cpu), ratio(median, dmSame.cpu, kSame.cpu))
	fmt.Printf("dm / kubectl with validation, cold: %.2fx, %.2fx with an empty cache (medians)\n",
		ratio(median, dmCold.wall, kVal.wall), ratio(median, dmCold.wall, kValNoCache.wall))
	return nil
}

// writeObjects expands the template with dm and writes its objects as a v1
// List for kubectl.
func (b *bench) writeObjects(ctx context.Context) (int, error) {
	out, err := exec.CommandContext(ctx, b.dm, b.regFlag, "expand", "cms:v1.0.0", "-o", "json").Output()
	if err != nil {
		return 0, fmt.Errorf("dm expand: %w%s", err, stderrOf(err))
	}
	var expanded struct {
		Config struct {
			Resources []struct {
				Properties map[string]any `json:"properties"`
			} `json:"resources"`
		} `json:"config"`
	}
	if err := json.Unmarshal(out, &expanded); err != nil {
		return 0, fmt.Errorf("decoding dm expand -o json: %w", err)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}
	var items []any
	for _, r := range expanded.Config.Resources {
		items = append(items, r.Properties)
	}
	list["items"] = items
	data, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	return len(items), os.WriteFile(b.objects, data, 0o644)
}

// namespace creates a fresh namespace (not timed).
func (b *bench) namespace(ctx context.Context) (string, error) {
	b.seq++
	ns := fmt.Sprintf("bench-%d", b.seq)
	return ns, b.env.CreateNamespace(ctx, ns)
}

func (b *bench) dmCold(ctx context.Context) (string, sample, error) {
	ns, err := b.namespace(ctx)
	if err != nil {
		return "", sample{}, err
	}
	d, err := timed(ctx, b.dm, "--kubeconfig", b.env.Kubeconfig, "-n", ns, b.regFlag, "deploy", "cms:v1.0.0", "--name", "cms")
	return ns, d, err
}

func (b *bench) dmUnchanged(ctx context.Context, ns string) (sample, error) {
	return timed(ctx, b.dm, "--kubeconfig", b.env.Kubeconfig, "-n", ns, b.regFlag, "deploy", "cms:v1.0.0", "--name", "cms", "--upgrade")
}

func (b *bench) kubectlColdNS(ctx context.Context, validate bool, cache string) (string, sample, error) {
	ns, err := b.namespace(ctx)
	if err != nil {
		return "", sample{}, err
	}
	d, err := b.kubectl(ctx, ns, validate, cache)
	return ns, d, err
}

func (b *bench) kubectlCold(ctx context.Context, validate bool, cache string) (sample, error) {
	_, d, err := b.kubectlColdNS(ctx, validate, cache)
	return d, err
}

// kubectl applies the objects into ns; cache is its discovery and OpenAPI
// cache directory.
func (b *bench) kubectl(ctx context.Context, ns string, validate bool, cache string) (sample, error) {
	args := []string{"--kubeconfig", b.env.Kubeconfig, "--cache-dir", cache, "-n", ns,
		"apply", "--server-side", "-f", b.objects}
	if !validate {
		args = append(args, "--validate=false")
	}
	return timed(ctx, b.env.Kubectl, args...)
}

// check fails unless ns holds want ConfigMaps matching selector.
func (b *bench) check(ctx context.Context, ns, selector string, want int) error {
	path := "/api/v1/namespaces/" + ns + "/configmaps?labelSelector=" + url.QueryEscape(selector)
	code, body, err := b.env.Do(ctx, b.env.AdminToken, "GET", path, nil)
	if err != nil {
		return err
	}
	var l struct{ Items []json.RawMessage }
	if err := json.Unmarshal(body, &l); code != 200 || err != nil {
		return fmt.Errorf("GET %s: %d %s", path, code, body)
	}
	if len(l.Items) != want {
		return fmt.Errorf("namespace %s holds %d ConfigMaps matching %q, want %d", ns, len(l.Items), selector, want)
	}
	return nil
}

// timed runs a program to its end and returns how long it took.
func timed(ctx context.Context, bin string, args ...string) (sample, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return sample{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return "\n" + string(ee.Stderr)
	}
	return ""
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func list(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond))
	}
	return strings.Join(parts, " ") + " ms"
}
