package chartdoc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func TestProperties(t *testing.T) {
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name        string
		values, sch []byte
		want        []string
	}{
		{
			name:   "values.yaml with comments",
			values: read("../testdata/charts/basic/values.yaml"),
			want: []string{
				`replicaCount integer 2 "Number of pods."`,
				`image.repository string "nginx" "Image repository."`,
				`image.tag string "" "Image tag; the chart's appVersion when empty."`,
				`service.type string "ClusterIP" ""`,
				`service.port integer 80 ""`,
				`labels object {} ""`,
			},
		},
		{
			name: "helm-docs markers",
			values: []byte(`# Section heading, not a description.

# -- Pod annotations
# on two lines.
# @default -- none
podAnnotations:
  a: b
# plain comment
# -- the description only
limits: [1, 2]
nothing:
`),
			want: []string{
				`podAnnotations object {"a":"b"} "Pod annotations on two lines."`,
				`limits array [1,2] "the description only"`,
				`nothing   ""`,
			},
		},
		{
			name:   "schema first",
			values: read("../testdata/charts/schema/values.yaml"),
			sch:    read("../testdata/charts/schema/values.schema.json"),
			want: []string{
				`name string "web" "The app's name."`,
				`ports array [80] "Ports to open."`,
				`replicas integer 1 "How many pods run."`,
			},
		},
		{
			name: "nested schema",
			sch:  []byte(`{"properties": {"image": {"type": "object", "properties": {"tag": {"type": ["string", "null"], "title": "Tag"}}}}}`),
			want: []string{`image.tag string|null  "Tag"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := Properties(tt.values, tt.sch)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, fmt.Sprintf("%s %s %s %q", p.Name, p.Type, p.Default, p.Description))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	for _, bad := range []struct{ values, sch, want string }{
		{values: "a: [", want: "values.yaml"},
		{sch: "{", want: "values.schema.json"},
	} {
		_, err := Properties([]byte(bad.values), []byte(bad.sch))
		if err == nil || !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q/%q: %v", bad.values, bad.sch, err)
		}
	}
}
