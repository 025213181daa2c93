package schema

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// props decodes YAML properties the way the engine's decoders do for
// tests: numbers as float64.
func props(t testing.TB, src string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m
}

func mustParse(t testing.TB, src string) *Schema {
	t.Helper()
	s, err := Parse([]byte(src), "t.jinja.schema")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

const redisSchema = `info:
  title: Redis
  description: A Redis master and its replicas.
imports:
- path: helpers.jinja
- path: common/labels.py
  name: labels
required:
- image
properties:
  image:
    type: string
    description: Container image.
  replicas:
    type: int
    default: 2
    description: Number of replicas.
  ratio:
    type: float
    default: 0.5
  debug:
    type: bool
    default: false
  labels:
    type: object
    default: {app: redis}
  ports:
    type: array
    items:
      type: object
      required: [port]
      properties:
        port: {type: int, minimum: 1, maximum: 65535}
        protocol: {type: string, enum: [TCP, UDP], default: TCP}
  tls:
    type: object
    properties:
      enabled: {type: bool, default: true}
      cert: {type: string}
    required: [cert]
  resources:
    type: object
    default: {}
    properties:
      memory: {type: string, default: 512Mi}
      cpu: {type: string, default: 500m}
  storage:
    $ref: '#/definitions/storage'
definitions:
  storage:
    type: object
    default: {size: 1Gi}
    properties:
      class: {type: string, default: standard}
`

// TestParseDM: what DM's and its successor's schemas hold (issue 7): info
// with any keys, string imports, and YAML read as PyYAML reads it.
func TestParseDM(t *testing.T) {
	s := mustParse(t, `info:
  title: Web
  author: someone
  version: 1.0
  description: d
imports:
- helpers.py
- path: lib/x.jinja
  name: x
properties:
  n: {type: string, default: n}
  on: {type: boolean, default: on}
`)
	if s.Info.Title != "Web" || s.Info.Fields["author"] != "someone" || s.Info.Fields["version"] != 1.0 {
		t.Errorf("Info = %+v", s.Info)
	}
	if want := []Import{{Path: "helpers.py"}, {Path: "lib/x.jinja", Name: "x"}}; !reflect.DeepEqual(s.Imports, want) {
		t.Errorf("Imports = %+v", s.Imports)
	}
	got, err := s.Apply(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	// "n" is a string key and "n" a string default; "on" is the key "true"
	// (PyYAML reads on as a boolean) with the default true.
	if want := map[string]any{"n": "n", "true": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Apply = %#v, want %#v", got, want)
	}
}

func TestParse(t *testing.T) {
	s := mustParse(t, redisSchema)
	if s.Info.Title != "Redis" || s.Info.Description != "A Redis master and its replicas." {
		t.Errorf("Info = %+v", s.Info)
	}
	wantImports := []Import{{Path: "helpers.jinja"}, {Path: "common/labels.py", Name: "labels"}}
	if !reflect.DeepEqual(s.Imports, wantImports) {
		t.Errorf("Imports = %+v", s.Imports)
	}
	if !reflect.DeepEqual(s.Required, []string{"image"}) {
		t.Errorf("Required = %v", s.Required)
	}
	if got := s.Properties["replicas"].(map[string]any)["type"]; got != "integer" {
		t.Errorf("replicas type = %v, want integer", got)
	}
}

// DM accepted empty required lists, which draft 4 forbids; registries are
// full of them.
func TestParseEmptyRequired(t *testing.T) {
	s := mustParse(t, "required: []\nproperties:\n  a: {type: object, required: [], properties: {b: {type: int, default: 1}}}\n")
	got, err := s.Apply(map[string]any{"a": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if b := got["a"].(map[string]any)["b"]; b != int64(1) && b != 1 {
		t.Errorf("nested default = %#v", b)
	}
}

// The Cloud Foundation Toolkit's schemas list property names under oneOf
// (oneOf: [projectID, folderID, orgID]), which draft 4 forbids and
// Deployment Manager accepted: such a list constrains nothing and is named
// in a warning; a list of schemas keeps its meaning.
func TestParseCombinatorOfNames(t *testing.T) {
	tests := []struct {
		name, src   string
		props       map[string]any
		wantErr     string
		wantWarning string
	}{
		{name: "top-level oneOf of names", src: "oneOf: [projectID, folderID]\nproperties:\n  projectID: {type: string}\n",
			props: map[string]any{}, wantWarning: "t.jinja.schema: oneOf lists names (projectID, folderID), not schemas"},
		{name: "nested anyOf of names", src: "properties:\n  a:\n    type: object\n    anyOf: [x, {required: [y]}]\n",
			props: map[string]any{"a": map[string]any{}}, wantWarning: "properties.a.anyOf lists names (x, map[required:[y]])"},
		{name: "oneOf of schemas still applies", src: "properties:\n  a: {oneOf: [{type: string}, {type: integer}]}\n",
			props: map[string]any{"a": true}, wantErr: "oneOf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.src)
			_, err := s.Apply(tt.props)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Apply error %v, want one saying %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			w := strings.Join(s.Warnings(), "\n")
			if tt.wantWarning == "" && w != "" || !strings.Contains(w, tt.wantWarning) {
				t.Errorf("warnings %q, want one saying %q", w, tt.wantWarning)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, wantErr string
	}{
		{"yaml syntax", "properties:\n  a: {type: int\n", "t.jinja.schema: yaml: line"},
		{"not a mapping", "- a\n", "t.jinja.schema: schema is array, want a mapping"},
		{"bad info", "info: [x]\n", "info: got array, want a mapping"},
		{"bad imports", "imports: [{path: ''}]\n", "imports[0]: path is empty"},
		{"bad required", "required: image\n", "required: got a string, want a []string"},
		{"bad properties", "properties: [a]\n", "properties: got array, want a mapping"},
		{"bad type", "properties:\n  a: {type: integr}\n", "t.jinja.schema: invalid schema"},
		{"bad keyword value", "properties:\n  a: {minimum: x}\n", "invalid schema"},
		{"external ref", "properties:\n  a: {$ref: 'other.json'}\n", "schemas may only refer to themselves"},
		{"file ref", "properties:\n  a: {$ref: 'file:///etc/passwd'}\n", "schemas may only refer to themselves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "t.jinja.schema")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Errorf("error does not wrap InvalidArgument")
			}
		})
	}
}

func TestApply(t *testing.T) {
	s := mustParse(t, redisSchema)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "top-level defaults, nested default object filled",
			in:   "image: redis",
			want: `image: redis
replicas: 2
ratio: 0.5
debug: false
labels: {app: redis}
resources: {memory: 512Mi, cpu: 500m}
storage: {size: 1Gi, class: standard}`,
		},
		{
			name: "given values win, nested defaults fill what is missing",
			in:   "{image: redis, replicas: 5, debug: true, labels: {}, resources: {memory: 1Gi}, storage: {class: fast}}",
			want: `{image: redis, replicas: 5, ratio: 0.5, debug: true, labels: {},
resources: {memory: 1Gi, cpu: 500m}, storage: {class: fast}}`,
		},
		{
			name: "array items get defaults, absent object with nested defaults is not created",
			in:   "{image: redis, ports: [{port: 1}, {port: 2, protocol: UDP}]}",
			want: `{image: redis, replicas: 2, ratio: 0.5, debug: false, labels: {app: redis},
resources: {memory: 512Mi, cpu: 500m}, storage: {size: 1Gi, class: standard},
ports: [{port: 1, protocol: TCP}, {port: 2, protocol: UDP}]}`,
		},
		{
			name: "present object gets nested defaults",
			in:   "{image: redis, tls: {cert: c}}",
			want: `{image: redis, replicas: 2, ratio: 0.5, debug: false, labels: {app: redis},
resources: {memory: 512Mi, cpu: 500m}, storage: {size: 1Gi, class: standard},
tls: {cert: c, enabled: true}}`,
		},
		{
			name: "integral float accepted as integer, unknown property kept",
			in:   "{image: redis, replicas: 3.0, extra: 1}",
			want: `{image: redis, replicas: 3, ratio: 0.5, debug: false, labels: {app: redis},
resources: {memory: 512Mi, cpu: 500m}, storage: {size: 1Gi, class: standard}, extra: 1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := props(t, tt.in)
			before := props(t, tt.in)
			got, err := s.Apply(in)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if want := props(t, tt.want); !equalJSON(got, want) {
				t.Errorf("Apply:\n got %v\nwant %v", got, want)
			}
			if !reflect.DeepEqual(in, before) {
				t.Errorf("Apply modified its input: %v", in)
			}
		})
	}
}

// equalJSON compares values, treating all numbers alike.
func equalJSON(a, b any) bool {
	ja, err1 := yaml.Marshal(a)
	jb, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func TestApplyDefaultsAreCopies(t *testing.T) {
	s := mustParse(t, redisSchema)
	out, err := s.Apply(map[string]any{"image": "x"})
	if err != nil {
		t.Fatal(err)
	}
	out["labels"].(map[string]any)["app"] = "changed"
	out2, err := s.Apply(map[string]any{"image": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := out2["labels"].(map[string]any)["app"]; got != "redis" {
		t.Errorf("default changed through an earlier result: %v", got)
	}
}

func TestApplyViolations(t *testing.T) {
	s := mustParse(t, redisSchema)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "missing required",
			in:   "{}",
			want: []string{`missing required property "image"`},
		},
		{
			name: "every violation with its path",
			in: `replicas: "3"
debug: yes please
ports: [{port: 0, protocol: SCTP}, {protocol: TCP}, {port: x}]
tls: {enabled: 1}
labels: [a]`,
			want: []string{
				`missing required property "image"`,
				`properties.debug: expected boolean, got string`,
				`properties.labels: expected object, got array`,
				`properties.ports[0].port: minimum: got 0, want 1`,
				`properties.ports[0].protocol: value must be one of 'TCP', 'UDP'`,
				`properties.ports[1]: missing required property "port"`,
				`properties.ports[2].port: expected integer, got string`,
				`properties.replicas: expected integer, got string`,
				`properties.tls: missing required property "cert"`,
				`properties.tls.enabled: expected boolean, got number`,
			},
		},
		{
			name: "a value reference stands for any type, not for a missing property",
			in:   "{replicas: $(ref.db.replicas), labels: $(ref.db.labels), debug: \"x $(ref.db.on)\"}",
			want: []string{`missing required property "image"`, `properties.debug: expected boolean, got string`},
		},
		{
			name: "odd keys are quoted",
			in:   "{image: x, resources: {memory: 1}}",
			want: []string{`properties.resources.memory: expected string, got number`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Apply(props(t, tt.in))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *ValidationError", err)
			}
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Error("error does not wrap InvalidArgument")
			}
			var got []string
			for _, v := range ve.Violations {
				got = append(got, v.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("violations:\n got %q\nwant %q", got, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "t.jinja.schema: invalid properties: ") {
				t.Errorf("message = %s", err)
			}
		})
	}
}

func TestRequiredSatisfiedByDefault(t *testing.T) {
	s := mustParse(t, "required: [name]\nproperties:\n  name: {type: string, default: x}\n")
	got, err := s.Apply(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["name"] != "x" {
		t.Errorf("got %v", got)
	}
}

func TestSchemaVariants(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		in      string
		wantErr string
		want    string // the result, when given
	}{
		{name: "empty schema accepts anything", src: "", in: "{a: 1}"},
		{name: "info only", src: "info: {title: x}\n", in: "{a: 1}"},
		{name: "additionalProperties false", src: "properties: {a: {}}\nadditionalProperties: false\n", in: "{a: 1, b: 2}",
			wantErr: "additional properties 'b' not allowed"},
		{name: "type list with alias", src: "properties:\n  a: {type: [int, str]}\n", in: "{a: true}",
			wantErr: "properties.a: expected integer or string, got boolean"},
		{name: "draft 4 exclusiveMaximum", src: "properties:\n  a: {type: number, maximum: 5, exclusiveMaximum: true}\n", in: "{a: 5}",
			wantErr: "properties.a:"},
		{name: "draft 2020 when asked", src: "$schema: https://json-schema.org/draft/2020-12/schema\nproperties:\n  a: {const: 1}\n", in: "{a: 2}",
			wantErr: "properties.a: value must be 1"},
		{name: "anyOf", src: "properties:\n  a: {anyOf: [{type: int}, {type: bool}]}\n", in: "{a: x}",
			wantErr: "properties.a: matches none of the anyOf alternatives"},
		{name: "type alias in default left alone", src: "properties:\n  a: {type: object, default: {type: int}}\n", in: "{}", want: "{a: {type: int}}"},
		{name: "dotted key", src: "properties:\n  a.b: {type: int}\n", in: "{a.b: x}",
			wantErr: `properties["a.b"]: expected integer`},
		{name: "recursive ref", src: "properties:\n  node: {$ref: '#/definitions/node'}\ndefinitions:\n  node: {type: object, properties: {next: {$ref: '#/definitions/node'}, v: {default: 1}}}\n",
			in: "{node: {next: {}}}", want: "{node: {v: 1, next: {v: 1}}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.src)
			got, err := s.Apply(props(t, tt.in))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.want != "" && !equalJSON(got, props(t, tt.want)) {
					t.Errorf("Apply = %v, want %s", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestPropertyDocs(t *testing.T) {
	s := mustParse(t, "required: [b, z]\nproperties:\n  b: {type: int, default: 1, description: B}\n  a: {type: [string, 'null']}\n")
	want := []PropertyDoc{
		{Name: "b", Type: "integer", Description: "B", Required: true, HasDefault: true, Default: int64(1)},
		{Name: "a", Type: "string|null"},
		{Name: "z", Required: true},
	}
	if got := s.PropertyDocs(); !reflect.DeepEqual(got, want) {
		t.Errorf("PropertyDocs:\n got %+v\nwant %+v", got, want)
	}
}

func BenchmarkApply(b *testing.B) {
	s := mustParse(b, benchSchema)
	in := props(b, "{name: web, image: nginx, replicas: 3, port: 8080, env: {A: b}}")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Apply(in); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSchema has ten properties, half of them defaulted.
const benchSchema = `info: {title: Web}
required: [name, image]
properties:
  name: {type: string}
  image: {type: string}
  replicas: {type: int, default: 1, minimum: 0}
  port: {type: int, default: 80, minimum: 1, maximum: 65535}
  protocol: {type: string, enum: [TCP, UDP], default: TCP}
  serviceType: {type: string, default: ClusterIP}
  env: {type: object}
  labels: {type: object, default: {}}
  memory: {type: string, default: 256Mi}
  debug: {type: bool, default: false}
`

// TestApplyConcurrent applies one schema from several goroutines; run with
// -race.
func TestApplyConcurrent(t *testing.T) {
	s := mustParse(t, redisSchema)
	in := props(t, "{image: redis, ports: [{port: 1}], tls: {cert: c}}")
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for range 50 {
				if _, err = s.Apply(in); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestZeroSchema(t *testing.T) {
	var s Schema
	got, err := s.Apply(map[string]any{"a": 1})
	if err != nil || got["a"] != 1 {
		t.Errorf("Apply = %v, %v", got, err)
	}
}

func TestUnknown(t *testing.T) {
	s := mustParse(t, `properties:
  replicas: {type: integer}
  image: {type: string}
  resources:
    type: object
    properties:
      limits: {type: object, properties: {memory: {type: string}, cpu: {type: string}}}
  labels: {type: object}
  extra: {type: object, additionalProperties: true, properties: {a: {type: string}}}
`)
	got := s.Unknown(map[string]any{
		"replcas":   3,
		"image":     "x",
		"colour":    "blue",
		"resources": map[string]any{"limits": map[string]any{"memroy": "1Gi", "cpu": "1"}},
		"labels":    map[string]any{"anything": "goes"},
		"extra":     map[string]any{"b": "fine"},
	})
	want := []string{
		`unknown property "colour"`,
		`unknown property "replcas" (did you mean replicas?)`,
		`unknown property "resources.limits.memroy" (did you mean memory?)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Unknown =\n%q, want\n%q", got, want)
	}
	closed := mustParse(t, "additionalProperties: false\nproperties: {a: {type: string}}\n")
	if got := closed.Unknown(map[string]any{"b": 1}); got != nil {
		t.Errorf("additionalProperties: false: Unknown = %q, want nil (validation refuses b)", got)
	}
	if _, err := closed.Apply(map[string]any{"b": 1}); err == nil {
		t.Error("additionalProperties: false accepted an unknown property")
	}
}

// A property that is one value reference passes whatever type its schema
// says, as under Deployment Manager, which validated before resolving.
func TestApplyValueReference(t *testing.T) {
	s := mustParse(t, redisSchema)
	if _, err := s.Apply(props(t, "{image: x, replicas: $(ref.db.replicas), ports: $(ref.db.ports)}")); err != nil {
		t.Fatal(err)
	}
}

// A schema whose pattern repeats over 1000 times parses and validates.
func TestParseLongRepeat(t *testing.T) {
	s := mustParse(t, "properties:\n  description: {type: string, pattern: '^.{0,1023}$'}\n")
	if _, err := s.Apply(map[string]any{"description": "short"}); err != nil {
		t.Errorf("short: %v", err)
	}
	if _, err := s.Apply(map[string]any{"description": strings.Repeat("x", 1024)}); err == nil || !strings.Contains(err.Error(), "description") {
		t.Errorf("too long: %v, want an error naming description", err)
	}
}

// Patterns are Python's, as Deployment Manager's validator read them:
// lookahead, lookbehind, backreferences, named groups and inline flags;
// a match that backtracks without end stops at RegexTimeout, with an
// error naming it and the property.
func TestPythonPatterns(t *testing.T) {
	tests := []struct {
		pattern string
		ok, bad []string
	}{
		{`^(?!-)[a-z0-9-]{1,63}(?<!-)$`, []string{"web-1", "a"}, []string{"-web", "web-", ""}},
		{`^(?P<zone>[a-z]+-[a-z]+\d)-(?P=zone)$`, []string{"us-east1-us-east1"}, []string{"us-east1-us-west1"}},
		{`(?i)^WEB`, []string{"web-1", "Web"}, []string{"wob"}},
		{`^(\w)\w*\1$`, []string{"abca", "xyx"}, []string{"abc"}},
		{`^[a-z]{,3}$`, []string{"", "abc"}, []string{"abcd"}},
		{`^\d+\Z`, []string{"12", "١٢"}, []string{"12\n", "x"}},
		{`^a+$`, []string{"aa", "aa\n"}, []string{"aa\n\n"}},
	}
	for _, tt := range tests {
		s := mustParse(t, "properties:\n  v: {type: string, pattern: '"+strings.ReplaceAll(tt.pattern, "'", "''")+"'}\n")
		for _, v := range tt.ok {
			if _, err := s.Apply(map[string]any{"v": v}); err != nil {
				t.Errorf("%s, %q: %v", tt.pattern, v, err)
			}
		}
		for _, v := range tt.bad {
			if _, err := s.Apply(map[string]any{"v": v}); err == nil || !strings.Contains(err.Error(), "properties.v") {
				t.Errorf("%s, %q: %v, want an error naming properties.v", tt.pattern, v, err)
			}
		}
	}
	s, err := ParseWith([]byte("properties:\n  v: {type: string, pattern: '^(a|aa)+(?=!)$'}\n"), "t.jinja.schema", Options{RegexTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Apply(map[string]any{"v": strings.Repeat("a", 40) + "!"})
	var le *engine.LimitError
	if !errors.As(err, &le) || le.Field != "RegexTimeout" || !strings.Contains(err.Error(), "t.jinja.schema: properties.v: pattern") {
		t.Errorf("err = %v, want a RegexTimeout limit error naming the file and property", err)
	}
	if _, err := Parse([]byte("properties:\n  v: {type: string, pattern: 'a(?i)'}\n"), "t.schema"); err == nil || !strings.Contains(err.Error(), "global flags not at the start") {
		t.Errorf("a pattern Python refuses: %v", err)
	}
}
