package controller

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/manifest"
	"github.com/dmhq/dm/internal/resolve"
)

// leakyJinja copies its secret property into outputs and a ConfigMap,
// transformed every way a template can: reversed, sliced, replaced,
// upper-cased, JSON- and HTML-escaped, concatenated, joined, measured;
// and into a Secret, where it belongs. plain is no secret.
const leakyJinja = `{% set s = properties.secret %}
resources:
- name: cm
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: cm}
    data:
      plain: {{ properties.plain | tojson }}
      reversed: {{ (s | reverse | join('')) | tojson }}
      sliced: {{ s[1:-1] | tojson }}
      replaced: {{ s | replace('a', 'b') | tojson }}
      upper: {{ s | upper | tojson }}
      escaped: {{ s | e | string | tojson }}
      json: {{ s | tojson | tojson }}
      concat: {{ ('x' ~ s ~ 'y') | tojson }}
      {{ s | tojson }}: as a key
- name: secret
  type: Secret
  properties:
    apiVersion: v1
    kind: Secret
    metadata: {name: secret}
    stringData: {value: {{ s | tojson }}}
- name: deploy
  type: apps/v1/Deployment
  properties:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: deploy}
    spec:
      template:
        spec:
          containers:
          - name: app
            image: {{ properties.plain | tojson }}
            env:
            - {name: PLAIN, value: {{ properties.plain | tojson }}}
            - {name: SECRET, value: {{ ('pre-' ~ (s | reverse | join(''))) | tojson }}}
outputs:
- {name: plain, value: {{ properties.plain | tojson }}}
- {name: reversed, value: {{ (s | reverse | join('')) | tojson }}}
- {name: sliced, value: {{ s[2:] | tojson }}}
- {name: replaced, value: {{ s | replace('e', '3') | tojson }}}
- {name: upper, value: {{ s | upper | tojson }}}
- {name: length, value: {{ s | length }}}
- {name: listed, value: {{ [s, 'x'] | tojson }}}
- {name: {{ ('out-' ~ s) | tojson }}, value: named after the secret}
- {name: cmdata, value: $(ref.cm.data)}
`

// leakyGotmpl does what Go templates do best: base64, YAML, JSON.
const leakyGotmpl = `resources:
- name: gcm
  type: ConfigMap
  properties:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: gcm}
    data:
      b64: {{ .properties.secret | b64enc | toJson }}
      yaml: {{ dict "v" .properties.secret | toYaml | toJson }}
      json: {{ .properties.secret | toJson | toJson }}
      plain: {{ .properties.plain | toJson }}
outputs:
- {name: b64, value: {{ .properties.secret | b64enc | toJson }}}
- {name: yaml, value: {{ list .properties.secret | toYaml | toJson }}}
- {name: trimmed, value: {{ .properties.secret | trimAll "x" | toJson }}}
- {name: plain, value: {{ .properties.plain | toJson }}}
`

// leakyStatus is a status template that tries to copy the secret out of
// what it reads.
const leakyStatus = `fromcm: {{ resources.cm.data | tojson }}
env: {{ resources.deploy.spec.template.spec.containers[0].env | tojson }}
image: {{ resources.deploy.spec.template.spec.containers[0].image | tojson }}
secret: {{ resources.secret.stringData | tojson }}
prop: {{ properties.secret | tojson }}
gcm: {{ resources.gcm.data | tojson }}
`

// leakyConfig deploys both templates with props.
func leakyConfig(props map[string]any) (*api.ExpandRequest, error) {
	b, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	return &api.ExpandRequest{
		ConfigName: "leaky.yaml",
		Config: "imports: [leaky.jinja, leaky.gotmpl]\nresources:\n- {name: app, type: leaky.jinja, properties: " + string(b) + "}\n" +
			"- {name: gapp, type: leaky.gotmpl, properties: " + string(b) + "}\n" +
			"outputs:\n- {name: app, value: $(ref.app.reversed)}\n- {name: all, value: [$(ref.app.plain), $(ref.app.upper), $(ref.gapp.b64), $(ref.gapp.yaml), $(ref.gapp.trimmed)]}\n" +
			"- {name: plain, value: $(ref.gapp.plain)}\n- {name: length, value: $(ref.app.length)}\n- {name: sliced, value: $(ref.app.sliced)}\n" +
			"- {name: replaced, value: $(ref.app.replaced)}\n- {name: listed, value: $(ref.app.listed)}\n- {name: cm, value: $(ref.app.cmdata)}\n",
		Imports: map[string]string{"leaky.jinja": leakyJinja, "leaky.gotmpl": leakyGotmpl},
	}, nil
}

// leakyRender renders leakyConfig with props.
func leakyRender(exp api.Expander) blindRender {
	return func(ctx context.Context, props map[string]any, _ *standIns) (*manifest.Manifest, error) {
		req, err := leakyConfig(props)
		if err != nil {
			return nil, err
		}
		x, err := exp.Expand(ctx, req)
		if err != nil {
			return nil, err
		}
		return manifest.Of(x, manifest.Options{})
	}
}

// leak is what the controller would write of an instance of the leaky
// templates whose secret property is secret (marked): status.outputs
// (the templates' outputs, then the status template's over the live
// objects, here the rendered ones) and the condition and log of an error
// quoting it.
func leak(t testing.TB, exp api.Expander, secret string) (outputs string, logs string) {
	t.Helper()
	ctx := context.Background()
	props := map[string]any{"secret": secret, "plain": "visible-value"}
	marks := [][]string{{"secret"}}
	render := leakyRender(exp)
	real, err := render(ctx, props, nil)
	if err != nil {
		// The value breaks the template (YAML it cannot hold): what is
		// written is the error, cleaned.
		return "", scrub(err, secretStrings(props, marks)).Error()
	}
	tn := taintOf(ctx, real, props, marks, render)
	if tn.all {
		t.Fatalf("secret %q: a blind run failed", secret)
	}
	// The templates' outputs, as outputs() leaves them (the live
	// objects' fields, $(ref.cm.data), read from the rendered objects).
	out := map[string]any{}
	live := map[string]any{}
	for _, mo := range real.Objects {
		k := keyOf(&mo)
		live[mo.Path[len(mo.Path)-1]] = statusView(mo.Object, tn, k)
	}
	for _, o := range real.Outputs {
		v := o.Value
		if len(o.Deferred) > 0 {
			v = live["cm"].(map[string]any)["data"]
		}
		out[o.Name] = v
		switch tn.outputs[o.Name] {
		case outputRedacted:
			out[o.Name] = Redacted
		case outputDropped:
			delete(out, o.Name)
		}
	}
	in, err := json.Marshal(map[string]any{"resources": live, "instance": map[string]any{},
		"properties": redactPaths(props, marks)})
	if err != nil {
		t.Fatal(err)
	}
	st := statusFormFor("leaky.status.jinja")
	status, err := renderStatus(ctx, exp, "status", "leaky.status.jinja", leakyStatus, st.Prefix, st.Suffix, in)
	if err != nil {
		t.Fatalf("status template: %v", err)
	}
	for k, v := range status {
		out["status."+k] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	// An error quoting the value, as an engine, a validator or the
	// apiserver would, cleaned for the condition and logged as the
	// reconciler logs it, as text and as JSON.
	cause := fmt.Errorf("value %q is invalid; json %s; raw %s: %w", secret, mustJSON(secret), secret, errors.ErrUnsupported)
	clean := scrub(cause, secretStrings(props, marks))
	if !errors.Is(clean, errors.ErrUnsupported) {
		t.Errorf("scrub lost the error's chain: %v", clean)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("reconcile failed", "err", clean)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("reconcile failed", "err", clean)
	return string(b), clean.Error() + "\n" + buf.String()
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// forms are the value and what the templates made of it.
func forms(s string) []string {
	r := []rune(s)
	slices.Reverse(r)
	rev := string(r)
	y, _ := yaml.Marshal(map[string]any{"v": s})
	out := []string{s, rev, "pre-" + rev, strings.ToUpper(s), strings.ReplaceAll(s, "a", "b"), strings.ReplaceAll(s, "e", "3"),
		html.EscapeString(s), mustJSON(s), base64.StdEncoding.EncodeToString([]byte(s)), "x" + s + "y", "out-" + s,
		strings.TrimSpace(string(y))}
	if len(r) > 2 {
		out = append(out, string(r[1:len(r)-1]), string([]rune(s)[2:]))
	}
	return append(out, secretForms(s)...)
}

// assertNoLeak fails when outputs or logs hold the secret in any form.
// A form shorter than minSecretLen, or one the output holds for any
// secret (the baseline's), tells nothing.
func assertNoLeak(t testing.TB, secret, outputs, logs, baseline, baseLogs string) {
	t.Helper()
	for _, f := range forms(secret) {
		if len(f) < minSecretLen || strings.Contains(baseline, f) {
			continue
		}
		if strings.Contains(outputs, f) {
			t.Errorf("secret %q: status.outputs hold %q:\n%s", secret, f, outputs)
		}
		// Messages are cleaned of values of minSecretLen or more.
		if len(secret) >= minSecretLen && !strings.Contains(baseLogs, f) && strings.Contains(logs, f) {
			t.Errorf("secret %q: the condition or the log holds %q:\n%s", secret, f, logs)
		}
	}
}

func newTestExpander() api.Expander {
	return api.NewService(resolve.New(resolve.Registry{}), expand.Options{})
}

// TestTaintTransformed: an output or a status template reading a marked
// value, however transformed, reads "(redacted)"; what does not depend on
// it reads as it is; status.outputs are the same whatever the secret.
func TestTaintTransformed(t *testing.T) {
	exp := newTestExpander()
	baseline, baseLogs := leak(t, exp, "baseline-secret-value")
	t.Logf("status.outputs: %s", baseline)
	for _, secret := range []string{
		"s3cret-&<>\"'\\\n\u2028\u2029é-end",
		"a&b<c>d",
		"<script>alert('x')</script>",
		"line1\nline2: {x: [y]}\n- z",
		"ünïcödé ☃ ß",
	} {
		got, logs := leak(t, exp, secret)
		assertNoLeak(t, secret, got, logs, baseline, baseLogs)
		if got != baseline {
			t.Errorf("secret %q: status.outputs depend on it:\n%s\nbaseline\n%s", secret, got, baseline)
		}
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(baseline), &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"plain": "visible-value", "app": Redacted, "length": Redacted, "sliced": Redacted, "replaced": Redacted, "listed": Redacted,
		"status.image": "visible-value", "status.prop": Redacted,
		"status.env":    []any{map[string]any{"name": "PLAIN", "value": "visible-value"}, map[string]any{"name": "SECRET", "value": Redacted}},
		"status.secret": map[string]any{"value": Redacted},
	}
	for k, v := range want {
		if g, _ := json.Marshal(out[k]); string(g) != mustJSON(v) {
			t.Errorf("output %s = %s, want %s", k, g, mustJSON(v))
		}
	}
	// The ConfigMap has a key named after the secret: its data goes
	// whole, keys and all; the one of the Go template keeps its plain key.
	if out["status.fromcm"] != Redacted || out["cm"] != Redacted {
		t.Errorf("a mapping keyed by the secret: fromcm %v, cm %v; want both redacted", out["status.fromcm"], out["cm"])
	}
	if g := out["status.gcm"].(map[string]any); g["plain"] != "visible-value" || g["b64"] != Redacted || g["yaml"] != Redacted {
		t.Errorf("status.gcm = %v", g)
	}
	all, _ := out["all"].([]any)
	if len(all) != 5 || slices.ContainsFunc(all, func(v any) bool { return v != Redacted }) {
		// A list holding one tainted value is tainted whole.
		if out["all"] != Redacted {
			t.Errorf("output all = %v, want redacted", out["all"])
		}
	}
}

// FuzzRedaction: for any secret value (every JSON, HTML and YAML special
// character, unicode, line separators), what the controller writes of it
// (status.outputs, conditions, logs) holds no form of it the templates
// made, and does not change with it.
func FuzzRedaction(f *testing.F) {
	for _, s := range []string{"&<>", "\"'\\\n", "\u2028\u2029", "a: b\n- c", "{{ x }}", "ünï☃", "--- !!binary", "\x00\x1f", "%s%q"} {
		f.Add(s)
	}
	exp := newTestExpander()
	baseline, baseLogs := leak(f, exp, "baseline-secret-value")
	f.Fuzz(func(t *testing.T, secret string) {
		if !utf8.ValidString(secret) || len(secret) > 256 {
			return // not text a Secret's YAML holds
		}
		got, logs := leak(t, exp, secret)
		assertNoLeak(t, secret, got, logs, baseline, baseLogs)
		// "": the value broke the template, and only its error is written.
		if got != "" && got != baseline {
			t.Errorf("secret %q: status.outputs depend on it:\n%s\nbaseline\n%s", secret, got, baseline)
		}
	})
}

// BenchmarkTaint is what redaction by construction costs an instance with
// a marked value: the real render, and with blind=true the two blind ones
// and their comparison (cached by the reconciler for a resync).
func BenchmarkTaint(b *testing.B) {
	exp := newTestExpander()
	ctx := context.Background()
	props := map[string]any{"secret": "s3cret-&<>", "plain": "visible-value"}
	render := leakyRender(exp)
	for _, blind := range []bool{false, true} {
		b.Run(fmt.Sprintf("blind=%v", blind), func(b *testing.B) {
			for b.Loop() {
				real, err := render(ctx, props, nil)
				if err != nil {
					b.Fatal(err)
				}
				if blind {
					if t := taintOf(ctx, real, props, [][]string{{"secret"}}, render); t.all {
						b.Fatal("a blind run failed")
					}
				}
			}
		})
	}
}

// expanderFunc adapts a function to api.Expander.
type expanderFunc func(ctx context.Context, req *api.ExpandRequest) (*api.ExpandResult, error)

func (f expanderFunc) Expand(ctx context.Context, req *api.ExpandRequest) (*api.ExpandResult, error) {
	return f(ctx, req)
}

// TestTaintCached: the blind renders run once for a rendering; a resync
// of the same inputs renders no more, other inputs render again.
func TestTaintCached(t *testing.T) {
	exp := newTestExpander()
	renders := 0
	r := &InstanceReconciler{taints: newTaints(), opts: Options{Expander: expanderFunc(func(ctx context.Context, req *api.ExpandRequest) (*api.ExpandResult, error) {
		renders++
		lr, err := leakyConfig(req.Properties)
		if err != nil {
			return nil, err
		}
		return exp.Expand(ctx, lr)
	})}}
	ctx := context.Background()
	applied := func(secret string) *applied {
		props := map[string]any{"secret": secret, "plain": "visible-value"}
		src := deploy.Source{Input: release.Input{Ref: "leaky:v1"}, Properties: props, Name: "app"}
		x, err := r.expand(ctx, src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return &applied{props: props, secret: [][]string{{"secret"}}, rendering: &rendering{src: src, x: x}}
	}
	for i, tt := range []struct {
		secret string
		want   int // blind renders
	}{{"first-secret", 2}, {"first-secret", 0}, {"second-secret", 2}} {
		a := applied(tt.secret)
		renders = 0
		tn, err := r.tainted(ctx, a, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if renders != tt.want || tn == nil || tn.outputs["app"] != outputRedacted {
			t.Errorf("%d: %d blind renders (want %d), taint %+v", i, renders, tt.want, tn)
		}
	}
	// Nothing marked but a Secret rendered: blind renders, which find
	// nothing the template made differently.
	a := applied("x")
	a.secret = nil
	renders = 0
	if tn, err := r.tainted(ctx, a, "", ""); err != nil || tn == nil || tn.all || len(tn.outputs) != 0 || len(tn.objects) != 0 || renders != 2 {
		t.Errorf("nothing marked: taint %+v, %v after %d renders", tn, err, renders)
	}
}

// TestTaintRandomSecret: with nothing marked, a password a template makes
// at random for the Secret it renders, and also outputs, is redacted: the
// blind renders make another.
func TestTaintRandomSecret(t *testing.T) {
	exp := newTestExpander()
	const tmpl = `{{- $p := randAlphaNum 24 -}}
resources:
- name: s
  type: Secret
  properties: {apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {password: {{ $p | toJson }}}}
- name: cm
  type: ConfigMap
  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}, data: {password: {{ $p | toJson }}, plain: "visible"}}
outputs:
- {name: password, value: {{ $p | toJson }}}
- {name: plain, value: visible}
`
	const config = `imports: [r.gotmpl]
resources:
- {name: app, type: r.gotmpl}
outputs:
- {name: password, value: $(ref.app.password)}
- {name: plain, value: $(ref.app.plain)}
`
	r := &InstanceReconciler{opts: Options{Expander: expanderFunc(func(ctx context.Context, _ *api.ExpandRequest) (*api.ExpandResult, error) {
		return exp.Expand(ctx, &api.ExpandRequest{ConfigName: "c.yaml", Config: config, Imports: map[string]string{"r.gotmpl": tmpl}})
	})}}
	ctx := context.Background()
	src := deploy.Source{Input: release.Input{Ref: "r:v1"}, Name: "app"}
	x, err := r.expand(ctx, src, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := r.tainted(ctx, &applied{props: map[string]any{}, rendering: &rendering{src: src, x: x}}, "", "")
	if err != nil || tn == nil {
		t.Fatalf("taint %v, %v", tn, err)
	}
	if tn.outputs["password"] != outputRedacted || tn.outputs["plain"] != 0 {
		t.Errorf("outputs' taint %v; want password redacted, plain not", tn.outputs)
	}
	cm := tn.objects[objectKey{path: "app/cm", apiVersion: "v1", kind: "ConfigMap", name: "cm"}]
	if len(cm) != 1 || cm[0][0].key != "data" || cm[0][1].key != "password" {
		t.Errorf("ConfigMap's tainted fields %+v; want data.password", cm)
	}
}

// lookupFunc adapts a function to engine.Lookup.
type lookupFunc func(ctx context.Context, q engine.LookupQuery) (map[string]any, error)

func (f lookupFunc) Lookup(ctx context.Context, q engine.LookupQuery) (map[string]any, error) {
	return f(ctx, q)
}

// TestSecretLookup: a real render records the Secrets a chart looks up;
// a blind one reads stand-ins for their data (valid base64, none the
// real value), without the last-applied annotation; other kinds pass.
func TestSecretLookup(t *testing.T) {
	secret := func(v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "s", "annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": v}},
			"data":     map[string]any{"k": base64.StdEncoding.EncodeToString([]byte(v))}, "stringData": map[string]any{"p": v}}
	}
	inner := lookupFunc(func(_ context.Context, q engine.LookupQuery) (map[string]any, error) {
		switch {
		case q.Kind == "ConfigMap":
			return map[string]any{"kind": "ConfigMap", "data": map[string]any{"k": "plain"}}, nil
		case q.Name == "":
			return map[string]any{"kind": "SecretList", "items": []any{secret("listed-secret")}}, nil
		}
		return secret("the-real-secret"), nil
	})
	ctx := context.Background()
	var seen lookedUp
	real := &secretLookup{inner: inner, read: &seen}
	if obj, _ := real.Lookup(ctx, engine.LookupQuery{APIVersion: "v1", Kind: "Secret", Name: "s"}); obj["stringData"].(map[string]any)["p"] != "the-real-secret" {
		t.Errorf("the real render read %v", obj)
	}
	_, _ = real.Lookup(ctx, engine.LookupQuery{APIVersion: "v1", Kind: "Secret"})
	if any, values := seen.read(); !any || !slices.Contains(values, "the-real-secret") || !slices.Contains(values, "listed-secret") {
		t.Errorf("recorded %v %v", any, values)
	}
	blind := &secretLookup{inner: inner, blind: &standIns{set: blindA}}
	for _, q := range []engine.LookupQuery{{APIVersion: "v1", Kind: "Secret", Name: "s"}, {APIVersion: "v1", Kind: "Secret"}} {
		obj, err := blind.Lookup(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(obj)
		for _, real := range []string{"the-real-secret", "listed-secret", base64.StdEncoding.EncodeToString([]byte("the-real-secret")), "last-applied"} {
			if strings.Contains(string(b), real) {
				t.Errorf("a blind lookup holds %q: %s", real, b)
			}
		}
	}
	obj, _ := blind.Lookup(ctx, engine.LookupQuery{APIVersion: "v1", Kind: "Secret", Name: "s"})
	if d, err := base64.StdEncoding.DecodeString(obj["data"].(map[string]any)["k"].(string)); err != nil || !strings.HasPrefix(string(d), "blinda") {
		t.Errorf("blind data %q, %v; want a stand-in in base64", d, err)
	}
	if obj, _ := blind.Lookup(ctx, engine.LookupQuery{APIVersion: "v1", Kind: "ConfigMap", Name: "c"}); obj["data"].(map[string]any)["k"] != "plain" {
		t.Errorf("a ConfigMap changed: %v", obj)
	}
}
