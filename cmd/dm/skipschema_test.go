package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkipSchemaValidation: dm expand validates schemas unless
// --skip-schema-validation, and says so in the error; deploy, update and
// diff take the flag to their expansion.
func TestSkipSchemaValidation(t *testing.T) {
	// DM's storage/redis:v1 case, shared with the cluster test.
	cfg := filepath.Join("..", "..", "testdata", "skipschema", "cfg.yaml")
	r := dmRun(t, nil, "expand", cfg)
	if r.code != 1 || !strings.Contains(r.stderr, "properties.env: expected object, got array") || !strings.Contains(r.stderr, "--skip-schema-validation") {
		t.Errorf("without the flag: exit %d\n%s", r.code, r.stderr)
	}
	r = dmRun(t, nil, "expand", cfg, "--skip-schema-validation")
	if r.code != 0 || !strings.Contains(r.stdout, `port: "6379"`) || !strings.Contains(r.stderr, "dm: warning: cache > cache-master (replicatedservice.py): not validated") {
		t.Errorf("with the flag: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	g := &globals{getenv: func(string) string { return "" }, stderr: io.Discard}
	root := newRoot(g, io.Discard)
	for _, name := range []string{"deploy", "update", "diff"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Flags().Lookup("skip-schema-validation") == nil {
			t.Errorf("dm %s has no --skip-schema-validation", name)
		}
	}
	ctx := context.Background()
	for _, skip := range []bool{false, true} {
		src, err := g.source(ctx, cfg, &applyFlags{configFlags: configFlags{skipSchema: skip}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.expandSource(ctx, src)
		if (err == nil) != skip {
			t.Errorf("deploy's expansion with skip %v: %v", skip, err)
		}
	}
}
