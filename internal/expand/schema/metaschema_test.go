package schema

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// drafts are jsonschema's drafts and the $schema URL naming each.
var drafts = []struct {
	d   *jsonschema.Draft
	url string
}{
	{jsonschema.Draft4, "http://json-schema.org/draft-04/schema#"},
	{jsonschema.Draft6, "http://json-schema.org/draft-06/schema#"},
	{jsonschema.Draft7, "http://json-schema.org/draft-07/schema#"},
	{jsonschema.Draft2019, "https://json-schema.org/draft/2019-09/schema"},
	{jsonschema.Draft2020, "https://json-schema.org/draft/2020-12/schema"},
}

// metaCompiled reports whether d's meta-schema was compiled (its
// unexported field sch, read by reflection).
func metaCompiled(d *jsonschema.Draft) bool {
	return !reflect.ValueOf(d).Elem().FieldByName("sch").IsNil()
}

// TestMetaSchemasOnFirstUse: the validator compiles its drafts'
// meta-schemas on the first schema compiled, not when a program starts
// (dm's copy of the library, third_party/jsonschema: at init they were a
// third of dm's start-up); and a first use by many goroutines at once
// compiles them once, each schema then checked against its draft's
// meta-schema (under -race in make test). It runs in a new process of
// this test binary, where no schema was compiled yet.
func TestMetaSchemasOnFirstUse(t *testing.T) {
	if os.Getenv("DM_TEST_FIRST_SCHEMA") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMetaSchemasOnFirstUse$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "DM_TEST_FIRST_SCHEMA=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestMetaSchemasOnFirstUse") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	for _, d := range drafts {
		if metaCompiled(d.d) {
			t.Fatalf("the meta-schema of %s was compiled before any schema was", d.d)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(drafts))
	for range 4 {
		for _, d := range drafts {
			wg.Go(func() {
				good := fmt.Sprintf("$schema: %q\nproperties:\n  a: {type: integer, minimum: 1}\n", d.url)
				if _, err := Parse([]byte(good), "good.schema"); err != nil {
					errs <- fmt.Errorf("%s: %v", d.url, err)
				}
				bad := fmt.Sprintf("$schema: %q\nproperties:\n  a: {type: integer, minimum: x}\n", d.url)
				if _, err := Parse([]byte(bad), "bad.schema"); err == nil || !strings.Contains(err.Error(), "invalid schema") || !strings.Contains(err.Error(), "minimum") {
					errs <- fmt.Errorf("%s: a schema its meta-schema refuses: %v", d.url, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, d := range drafts {
		if !metaCompiled(d.d) {
			t.Errorf("the meta-schema of %s is not compiled after use", d.d)
		}
	}
}
