package expand

import (
	"errors"
	"reflect"
	"slices"
	"strings"
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

// TestTemplateOutputs: $(ref.NAME.OUTPUT) where NAME is a template resource
// is the value of the template's output OUTPUT (DM's outputs), itself
// resolved or deferred as any other reference.
func TestTemplateOutputs(t *testing.T) {
	db := `resources:
- name: {{ env["name"] }}-svc
  type: Service
  properties:
    metadata: {name: {{ env["name"] }}-svc}
    spec: {ports: [{port: 5432}]}
outputs:
- name: host
  value: $(ref.{{ env["name"] }}-svc.metadata.name)
- name: port
  value: $(ref.{{ env["name"] }}-svc.spec.ports[0].port)
- name: ip
  value: $(ref.{{ env["name"] }}-svc.spec.clusterIP)
- name: spec
  value: $(ref.{{ env["name"] }}-svc.spec)
- name: conn
  value: {user: admin, ports: [5432, 5433]}
- name: self
  value: $(ref.{{ env["name"] }}.host)
`
	wrap := `resources:
- name: inner
  type: db.jinja
outputs:
- name: url
  value: pg://$(ref.inner.host):$(ref.inner.port)
`
	py := `def GenerateConfig(context):
    return {"resources": [{"name": "cm", "type": "ConfigMap", "properties": {"data": {"a": "1"}}}],
            "outputs": [{"name": "data", "value": "$(ref.cm.data)"}, {"name": "n", "value": 3}]}
`
	cyc := `resources: []
outputs:
- name: a
  value: $(ref.{{ env["name"] }}.b)
- name: b
  value: x-$(ref.{{ env["name"] }}.a)
`
	// An output per item under one name, as the Cloud Foundation
	// Toolkit's folder.py returns them: Deployment Manager took them.
	rep := `resources: []
outputs:
- {name: name, value: a}
- {name: name, value: b}
- {name: n, value: 1}
`
	// A primitive named as its template, and an output naming the
	// primitive's field of the output's own name, as the Cloud Foundation
	// Toolkit's cloud_sql.py returns ($(ref.NAME.name)): the output is the
	// primitive's field, not itself.
	same := `resources:
- {name: {{ env["name"] }}, type: ConfigMap, properties: {data: {k: v}}}
- {name: {{ env["name"] }}-user, type: ConfigMap, properties: {data: $(ref.{{ env["name"] }}.data)}}
outputs:
- name: data
  value: $(ref.{{ env["name"] }}.data)
`
	imports := map[string][]byte{"db.jinja": []byte(db), "wrap.jinja": []byte(wrap), "gen.py": []byte(py), "cyc.jinja": []byte(cyc), "rep.jinja": []byte(rep), "same.jinja": []byte(same)}
	head := "imports: [db.jinja, wrap.jinja, gen.py, cyc.jinja, rep.jinja, same.jinja]\nresources:\n"
	for _, tc := range []struct {
		name     string
		uses     string // the ConfigMap app's data, YAML
		extra    string // more resources
		want     map[string]any
		deferred []Deferred
		err      string
	}{
		{name: "resolved", uses: `{host: $(ref.db.host), port: $(ref.db.port), url: "pg://$(ref.db.host):$(ref.db.port)"}`,
			want: map[string]any{"host": "db-svc", "port": int64(5432), "url": "pg://db-svc:5432"}},
		{name: "deferred to the primitive", uses: `{ip: $(ref.db.ip), addr: "$(ref.db.ip):1"}`,
			want: map[string]any{"ip": "$(ref.db-svc.spec.clusterIP)", "addr": "$(ref.db-svc.spec.clusterIP):1"},
			deferred: []Deferred{
				{Resource: "app", Field: "/data/addr", Ref: "$(ref.db-svc.spec.clusterIP)", Target: "db-svc", Path: "spec.clusterIP"},
				{Resource: "app", Field: "/data/ip", Ref: "$(ref.db-svc.spec.clusterIP)", Target: "db-svc", Path: "spec.clusterIP"},
			}},
		{name: "path beyond the output", uses: `{p: "$(ref.db.spec.ports[0].port)", u: $(ref.db.conn.user), q: "$(ref.db.conn.ports[1])"}`,
			want: map[string]any{"p": int64(5432), "u": "admin", "q": int64(5433)}},
		{name: "whole output keeps its type", uses: `{c: $(ref.db.conn)}`,
			want: map[string]any{"c": map[string]any{"user": "admin", "ports": []any{int64(5432), int64(5433)}}}},
		{name: "output of an output", uses: `{h: $(ref.db.self)}`, want: map[string]any{"h": "db-svc"}},
		{name: "nested templates", extra: "- {name: w, type: wrap.jinja}\n", uses: `{url: $(ref.w.url)}`,
			want: map[string]any{"url": "pg://inner-svc:5432"}},
		{name: "python", extra: "- {name: g, type: gen.py}\n", uses: `{d: $(ref.g.data), n: "n=$(ref.g.n)"}`,
			want: map[string]any{"d": map[string]any{"a": "1"}, "n": "n=3"}},
		{name: "no such output", uses: `{x: $(ref.db.hots)}`, err: `$(ref.db.hots): template resource db (db) has no output "hots" (outputs: host, port, ip, spec, conn, self)`},
		{name: "output naming its primitive's field", extra: "- {name: s, type: same.jinja}\n", uses: `{d: "$(ref.s.data.k)"}`,
			want: map[string]any{"d": "v"}},
		{name: "cycle", extra: "- {name: c, type: cyc.jinja}\n", uses: `{x: $(ref.c.a)}`, err: "output reference cycle: c.a -> c.b -> c.a"},
		{name: "output reading the primitive of the template's name", extra: "- {name: s, type: same.jinja}\n", uses: `{d: $(ref.s.data), x: "x-$(ref.s.data.k)"}`,
			want: map[string]any{"d": map[string]any{"k": "v"}, "x": "x-v"}},
		{name: "repeated output names, another referenced", extra: "- {name: r, type: rep.jinja}\n", uses: `{n: $(ref.r.n)}`,
			want: map[string]any{"n": int64(1)}},
		{name: "a repeated output referenced", extra: "- {name: r, type: rep.jinja}\n", uses: `{x: $(ref.r.name)}`,
			err: `$(ref.r.name): template resource r (r) has several outputs named "name"; a referenced output must be unique`},
		{name: "no such path", uses: `{x: $(ref.db.conn.pass)}`, err: "$(ref.db.conn.pass): output conn of db has no .pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := head + "- {name: db, type: db.jinja}\n" + tc.extra + "- {name: app, type: ConfigMap, properties: {data: " + tc.uses + "}}\n"
			res, err := New(Options{}).Expand(t.Context(), Request{Config: []byte(cfg), Imports: imports})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			app := res.Config.Resources[len(res.Config.Resources)-1]
			if got := app.Properties["data"]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("app's data = %#v, want %#v", got, tc.want)
			}
			if !reflect.DeepEqual(res.Deferred, tc.deferred) {
				t.Errorf("deferred = %+v, want %+v", res.Deferred, tc.deferred)
			}
			if i, j := slices.Index(res.Order, "db-svc"), slices.Index(res.Order, "app"); strings.Contains(tc.uses, "ref.db.") && i > j {
				t.Errorf("order %v: app before db-svc", res.Order)
			}
			if outs := res.Layout.Resources[0].Outputs; len(outs) != 6 || outs[0].Value != "$(ref.db-svc.metadata.name)" {
				t.Errorf("layout outputs of db = %+v, want them as rendered", outs)
			}
		})
	}
}

// metadata.dependsOn may name a resource by a template output, as the
// Cloud Foundation Toolkit's bigquery_table.py does.
func TestDependsOnTemplateOutput(t *testing.T) {
	ds := "resources:\n- {name: {{ properties.name }}, type: ConfigMap, properties: {data: {}}}\noutputs:\n- {name: id, value: {{ properties.name }}}\n"
	cfg := `imports: [ds.jinja]
resources:
- {name: ds, type: ds.jinja, properties: {name: my-ds}}
- {name: table, type: ConfigMap, properties: {data: {}}, metadata: {dependsOn: [$(ref.ds.id)]}}
- {name: bad, type: ConfigMap, properties: {data: {}}, metadata: {dependsOn: [$(ref.ds.nope)]}}
`
	_, err := New(Options{}).Expand(t.Context(), Request{Config: []byte(cfg), Imports: map[string][]byte{"ds.jinja": []byte(ds)}})
	if want := `metadata.dependsOn: $(ref.ds.nope): template resource ds (ds) has no output "nope"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	cfg = strings.Replace(cfg, "- {name: bad", "# - {name: bad", 1)
	res, err := New(Options{}).Expand(t.Context(), Request{Config: []byte(cfg), Imports: map[string][]byte{"ds.jinja": []byte(ds)}})
	if err != nil {
		t.Fatal(err)
	}
	table := res.Config.Resources[len(res.Config.Resources)-1]
	if got := table.Metadata["dependsOn"]; !reflect.DeepEqual(got, []any{"my-ds"}) {
		t.Errorf("dependsOn = %#v, want [my-ds]", got)
	}
	if i, j := slices.Index(res.Order, "my-ds"), slices.Index(res.Order, "table"); i < 0 || i > j {
		t.Errorf("order %v: table before my-ds", res.Order)
	}
}

// A template expanded by reference whose outputs repeat a name has no
// single value for it among the deployment's outputs.
func TestDeploymentOutputsRepeated(t *testing.T) {
	rep := "resources: []\noutputs:\n- {name: name, value: a}\n- {name: name, value: b}\n"
	_, err := New(Options{}).Expand(t.Context(), Request{Ref: "rep.jinja", Imports: map[string][]byte{"rep.jinja": []byte(rep)}})
	if want := `two outputs named "name": a deployment's outputs must be unique`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestDeploymentOutputs: a configuration's outputs, and those of a
// template expanded by reference, are the deployment's: references to
// template outputs and known fields resolved, those to live fields left
// for deploy.
func TestDeploymentOutputs(t *testing.T) {
	tmpl := `resources:
- name: {{ env["name"] }}-svc
  type: Service
  properties:
    metadata: {name: {{ env["name"] }}-svc}
    spec: {ports: [{port: 5432}]}
outputs:
- name: port
  value: $(ref.{{ env["name"] }}-svc.spec.ports[0].port)
- name: ip
  value: $(ref.{{ env["name"] }}-svc.spec.clusterIP)
`
	imports := map[string][]byte{"db.jinja": []byte(tmpl)}
	for _, tc := range []struct {
		name, cfg string
		want      []Output
		err       string
	}{
		{name: "configuration", cfg: `imports: [db.jinja]
resources:
- {name: db, type: db.jinja}
outputs:
- {name: port, value: $(ref.db.port)}
- {name: url, value: "pg://$(ref.db.ip):$(ref.db.port)"}
- {name: svc, value: $(ref.db-svc.metadata.name)}
- {name: literal, value: {a: [1]}}
`, want: []Output{
			{Name: "port", Value: int64(5432)},
			{Name: "url", Value: "pg://$(ref.db-svc.spec.clusterIP):5432"},
			{Name: "svc", Value: "db-svc"},
			{Name: "literal", Value: map[string]any{"a": []any{int64(1)}}},
		}},
		{name: "none", cfg: "imports: [db.jinja]\nresources:\n- {name: db, type: db.jinja}\n"},
		{name: "bad", cfg: "resources: []\noutputs: {a: 1}\n", err: "outputs is a mapping; want a list of {name, value}"},
		{name: "unknown resource", cfg: "resources: []\noutputs: [{name: a, value: $(ref.nope.x)}]\n", err: `output a: $(ref.nope.x): no resource named "nope"`},
		{name: "repeated", cfg: "resources: []\noutputs: [{name: a, value: 1}, {name: a, value: 2}]\n", err: `outputs[1]: two outputs named "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := New(Options{}).Expand(t.Context(), Request{Config: []byte(tc.cfg), Imports: imports})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Outputs, tc.want) {
				t.Errorf("outputs = %#v, want %#v", res.Outputs, tc.want)
			}
		})
	}
}
