package driver

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/layout"
)

// sample returns a record with every field set.
func sample(namespace, name string, revision int) *release.Record {
	t := time.Date(2026, 11, 23, 1, 2, 3, 4, time.UTC)
	return &release.Record{
		Name:        name,
		Namespace:   namespace,
		Revision:    revision,
		Status:      release.StatusDeployed,
		Description: "Deploy complete",
		Input: release.Input{
			Ref: "redis:v1", Registry: "github.com/acme/templates",
			Imports: map[string]string{"a.jinja": "{{ x }}"}, Server: "http://127.0.0.1:8080",
		},
		Properties: map[string]any{"replicas": int64(3), "ratio": 0.5, "tags": []any{"a", int64(1)}, "big": int64(1 << 60)},
		Env:        map[string]string{"stage": "prod"},
		References: []layout.Reference{{Ref: "redis:v1", Resolved: "github.com/acme/templates/redis:v1.2.0", Version: "v1.2.0", Digest: "sha256:abc"}},
		Layout: layout.Layout{Resources: []*layout.Resource{{
			Name: "redis", Type: "redis:v1", Properties: map[string]any{"port": int64(6379)},
			Resources: []*layout.Resource{{Name: "redis-svc", Type: "v1/Service"}},
		}}},
		Resources: []release.Resource{{APIVersion: "v1", Kind: "Service", Namespace: namespace, Name: "redis", Path: "redis/redis-svc", Template: "github.com/acme/templates/redis:v1.2.0"}},
		Objects: []map[string]any{{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "redis", "namespace": namespace},
			"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(6379)}}},
		}},
		Created:   t,
		Updated:   t.Add(time.Second),
		DMVersion: "v0.1.0",
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, r := range []*release.Record{
		sample("default", "redis", 1),
		{Name: "empty", Namespace: "ns", Revision: 7, Status: release.StatusPending},
	} {
		t.Run(r.Name, func(t *testing.T) {
			body, err := Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Encode(r)
			if !bytes.Equal(body, again) {
				t.Error("Encode is not deterministic")
			}
			got, err := Decode(body, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, r) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
			}
		})
	}
}

func gz(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}

func TestDecodeErrors(t *testing.T) {
	valid, err := Encode(sample("ns", "x", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		body    []byte
		max     int64
		want    string
		wantErr error
	}{
		{"empty", nil, 0, "not gzip-compressed", derrors.InvalidArgument},
		{"not gzip", []byte(`{"format":1}`), 0, "not gzip-compressed", derrors.InvalidArgument},
		{"truncated", valid[:len(valid)/2], 0, "decompressing", derrors.InvalidArgument},
		{"not json", gz("hello"), 0, "not a JSON object", derrors.InvalidArgument},
		{"json array", gz("[1]"), 0, "not a JSON object", derrors.InvalidArgument},
		{"no format", gz(`{"name":"x"}`), 0, "no format version", derrors.InvalidArgument},
		{"future format", gz(`{"format":2,"name":"x"}`), 0, "record format 2, this dm reads format 1", ErrFormat},
		{"wrong type", gz(`{"format":1,"revision":"three"}`), 0, "record body", derrors.InvalidArgument},
		{"future format, other fields", gz(`{"revision":"three","format":2}`), 0, "record format 2", ErrFormat},
		{"trailing data", gz(`{"format":1} {}`), 0, "after top-level value", derrors.InvalidArgument},
		{"format not a number", gz(`{"format":"1"}`), 0, "not a JSON object", derrors.InvalidArgument},
		{"too large", valid, 100, "MaxRecordSize", derrors.LimitExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.body, tc.max)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.wantErr) {
				t.Errorf("Decode = %v, want an error containing %q wrapping %v", err, tc.want, tc.wantErr)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, r := range []*release.Record{sample("ns", "x", 1), {Name: "y", Namespace: "ns", Revision: 2}} {
		body, err := Encode(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add(gz(`{"format":1,"properties":{"a":1e400,"b":[1,2.5,{"c":-0}]},"objects":[null,{}]}`))
	f.Add(gz(`{"format":1,"layout":{"resources":[null,{"properties":{"x":1}}]}}`))
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Decode(body, 1<<20)
		if err != nil {
			return
		}
		// Whatever decodes encodes again, and from then on round-trips
		// unchanged (the first round trip may normalise numbers: 1.0
		// encodes as 1, which decodes as an integer).
		again, err := Encode(r)
		if err != nil {
			t.Fatalf("Encode of a decoded record: %v", err)
		}
		r2, err := Decode(again, 0)
		if err != nil {
			t.Fatalf("Decode of a re-encoded record: %v", err)
		}
		third, err := Encode(r2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, third) {
			t.Fatalf("unstable round trip:\n%+v\n%+v", r, r2)
		}
	})
}

// typical returns a record of n ConfigMaps of ten keys, as dm deploy of
// one template makes.
func typical(n int) *release.Record {
	r := sample("ns", "web", 1)
	r.Objects = nil
	for i := range n {
		data := map[string]any{}
		for k := range 10 {
			data[fmt.Sprintf("key%d", k)] = fmt.Sprintf("value %d of config %d", k, i)
		}
		r.Objects = append(r.Objects, map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{
				"name": fmt.Sprintf("config-%d", i), "namespace": "ns",
				"labels": map[string]any{"app.kubernetes.io/managed-by": "dm", "dm.io/deployment": "web"},
			},
			"data": data,
		})
		r.Resources = append(r.Resources, release.Resource{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("config-%d", i), Path: fmt.Sprintf("web/config-%d", i)})
	}
	return r
}

func BenchmarkEncode(b *testing.B) {
	r := typical(100)
	b.ReportAllocs()
	var body []byte
	for b.Loop() {
		var err error
		if body, err = Encode(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(body)), "bytes/record")
}

func BenchmarkDecode(b *testing.B) {
	body, _ := Encode(typical(100))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body, 0); err != nil {
			b.Fatal(err)
		}
	}
}
