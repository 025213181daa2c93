package expand

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func TestObject(t *testing.T) {
	tests := []struct {
		name    string
		res     Resource
		want    map[string]any
		wantErr string
	}{
		{
			name: "full object",
			res:  Resource{Name: "r", Type: "Service", Properties: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "svc"}}},
			want: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "svc"}},
		},
		{
			name: "core kind from the type, name from the resource",
			res:  Resource{Name: "cfg", Type: "ConfigMap", Properties: map[string]any{"data": map[string]any{"a": "b"}}},
			want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg"}, "data": map[string]any{"a": "b"}},
		},
		{
			name: "group/version/kind",
			res:  Resource{Name: "d", Type: "apps/v1/Deployment"},
			want: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}},
		},
		{
			name: "version/kind",
			res:  Resource{Name: "s", Type: "v1/Secret", Properties: map[string]any{"metadata": map[string]any{"generateName": "s-"}}},
			want: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"generateName": "s-"}},
		},
		{name: "DM type", res: Resource{Name: "vm", Type: "compute.v1.instance"}, wantErr: `type "compute.v1.instance" is not a Kubernetes kind`},
		{name: "collection type", res: Resource{Name: "x", Type: "gcp-types/compute-v1:instances"}, wantErr: "is not a Kubernetes kind"},
		{name: "unknown core kind", res: Resource{Name: "x", Type: "Widget"}, wantErr: "is not a Kubernetes kind"},
		{name: "kind mismatch", res: Resource{Name: "x", Type: "apps/v1/Deployment", Properties: map[string]any{"kind": "StatefulSet"}}, wantErr: "kind StatefulSet but the type says Deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.res.Object()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("err = %v, want InvalidArgument containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Object() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestCheckNames(t *testing.T) {
	x := New(Options{})
	tests := []struct {
		name, config string
		wantErr      string
	}{
		{"valid", "resources:\n- {name: web, type: ConfigMap}\n- {name: a.b-c, type: Secret}\n", ""},
		{"upper case", "resources:\n- {name: UPPER_case, type: ConfigMap}\n", `UPPER_case: ConfigMap name "UPPER_case" is not a valid Kubernetes name`},
		{"service with a dot", "resources:\n- {name: a.b, type: Service}\n", "RFC 1123 label"},
		{"metadata.name", "resources:\n- {name: x, type: v1/Secret, properties: {metadata: {name: Bad}}}\n", `x: Secret name "Bad"`},
		{"not a Kubernetes object", "resources:\n- {name: VM_1, type: Widget}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := x.Expand(context.Background(), Request{Config: []byte(tt.config)})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
