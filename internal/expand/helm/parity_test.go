package helm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/dmhq/dm/internal/expand/helm/helmtest"
)

// TestParity renders every chart of helmtest's corpus with `helm
// template` and with Render and compares the objects (each with its
// source template), order aside. A chart helm refuses must be refused by
// Render too.
func TestParity(t *testing.T) {
	helm := helmtest.Bin(t)
	env := helmtest.Env(t)
	helmtest.CheckCorpus(t)
	for _, pc := range helmtest.Cases {
		t.Run(pc.Release, func(t *testing.T) {
			dir := filepath.Join("testdata", pc.Dir)
			vals := map[string]any{}
			if pc.Values != "" {
				v, err := chartutil.ReadValuesFile(filepath.Join(dir, pc.Values))
				if err != nil {
					t.Fatal(err)
				}
				vals = v
			}
			for _, s := range pc.Set {
				// As helm reads --set, over the values file.
				if err := strvals.ParseInto(s, vals); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(helm, helmtest.TemplateArgs(pc, dir)...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, helmErr := cmd.Output()

			c, err := LoadFS(os.DirFS(dir), 0)
			var res *Result
			if err == nil {
				res, err = Render(context.Background(), c, vals, Options{
					ReleaseName: pc.ReleaseName(), Namespace: pc.Namespace,
					KubeVersion: pc.KubeVersion, APIVersions: pc.APIVersions,
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
			var want []string
			for _, o := range helmtest.Objects(t, string(out)) {
				want = append(want, o.Source+" "+o.JSON)
			}
			helmtest.Compare(t, pc, "Render", want, ourObjects(t, res))
		})
	}
}

// ourObjects gives Render's objects and hooks (each hook once, as helm
// template prints it) as "source object-JSON" lines, as TestParity
// compares helm template's.
func ourObjects(t *testing.T, res *Result) []string {
	t.Helper()
	var objs []string
	for _, o := range res.Objects {
		objs = append(objs, o.Source+" "+helmtest.Canonical(t, o.Manifest))
	}
	seen := map[string]bool{}
	for _, tiers := range res.Hooks {
		for _, tier := range tiers {
			for _, h := range tier.Hooks {
				line := h.Source + " " + helmtest.Canonical(t, h.Manifest)
				if !seen[line] {
					seen[line] = true
					objs = append(objs, line)
				}
			}
		}
	}
	return objs
}
