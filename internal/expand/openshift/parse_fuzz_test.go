package openshift

import (
	"errors"
	"os"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

// FuzzParse feeds arbitrary documents to Parse and processes what parses:
// errors must be InvalidArgument or LimitExceeded, never a panic.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../../registry-example/postgres/v1.1.0/postgres.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("kind: Template\napiVersion: v1\nparameters: [{name: A, generate: expression, from: '[a-z]{4}'}]\nobjects: [{kind: ConfigMap, metadata: {name: '${A}'}, data: {n: '${{A}}'}}]\nlabels: {x: '$(A)'}\n"))
	f.Add([]byte(`{"kind":"Template","objects":[{"a":"$(X)"}],"parameters":[{"name":"X","value":"1","type":"int"}]}`))
	f.Add([]byte("kind: Template\nparameters: [{name: B, generate: expression, from: '\\\\w{3,5}\\\\d\\\\a\\\\A'}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmpl, err := Parse(data)
		if err != nil {
			if !errors.Is(err, derrors.InvalidArgument) && !errors.Is(err, derrors.LimitExceeded) {
				t.Fatalf("Parse error %v is neither InvalidArgument nor LimitExceeded", err)
			}
			return
		}
		if _, err := tmpl.Process(nil, Options{MaxGeneratedLength: 256, MaxRenderedBytes: 1 << 20}); err != nil &&
			!errors.Is(err, derrors.InvalidArgument) && !errors.Is(err, derrors.LimitExceeded) {
			t.Fatalf("Process error %v is neither InvalidArgument nor LimitExceeded", err)
		}
	})
}
