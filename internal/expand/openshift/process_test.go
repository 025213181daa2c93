package openshift

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
)

var update = flag.Bool("update", false, "rewrite golden files")

// mustParse parses a template written in YAML.
func mustParse(t testing.TB, src string) *Template {
	t.Helper()
	tmpl, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tmpl
}

// decodeYAML decodes an expected value the way Parse decodes objects.
func decodeYAML(t *testing.T, src string) any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeJSONValue(string(js))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantErr string // substring; empty means success
		notTmpl bool
	}{
		{name: "minimal", src: "kind: Template\napiVersion: v1\n"},
		{name: "json", src: `{"kind": "Template", "objects": [{"kind": "Service"}]}`},
		{name: "numeric value", src: "kind: Template\nparameters:\n- name: NUM\n  value: 3\n"},
		{name: "not a template", src: "kind: Deployment\n", wantErr: `kind is "Deployment"`, notTmpl: true},
		{name: "no kind", src: "objects: []\n", wantErr: "kind is missing", notTmpl: true},
		{name: "yaml syntax", src: "kind: Template\nobjects:\n- a: b\n  c: d: e\n", wantErr: "line 4"},
		{name: "not an object", src: "- kind: Template\n", wantErr: "want an object"},
		{name: "objects not a list", src: "kind: Template\nobjects: {}\n", wantErr: "objects: got an object, want a list"},
		{name: "object not a map", src: "kind: Template\nobjects: [1]\n", wantErr: "objects[0]: got a number"},
		{name: "name is YAML 1.1 boolean", src: "kind: Template\nparameters:\n- name: N\n", wantErr: "parameters[0]: name: got a boolean, want a string"},
		{name: "bad name", src: "kind: Template\nparameters:\n- name: A-B\n", wantErr: `parameters[0] (A-B): name "A-B"`},
		{name: "empty name", src: "kind: Template\nparameters:\n- value: x\n", wantErr: "parameters[0]: name is empty"},
		{name: "duplicate", src: "kind: Template\nparameters:\n- name: A\n- name: A\n", wantErr: "parameters[1] (A): duplicate"},
		{name: "unknown type", src: "kind: Template\nparameters:\n- name: A\n  type: float\n", wantErr: `unknown type "float"`},
		{name: "unknown generator", src: "kind: Template\nparameters:\n- name: A\n  generate: uuid\n", wantErr: `unknown generator "uuid"`},
		{name: "bad expression", src: "kind: Template\nparameters:\n- name: A\n  generate: expression\n  from: '[a-'\n", wantErr: "missing ]"},
		{name: "required not bool", src: "kind: Template\nparameters:\n- name: A\n  required: yes please\n", wantErr: "required: got a string"},
		{name: "all problems", src: "kind: Template\nparameters:\n- name: A-B\n- name: C\n  type: x\n", wantErr: "parameters[0] (A-B)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Errorf("error does not wrap InvalidArgument: %v", err)
			}
			if got := errors.Is(err, ErrNotTemplate); got != tt.notTmpl {
				t.Errorf("errors.Is(err, ErrNotTemplate) = %v, want %v", got, tt.notTmpl)
			}
		})
	}
}

func TestProcess(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		params  map[string]string
		want    string // YAML list of the processed objects
		wantErr string
	}{
		{
			name: "default and supplied values",
			src: `kind: Template
objects:
- kind: ConfigMap
  data: {a: "${A}", b: "$(B)", c: "x-${A}-$(B)-y", d: "${A}${A}"}
parameters:
- {name: A, value: one}
- {name: B, value: two}
`,
			params: map[string]string{"B": "supplied"},
			want:   `[{kind: ConfigMap, data: {a: one, b: supplied, c: x-one-supplied-y, d: oneone}}]`,
		},
		{
			name: "typed whole-field references",
			src: `kind: Template
objects:
- spec: {replicas: "$(NUM)", paused: "${B}", partial: "n=${NUM}", s: "${S}", enc: "${E}", empty: "${EMPTY}"}
parameters:
- {name: NUM, value: "3", type: int}
- {name: B, value: "true", type: bool}
- {name: S, value: "3", type: string}
- {name: E, value: "aGVsbG8=", type: base64}
- {name: EMPTY, type: int}
`,
			want: `[{spec: {replicas: 3, paused: true, partial: n=3, s: "3", enc: aGVsbG8=, empty: ""}}]`,
		},
		{
			name: "JSON references",
			src: `kind: Template
objects:
- spec: {num: "${{NUM}}", obj: "${{O}}", list: "${{L}}", str: "${{S}}", partial: "a${{NUM}}b"}
parameters:
- {name: NUM, value: "5"}
- {name: O, value: '{"a": [1, true]}'}
- {name: L, value: '[1.5, "x"]'}
- {name: S, value: '"quoted"'}
`,
			want: `[{spec: {num: 5, obj: {a: [1, true]}, list: [1.5, x], str: quoted, partial: a5b}}]`,
		},
		{
			name: "unknown references and dollars are kept",
			src: `kind: Template
objects:
- data: {ref: "$(ref.db.metadata.name)", sh: "echo $HOME ${X} $$ $", a: "${A", b: "$(A"}
parameters:
- {name: A, value: v}
`,
			want: `[{data: {ref: "$(ref.db.metadata.name)", sh: "echo $HOME ${X} $$ $", a: "${A", b: "$(A"}}]`,
		},
		{
			name: "keys are not substituted, nested lists are",
			src: `kind: Template
objects:
- data: {"${A}": ["${A}", ["$(A)"], 7, null, false]}
parameters:
- {name: A, value: v}
`,
			want: `[{data: {"${A}": [v, [v], 7, null, false]}}]`,
		},
		{
			name: "labels added and win, pod template labels alone",
			src: `kind: Template
labels: {app: "${APP}", tier: web}
objects:
- kind: Deployment
  metadata: {name: d, labels: {tier: own, keep: "yes"}}
  spec: {template: {metadata: {labels: {name: pod}}}}
- kind: Service
parameters:
- {name: APP, value: shop}
`,
			want: `
- kind: Deployment
  metadata: {name: d, labels: {tier: web, keep: "yes", app: shop}}
  spec: {template: {metadata: {labels: {name: pod}}}}
- kind: Service
  metadata: {labels: {app: shop, tier: web}}
`,
		},
		{
			name:    "unknown supplied",
			src:     "kind: Template\nparameters:\n- {name: A}\n",
			params:  map[string]string{"Z": "1", "Y": "2"},
			wantErr: "unknown parameters: Y, Z",
		},
		{
			name:    "required without value",
			src:     "kind: Template\nparameters:\n- {name: A, required: true}\n- {name: B, required: true, value: x}\n- {name: C, required: true}\n",
			wantErr: "required parameters without a value: A, C",
		},
		{
			name:    "supplied empty value for required",
			src:     "kind: Template\nparameters:\n- {name: A, required: true, value: x}\n",
			params:  map[string]string{"A": ""},
			wantErr: "required parameters without a value: A",
		},
		{
			name:    "bad int and bool",
			src:     "kind: Template\nparameters:\n- {name: NUM, type: int, value: three}\n- {name: B, type: bool, value: maybe}\n",
			wantErr: `parameter NUM: "three" is not an int; parameter B: "maybe" is not a bool`,
		},
		{
			name:    "bad base64",
			src:     "kind: Template\nparameters:\n- {name: E, type: base64, value: '!!'}\n",
			wantErr: "parameter E: value is not valid base64",
		},
		{
			name:    "JSON reference to non-JSON",
			src:     "kind: Template\nobjects:\n- spec: {x: [{z: '${{A}}'}]}\nparameters:\n- {name: A, value: 'not json'}\n",
			wantErr: "objects[0].spec.x[0].z: ${{A}}: value \"not json\" is not JSON",
		},
		{
			name:    "JSON reference to two values",
			src:     "kind: Template\nobjects:\n- spec: {x: '${{A}}'}\nparameters:\n- {name: A, value: '1 2'}\n",
			wantErr: "is not one JSON value",
		},
		{
			name:    "labels on bad metadata",
			src:     "kind: Template\nlabels: {a: b}\nobjects:\n- {metadata: 3}\n",
			wantErr: "objects[0].metadata: got a number",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := mustParse(t, tt.src)
			got, err := tmpl.Process(tt.params, Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Process error = %v, want it to contain %q", err, tt.wantErr)
				}
				if !errors.Is(err, derrors.InvalidArgument) {
					t.Errorf("error does not wrap InvalidArgument: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			objs := make([]any, len(got.Objects))
			for i, o := range got.Objects {
				objs[i] = o
			}
			if want := decodeYAML(t, tt.want); !reflect.DeepEqual(objs, want) {
				t.Errorf("objects:\n got %#v\nwant %#v", objs, want)
			}
		})
	}
}

func TestProcessReportsAllProblems(t *testing.T) {
	tmpl := mustParse(t, `kind: Template
parameters:
- {name: A, required: true}
- {name: B, required: true}
- {name: NUM, type: int, value: x}
`)
	_, err := tmpl.Process(map[string]string{"U1": "", "U2": ""}, Options{})
	var perr *ParameterError
	if !errors.As(err, &perr) {
		t.Fatalf("error %v is not a *ParameterError", err)
	}
	want := &ParameterError{
		Unknown: []string{"U1", "U2"},
		Missing: []string{"A", "B"},
		Invalid: []string{`parameter NUM: "x" is not an int`},
	}
	if !reflect.DeepEqual(perr, want) {
		t.Errorf("got %+v, want %+v", perr, want)
	}
	const msg = `template parameters: unknown parameters: U1, U2; required parameters without a value: A, B; parameter NUM: "x" is not an int`
	if err.Error() != msg {
		t.Errorf("message:\n got %s\nwant %s", err, msg)
	}
}

func TestProcessDoesNotModifyTemplate(t *testing.T) {
	src := `kind: Template
metadata: {name: t}
labels: {l: "${A}"}
objects:
- metadata: {labels: {x: y}}
  spec: {a: "${A}", list: ["${A}"]}
parameters:
- {name: A, generate: expression, from: "[a-z]{8}"}
`
	tmpl := mustParse(t, src)
	before, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Process(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Modifying the result must not reach the template either.
	out.Objects[0]["metadata"].(map[string]any)["labels"].(map[string]any)["x"] = "changed"
	out.Metadata["name"] = "changed"
	after, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("template changed:\nbefore %s\nafter  %s", before, after)
	}
	if out.Parameters[0].Value == "" || tmpl.Parameters[0].Value != "" {
		t.Errorf("generated value: result %q, template %q", out.Parameters[0].Value, tmpl.Parameters[0].Value)
	}
}

func TestProcessLimits(t *testing.T) {
	tmpl := mustParse(t, `kind: Template
objects:
- data: {a: "${A}", b: "${A}", c: "${A}"}
parameters:
- {name: A, generate: expression, from: "[a-z]{100}"}
`)
	tests := []struct {
		name    string
		opts    Options
		wantErr string
		is      error
	}{
		{name: "defaults", opts: Options{}},
		{name: "generated too long", opts: Options{MaxGeneratedLength: 99}, wantErr: "Options.MaxGeneratedLength (99)", is: derrors.LimitExceeded},
		{name: "rendered too large", opts: Options{MaxRenderedBytes: 250}, wantErr: "objects[0].data.", is: derrors.LimitExceeded},
		{name: "negative", opts: Options{MaxRenderedBytes: -1}, wantErr: "Options.MaxRenderedBytes is negative", is: derrors.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tmpl.Process(nil, tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tt.is) {
				t.Fatalf("error = %v, want %q wrapping %v", err, tt.wantErr, tt.is)
			}
			if tt.name == "rendered too large" && !strings.Contains(err.Error(), "Options.MaxRenderedBytes (250") {
				t.Errorf("error does not name the limit: %v", err)
			}
		})
	}
}

// TestProcessGoTemplate covers templates built in Go rather than parsed.
func TestProcessGoTemplate(t *testing.T) {
	tmpl := &Template{
		Kind:       Kind,
		Objects:    []map[string]any{{"a": "${A}"}},
		Parameters: []Parameter{{Name: "A", Generate: GenerateExpression, From: `\d{4}`}},
	}
	out, err := tmpl.Process(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\d{4}$`).MatchString(out.Objects[0]["a"].(string)) {
		t.Errorf("got %v", out.Objects[0])
	}
	tmpl.Parameters[0].Name = "bad name"
	if _, err := tmpl.Process(nil, Options{}); err == nil || !strings.Contains(err.Error(), "only letters") {
		t.Errorf("invalid name: err = %v", err)
	}
}

func TestMarshal(t *testing.T) {
	src := `apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: t, annotations: {description: d}}
message: "user is ${USER}"
custom: {kept: true}
labels: {app: x}
objects:
- {kind: Service}
parameters:
- {name: USER, displayName: User, description: the user, value: bob, required: true}
`
	tmpl := mustParse(t, src)
	out, err := tmpl.Process(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Message != "user is bob" {
		t.Errorf("message = %q", out.Message)
	}
	js, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var back Template
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("round trip: %v\n%s", err, js)
	}
	back.gens, out.gens = nil, nil
	if !reflect.DeepEqual(&back, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", &back, out)
	}
	y, err := out.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"custom:\n  kept: true", "kind: Template", "apiVersion: template.openshift.io/v1", "- description: the user"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("YAML lacks %q:\n%s", want, y)
		}
	}
	list := out.ToList()
	if list["kind"] != "List" || list["apiVersion"] != "v1" || len(list["items"].([]any)) != 1 {
		t.Errorf("ToList = %v", list)
	}
}

// TestGoldenMongoDB processes the example of seed 000 (including its
// trailing comma, which the YAML decoder accepts). Generated values are
// checked against their expressions and replaced by placeholders before
// comparing with testdata/mongodb.golden.json; run with -update to rewrite.
func TestGoldenMongoDB(t *testing.T) {
	src, err := os.ReadFile("testdata/mongodb.json")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Process(map[string]string{"MONGODB_DATABASE": "orders"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	generated := map[string]string{
		"MONGODB_USER":     `^user[A-Z0-9]{3}$`,
		"MONGODB_PASSWORD": `^[a-zA-Z0-9]{16}$`,
	}
	got, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out.Parameters {
		re, ok := generated[p.Name]
		if !ok {
			continue
		}
		if !regexp.MustCompile(re).MatchString(p.Value) {
			t.Errorf("%s = %q, want a match of %s", p.Name, p.Value, re)
		}
		got = bytes.ReplaceAll(got, []byte(`"`+p.Value+`"`), []byte(`"<generated `+p.Name+`>"`))
	}
	got = append(got, '\n')
	const golden = "testdata/mongodb.golden.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("processed template differs from %s:\n%s", golden, got)
	}
}

func BenchmarkProcess(b *testing.B) {
	tmpl := mustParse(b, benchTemplate)
	params := map[string]string{"NAME": "shop", "REPLICAS": "3"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Process(params, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTemplate has ten parameters, two of them generated.
const benchTemplate = `apiVersion: v1
kind: Template
metadata: {name: bench}
labels: {template: bench, app: "${NAME}"}
objects:
- apiVersion: v1
  kind: Secret
  metadata: {name: "${NAME}-db"}
  stringData: {user: "${DB_USER}", password: "${DB_PASSWORD}", database: "${DB_NAME}"}
- apiVersion: v1
  kind: Service
  metadata: {name: "${NAME}"}
  spec:
    ports: [{name: http, port: "${{PORT}}", targetPort: "${{PORT}}"}]
    selector: {name: "${NAME}"}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: "${NAME}"}
  spec:
    replicas: "${REPLICAS}"
    selector: {matchLabels: {name: "${NAME}"}}
    template:
      metadata: {labels: {name: "${NAME}"}}
      spec:
        containers:
        - name: app
          image: "${IMAGE}:${TAG}"
          ports: [{containerPort: "${{PORT}}"}]
          env:
          - {name: DB_USER, valueFrom: {secretKeyRef: {name: "${NAME}-db", key: user}}}
          - {name: DB_PASSWORD, valueFrom: {secretKeyRef: {name: "${NAME}-db", key: password}}}
          - {name: LOG_LEVEL, value: "${LOG_LEVEL}"}
          resources: {limits: {memory: "${MEMORY}"}}
parameters:
- {name: NAME, required: true}
- {name: IMAGE, value: docker.io/acme/shop}
- {name: TAG, value: "1.2.3"}
- {name: REPLICAS, value: "1", type: int}
- {name: PORT, value: "8080"}
- {name: DB_USER, generate: expression, from: "user[A-Z0-9]{4}"}
- {name: DB_PASSWORD, generate: expression, from: "[a-zA-Z0-9]{16}"}
- {name: DB_NAME, value: shop}
- {name: LOG_LEVEL, value: info}
- {name: MEMORY, value: 512Mi}
`

// TestProcessConcurrent processes one parsed template from several
// goroutines; run with -race.
func TestProcessConcurrent(t *testing.T) {
	tmpl := mustParse(t, benchTemplate)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for range 20 {
				if _, err = tmpl.Process(map[string]string{"NAME": "x"}, Options{}); err != nil {
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
