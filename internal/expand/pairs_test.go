package expand

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePairs(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]any
		wantErr string
	}{
		{"replicas=3", map[string]any{"replicas": int64(3)}, ""},
		{"a=1,b=true,c=x", map[string]any{"a": int64(1), "b": true, "c": "x"}, ""},
		{"ports=[80,443],name=web", map[string]any{"ports": []any{int64(80), int64(443)}, "name": "web"}, ""},
		{`msg="a,b",x=1`, map[string]any{"msg": "a,b", "x": int64(1)}, ""},
		{`msg=a\,b`, map[string]any{"msg": "a,b"}, ""},
		{"resources.limits.memory=1Gi,resources.limits.cpu=2", map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1Gi", "cpu": int64(2)}}}, ""},
		{"empty=", map[string]any{"empty": ""}, ""},
		{"ratio=0.5", map[string]any{"ratio": 0.5}, ""},
		{"novalue", nil, "want KEY=VALUE"},
		{"zone:europe-west1-b", nil, `"zone:europe-west1-b": want KEY=VALUE: dm takes zone=europe-west1-b where gcloud took zone:europe-west1-b`},
		{"=3", nil, "want KEY=VALUE"},
		{"a..b=3", nil, "empty key segment"},
		// A path through a value is refused rather than dropping it.
		{"a=1,a.b=2", nil, `"a.b": a is not a mapping`},
		{"a.b.c=1,a.b=2", map[string]any{"a": map[string]any{"b": int64(2)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePairs(tt.in, false, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParsePairs(%q) = %#v, %v; want %#v", tt.in, got, err, tt.want)
			}
		})
	}
}
