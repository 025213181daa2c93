//go:build dmsamples

// The corpus of public DM samples is read from a checkout this project
// does not hold (make dm-samples), so it is built only with the tag
// dmsamples: make test neither runs nor skips it.

package manifest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/configfile"
	"github.com/dmhq/dm/internal/gcp/kcctest"
)

// dmSamples is testdata/dmsamples.yaml.
type dmSamples struct {
	Samples []struct {
		// Repo is the repository (OWNER/NAME) of a list of several, read
		// from $DIR/OWNER/NAME; Commit the commit its files were read at.
		Repo, Commit string
		// Deployment is the deployment's name, where the repository says
		// which to give (its README's gcloud deployment-manager
		// deployments create NAME): its templates read it. By default,
		// the configuration's file name.
		Deployment string
		Config     string
		Files      map[string]string
		Properties map[string]any
		Expect     string
	}
}

// sampleLists are the corpora TestDMSamples runs: each list in testdata
// names files of one public repository, read from the checkout the
// environment variable names.
var sampleLists = []struct{ file, env, repo string }{
	{"testdata/dmsamples.yaml", "DM_SAMPLES_DIR", "GoogleCloudPlatform/deploymentmanager-samples"},
	{"testdata/cftsamples.yaml", "CFT_SAMPLES_DIR", "GoogleCloudPlatform/cloud-foundation-toolkit"},
}

// TestDMSamples converts public Deployment Manager configurations nobody
// here wrote (testdata/dmsamples.yaml, read from $DM_SAMPLES_DIR, a
// checkout of GoogleCloudPlatform/deploymentmanager-samples;
// testdata/cftsamples.yaml, read from $CFT_SAMPLES_DIR, a checkout of
// GoogleCloudPlatform/cloud-foundation-toolkit) as dm convert does, and
// applies every object to the test apiserver holding Config Connector's
// CRDs with strict field validation. A sample expected to fail must fail
// with the error its entry names.
func TestDMSamples(t *testing.T) {
	runSamples(t, sampleLists, "make dm-samples DM_SAMPLES_DIR=DIR CFT_SAMPLES_DIR=DIR")
}

// publicLists is the corpus of DM configurations from other public
// repositories: appliance vendors' and partners' deployment templates,
// projects' install templates, personal repositories.
var publicLists = []struct{ file, env, repo string }{
	{"testdata/dmpublic.yaml", "DM_PUBLIC_DIR", "the repositories it names (DIR/OWNER/NAME, at the commit each entry names)"},
}

// TestDMPublic is TestDMSamples for testdata/dmpublic.yaml: public
// Deployment Manager configurations of many repositories, each read from
// $DM_PUBLIC_DIR/OWNER/NAME.
func TestDMPublic(t *testing.T) {
	runSamples(t, publicLists, "make dm-public DM_PUBLIC_DIR=DIR")
}

func runSamples(t *testing.T, lists []struct{ file, env, repo string }, how string) {
	env := kubetest.Shared(t)
	crds := kcctest.InstallCRDs(t, env)
	converted, applied, refused, total := 0, 0, 0, 0
	for _, l := range lists {
		dir := os.Getenv(l.env)
		if dir == "" {
			t.Fatalf("%s is not set: it names a checkout of %s (%s); %s", l.env, l.repo, l.file, how)
		}
		b, err := os.ReadFile(l.file)
		if err != nil {
			t.Fatal(err)
		}
		var list dmSamples
		if err := yaml.Unmarshal(b, &list); err != nil {
			t.Fatalf("%s: %v", l.file, err)
		}
		total += len(list.Samples)
		for _, s := range list.Samples {
			root, name := dir, sampleName(s.Config)
			if s.Repo != "" {
				root, name = filepath.Join(dir, filepath.FromSlash(s.Repo)), s.Repo+"/"+s.Config
			}
			t.Run(name, func(t *testing.T) {
				for f := range s.Files {
					if _, err := os.Stat(filepath.Join(root, f)); err != nil {
						t.Fatalf("%s is missing from %s: %v", f, l.env, err)
					}
				}
				deployment := s.Deployment
				if deployment == "" {
					deployment = dmDeploymentName(s.Config)
				}
				objs, err := convertSample(t.Context(), root, s.Config, deployment, s.Properties)
				if s.Expect != "ok" {
					if err == nil || !strings.Contains(err.Error(), s.Expect) {
						t.Fatalf("want an error containing %q, got %v", s.Expect, err)
					}
					refused++
					t.Logf("refused, as expected: %v", err)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				converted++
				ns := env.Namespace(t)
				var kinds []string
				for _, o := range objs {
					kind, _ := o["kind"].(string)
					apiVersion, _ := o["apiVersion"].(string)
					name, _ := o["metadata"].(map[string]any)["name"].(string)
					crd, ok := crds[kind]
					if !ok {
						t.Errorf("%s %s: no Config Connector CRD of kind %s", kind, name, kind)
						continue
					}
					body, _ := json.Marshal(o)
					if err := kcctest.ApplyStrict(env, "/apis/"+apiVersion+"/namespaces/"+ns+"/"+crd.Plural+"/"+name, body); err != nil {
						y, _ := yaml.Marshal(o)
						t.Errorf("%s %s refused: %v\n%s", kind, name, err, y)
						continue
					}
					kinds = append(kinds, kind)
				}
				if !t.Failed() {
					applied++
				}
				t.Logf("%d objects applied: %s", len(kinds), strings.Join(kinds, ", "))
			})
		}
	}
	t.Logf("%d samples: %d converted and applied (%d converted), %d refused as expected", total, applied, converted, refused)
}

// sampleName is the subtest name of the configuration at config: its
// path without the directory every sample of its kind shares.
func sampleName(config string) string {
	for _, p := range []string{"examples/v2/", "community/cloud-foundation/templates/", "dm/templates/"} {
		if n, ok := strings.CutPrefix(config, p); ok {
			return n
		}
	}
	return config
}

// convertSample expands and converts the configuration at config (a path
// under root, its import root) as dm convert --project acme-samples does,
// and fills the references only live objects have with stand-ins.
func convertSample(ctx context.Context, root, config, deployment string, props map[string]any) ([]map[string]any, error) {
	f, err := configfile.Read(filepath.Join(root, config), nil, root)
	if err != nil {
		return nil, err
	}
	res, err := expand.New(expand.Options{}).Expand(ctx, expand.Request{
		Config: f.Content, ConfigName: f.Name, Imports: f.Imports, Properties: props,
		Deployment: deployment, Namespace: "default",
		Env: map[string]string{"project": "acme-samples"},
	})
	if err != nil {
		return nil, err
	}
	m, err := Of(res, Options{Project: "acme-samples", DeletionPolicy: "abandon"})
	if err != nil {
		return nil, err
	}
	objs := m.Maps()
	for _, o := range m.Objects {
		for _, d := range o.Deferred {
			cur, _ := PointerGet(o.Object, d.Field)
			if s, ok := cur.(string); ok {
				PointerSet(o.Object, d.Field, strings.ReplaceAll(s, d.Ref, "10.0.0.2"))
			}
		}
	}
	return objs, nil
}

// dmDeploymentName names the deployment after the configuration's file as
// Deployment Manager could have: its names are lower case letters, digits
// and dashes ([a-z]([-a-z0-9]*[a-z0-9])?), so db.example.yaml is deployed
// as db-example (a dot in the name would end NAME in $(ref.NAME.field)).
func dmDeploymentName(config string) string {
	base := strings.ToLower(strings.TrimSuffix(filepath.Base(config), filepath.Ext(config)))
	return strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, base), "-")
}
