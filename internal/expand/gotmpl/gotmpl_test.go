package gotmpl

import (
	"context"
	"errors"
	"strings"
	"testing"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/value"
)

func newEngine(t *testing.T, maxOut int) engine.Engine {
	cache, err := lru.New[string, any](16)
	if err != nil {
		t.Fatal(err)
	}
	return New(maxOut, cache, func(b []byte) (any, error) { return value.DecodeJSON(b) })
}

// TestRender: the engine through the interface, as expand calls it.
func TestRender(t *testing.T) {
	tests := []struct {
		name, src string
		maxOut    int
		want      string // the output, or
		wantErr   string // a substring of the error
		limit     bool   // the error is a limit
	}{
		{name: "properties and env", src: `n: {{ .properties.n }}-{{ .env.name }}`, want: "n: 3-web"},
		{name: "missing key renders empty", src: `v: "{{ .properties.nope }}"`, want: `v: ""`},
		{name: "fromYaml uses the given decoder", src: `v: {{ (fromYaml "{\"a\": 1}").a }}`, want: "v: 1"},
		{name: "required", src: `{{ required "tag is required" .properties.tag }}`, wantErr: "t.gotmpl:1: "},
		{name: "output limit", src: `{{ repeat 100 "x" }}`, maxOut: 10, wantErr: "MaxOutputBytes", limit: true},
		{name: "parse error has its line", src: "a\n{{ .x", wantErr: "t.gotmpl:2: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.maxOut == 0 {
				tt.maxOut = 1 << 20
			}
			e := newEngine(t, tt.maxOut)
			out, err := e.Render(context.Background(), engine.Invocation{
				File: "t.gotmpl", Source: []byte(tt.src), FilesKey: tt.name,
				Imports:    func() map[string]any { return nil },
				Properties: map[string]any{"n": int64(3)}, Env: map[string]any{"name": "web"},
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if got := errors.Is(err, derrors.LimitExceeded); got != tt.limit {
					t.Errorf("limit = %v, want %v (%v)", got, tt.limit, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out.YAML) != tt.want {
				t.Errorf("output %q, want %q", out.YAML, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	c := newEngine(t, 1<<20).(engine.Checker)
	if err := c.Check(context.Background(), map[string][]byte{"t.gotmpl": []byte("{{ if }}")}, "t.gotmpl"); err == nil || !strings.Contains(err.Error(), "t.gotmpl:1") {
		t.Errorf("Check = %v", err)
	}
	if err := c.Check(context.Background(), map[string][]byte{"t.gotmpl": []byte("{{ .a | toYaml }}")}, "t.gotmpl"); err != nil {
		t.Errorf("Check = %v", err)
	}
}
