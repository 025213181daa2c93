package dm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// TestSkipSchemaValidationCluster: dm deploy and dm update of a template
// whose child's schema refuses its properties (DM's storage/redis:v1)
// fail, naming --skip-schema-validation, and with it apply the objects
// with the schema's defaults.
func TestSkipSchemaValidationCluster(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	env := kubetest.Shared(t)
	d := &dmRun{t: t, bin: dmBin, kubeconfig: env.Kubeconfig, ns: env.Namespace(t)}
	cfg := filepath.Join("testdata", "skipschema", "cfg.yaml")

	if _, errs, code := d.run("deploy", cfg, "--name", "cache"); code == 0 || !strings.Contains(errs, "properties.env: expected object, got array") || !strings.Contains(errs, "--skip-schema-validation") {
		t.Fatalf("deploy without the flag: exit %d, stderr %q", code, errs)
	}
	if n := labelledCount(t, env.Kubeconfig, d.ns, "cache", "configmaps"); n != 0 {
		t.Fatalf("a refused deploy created %d objects", n)
	}
	d.ok("deploy", cfg, "--name", "cache", "--skip-schema-validation")
	if n := labelledCount(t, env.Kubeconfig, d.ns, "cache", "configmaps"); n != 1 {
		t.Fatalf("deploy --skip-schema-validation: %d ConfigMaps, want 1", n)
	}
	if _, errs, code := d.run("update", "cache", cfg); code == 0 || !strings.Contains(errs, "--skip-schema-validation") {
		t.Errorf("update without the flag: exit %d, stderr %q", code, errs)
	}
	d.ok("update", "cache", cfg, "--skip-schema-validation")
	var got struct {
		Revision int `json:"revision"`
	}
	d.json(&got, "get", "cache")
	if got.Revision != 2 {
		t.Errorf("revision %d after the update, want 2", got.Revision)
	}
}
