package chartdoc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		file    string
		want    *engine.Description
		wantErr bool
	}{
		{
			name: "values.yaml with comments",
			files: map[string]string{
				"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\ndescription: A web server.\nkeywords: [web, http]\n",
				"values.yaml": "# -- Number of pods.\nreplicas: 2\nimage:\n  # Image tag.\n  tag: \"1.0\"\n",
			},
			file: "Chart.yaml",
			want: &engine.Description{Title: "web", Description: "A web server.", Tags: []string{"web", "http"}, Properties: []engine.Property{
				{Name: "replicas", Type: "integer", Default: float64(2), Description: "Number of pods."},
				{Name: "image.tag", Type: "string", Default: "1.0", Description: "Image tag."},
			}},
		},
		{
			name: "a schema, in a subdirectory, defaults from values.yaml",
			files: map[string]string{
				"c/Chart.yaml":         "apiVersion: v2\nname: c\nversion: 1.0.0\n",
				"c/values.yaml":        "port: 80\n",
				"c/values.schema.json": `{"properties": {"port": {"type": "integer", "description": "The port."}}}`,
			},
			file: "c/Chart.yaml",
			want: &engine.Description{Title: "c", Properties: []engine.Property{{Name: "port", Type: "integer", Default: float64(80), Description: "The port."}}},
		},
		{
			name:  "no values at all",
			files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: bare\nversion: 1.0.0\n"},
			file:  "Chart.yaml",
			want:  &engine.Description{Title: "bare"},
		},
		{
			name:    "Chart.yaml does not parse",
			files:   map[string]string{"Chart.yaml": "name: [\n"},
			file:    "Chart.yaml",
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				b, ok := tt.files[name]
				if !ok {
					return nil, fmt.Errorf("no file %s: %w", name, derrors.NotFound)
				}
				return []byte(b), nil
			}
			got, err := Describer{}.Describe(context.Background(), tt.file, read)
			if tt.wantErr {
				if err == nil || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("error %v, want an invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
