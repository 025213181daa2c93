package expand

import (
	"errors"
	"reflect"
	"testing"
)

func TestFillRefs(t *testing.T) {
	live := map[string]any{
		"db": map[string]any{
			"metadata": map[string]any{"name": "db", "uid": "u-1"},
			"spec":     map[string]any{"clusterIP": "10.0.0.7", "ports": []any{map[string]any{"port": int64(5432)}}},
		},
	}
	lookup := func(text, name, path string) (any, bool, error) {
		obj, ok := live[name]
		if !ok {
			return nil, false, errors.New("no " + name)
		}
		v, ok := LookupPath(obj, path)
		return v, ok, nil
	}
	for _, tc := range []struct {
		in      string
		want    any
		wantErr bool
	}{
		{in: "plain", want: "plain"},
		{in: "$(ref.db.spec.clusterIP)", want: "10.0.0.7"},
		{in: "$(ref.db.spec.ports[0].port)", want: int64(5432)},
		{in: "$(ref.db.spec.ports)", want: []any{map[string]any{"port": int64(5432)}}},
		{in: "postgres://$(ref.db.spec.clusterIP):$(ref.db.spec.ports[0].port)/x", want: "postgres://10.0.0.7:5432/x"},
		{in: "$(ref.db.status.loadBalancer)", want: "$(ref.db.status.loadBalancer)"},
		{in: "a $(ref.db.status.x) b $(ref.db.metadata.uid)", want: "a $(ref.db.status.x) b u-1"},
		{in: "$(ref.nope.x)", wantErr: true},
	} {
		got, err := FillRefs(tc.in, lookup)
		if (err != nil) != tc.wantErr {
			t.Errorf("FillRefs(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FillRefs(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestLookupPath(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": 1}}}}
	for _, tc := range []struct {
		path string
		want any
		ok   bool
	}{
		{"spec.ports[0].port", 1, true},
		{".spec.ports[0].port", 1, true},
		{"spec.ports[1].port", nil, false},
		{"spec.clusterIP", nil, false},
		{"spec.ports.port", nil, false},
		{"status.x", nil, false},
	} {
		got, ok := LookupPath(obj, tc.path)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("LookupPath(%q) = %v, %v; want %v, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
