// Package scaffold writes a new template version directory for dm init:
// a template in one of the engine's languages, its schema and an
// example.yaml that pass dm lint --expand.
package scaffold

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// scaffold is what Write writes for one language: the template, its
// schema ("" for none: an OpenShift template carries its parameters, and
// its properties in a configuration are parameter values) and the example.
type scaffold struct {
	template, schema, example string
	// files are a directory language's other files (a chart's
	// values.yaml and templates/), by path.
	files map[string]string
}

// scaffolds returns the scaffolds by language name (the engine table's
// names; --lang takes its aliases too).
func scaffolds() map[string]scaffold {
	return map[string]scaffold{
		"jinja":     {scaffoldJinja, scaffoldSchema, scaffoldExample, nil},
		"python":    {scaffoldPy, scaffoldSchema, scaffoldExample, nil},
		"gotmpl":    {scaffoldGoTmpl, scaffoldSchema, scaffoldExample, nil},
		"openshift": {scaffoldOpenShift, "", scaffoldOpenShiftExample, nil},
		"helm": {scaffoldChart, scaffoldChartSchema, scaffoldExample, map[string]string{
			"values.yaml":               scaffoldChartValues,
			"templates/deployment.yaml": scaffoldChartDeployment,
			"templates/service.yaml":    scaffoldChartService,
		}},
	}
}

// templateNameRE is a template (or collection) directory name that is also
// a valid Kubernetes name, so the scaffold's objects apply as they are.
var templateNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Language returns the engine language lang names (a name or alias of
// the engine table) when there is a scaffold for it. The error says which
// languages there are.
func Language(lang string) (engine.Language, error) {
	langs := engine.Default()
	l, ok := langs.Lookup(lang)
	if _, scaffolded := scaffolds()[l.Name]; !ok || !scaffolded {
		return engine.Language{}, derrors.Errorf(derrors.InvalidArgument, "%q: want %s", lang, langs.DescribeNames())
	}
	return l, nil
}

// CheckName checks a template's name, [COLLECTION/]TEMPLATE, each part a
// valid Kubernetes name, so the scaffold's objects apply as they are.
func CheckName(name string) error {
	parts := strings.Split(name, "/")
	if len(parts) > 2 {
		return derrors.Errorf(derrors.InvalidArgument, "%q: want TEMPLATE or COLLECTION/TEMPLATE", name)
	}
	for _, p := range parts {
		if !templateNameRE.MatchString(p) {
			return derrors.Errorf(derrors.InvalidArgument, "%q: %q is not a valid name (lower-case letters, digits and '-', starting and ending with a letter or digit)", name, p)
		}
	}
	return nil
}

// Write scaffolds [COLLECTION/]TEMPLATE/v0.1.0/ under dir, a registry's
// root: a template in lang, its schema and an example.yaml that pass dm
// lint --expand, telling written of each file it writes. It never
// overwrites: a template that exists is an error wrapping fs.ErrExist.
func Write(dir, name, lang string, written func(path string)) error {
	l, err := Language(lang)
	if err != nil {
		return err
	}
	if err := CheckName(name); err != nil {
		return err
	}
	sc := scaffolds()[l.Name]
	tname := path.Base(name)
	vdir := filepath.Join(dir, filepath.FromSlash(name), "v0.1.0")
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); err == nil {
		return fmt.Errorf("%s exists already; dm init writes only new templates: %w", filepath.Join(dir, filepath.FromSlash(name)), fs.ErrExist)
	}
	// A directory language's template file is its marker (Chart.yaml).
	file := l.Marker
	if file == "" {
		file = tname + slices.Concat(l.Extensions, l.DataExtensions)[0]
	}
	data := map[string]string{"Name": tname, "Ref": name + ":v0.1", "File": file}
	files := map[string]string{file: sc.template, "example.yaml": sc.example}
	if sc.schema != "" {
		files[l.Schema(file)] = sc.schema
	}
	order := []string{file, l.Schema(file)}
	for _, f := range slices.Sorted(maps.Keys(sc.files)) {
		files[f] = sc.files[f]
		order = append(order, f)
	}
	order = append(order, "example.yaml")
	for _, f := range order {
		src, ok := files[f]
		if !ok {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(vdir, f)), 0o755); err != nil {
			return err
		}
		var buf bytes.Buffer
		// The scaffolds use [[ ]] so that the templates' own {{ }} stay.
		t := template.Must(template.New(f).Delims("[[", "]]").Parse(src))
		if err := t.Execute(&buf, data); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(vdir, f), buf.Bytes(), 0o644); err != nil {
			return err
		}
		written(filepath.Join(vdir, f))
	}
	return nil
}

const scaffoldExample = `# An example configuration: dm lint --expand and the catalog expand it.
resources:
- name: [[.Name]]
  type: [[.Ref]]
  properties:
    image: nginx:1.27
    replicas: 2
`

const scaffoldOpenShiftExample = `# An example configuration: dm lint --expand and the catalog expand it.
resources:
- name: [[.Name]]
  type: [[.Ref]]
  properties:
    IMAGE: nginx:1.27
    REPLICAS: "2"
`

const scaffoldSchema = `info:
  title: [[.Name]]
  description: A Deployment and a Service for one container image.
required: [image]
properties:
  image:
    type: string
    description: The container image to run.
  replicas:
    type: integer
    default: 1
    minimum: 0
    description: How many pods to run.
  port:
    type: integer
    default: 80
    description: The port the container listens on and the Service exposes.
`

const scaffoldJinja = `{#- [[.File]]: a Deployment and a Service. env.name is the resource's name. #}
resources:
- name: {{ env['name'] }}-deployment
  type: apps/v1/Deployment
  properties:
    metadata:
      name: {{ env['name'] }}
      labels: {app: {{ env['name'] }}}
    spec:
      replicas: {{ properties['replicas'] }}
      selector:
        matchLabels: {app: {{ env['name'] }}}
      template:
        metadata:
          labels: {app: {{ env['name'] }}}
        spec:
          containers:
          - name: main
            image: {{ properties['image'] }}
            ports:
            - containerPort: {{ properties['port'] }}
- name: {{ env['name'] }}-service
  type: Service
  properties:
    metadata:
      name: {{ env['name'] }}
    spec:
      selector: {app: {{ env['name'] }}}
      ports:
      - port: {{ properties['port'] }}
`

const scaffoldPy = `"""[[.File]]: a Deployment and a Service. context.env['name'] is the resource's name."""


def GenerateConfig(context):
    name = context.env['name']
    props = context.properties
    labels = {'app': name}
    deployment = {
        'metadata': {'name': name, 'labels': labels},
        'spec': {
            'replicas': props['replicas'],
            'selector': {'matchLabels': labels},
            'template': {
                'metadata': {'labels': labels},
                'spec': {'containers': [{
                    'name': 'main',
                    'image': props['image'],
                    'ports': [{'containerPort': props['port']}],
                }]},
            },
        },
    }
    service = {
        'metadata': {'name': name},
        'spec': {'selector': labels, 'ports': [{'port': props['port']}]},
    }
    return {'resources': [
        {'name': name + '-deployment', 'type': 'apps/v1/Deployment', 'properties': deployment},
        {'name': name + '-service', 'type': 'Service', 'properties': service},
    ]}
`

const scaffoldGoTmpl = `{{- /* [[.File]]: a Deployment and a Service. .env.name is the resource's name. */ -}}
{{- $name := .env.name -}}
resources:
- name: {{ $name }}-deployment
  type: apps/v1/Deployment
  properties:
    metadata:
      name: {{ $name }}
      labels: {app: {{ $name }}}
    spec:
      replicas: {{ .properties.replicas }}
      selector:
        matchLabels: {app: {{ $name }}}
      template:
        metadata:
          labels: {app: {{ $name }}}
        spec:
          containers:
          - name: main
            image: {{ required "image is required" .properties.image | quote }}
            ports:
            - containerPort: {{ .properties.port }}
- name: {{ $name }}-service
  type: Service
  properties:
    metadata:
      name: {{ $name }}
    spec:
      selector: {app: {{ $name }}}
      ports:
      - port: {{ .properties.port }}
`

const scaffoldOpenShift = `apiVersion: template.openshift.io/v1
kind: Template
metadata:
  name: [[.Name]]
  annotations:
    description: A Deployment and a Service for one container image.
parameters:
- name: NAME
  description: Name of the Deployment and the Service.
  value: [[.Name]]
- name: IMAGE
  description: The container image to run.
  required: true
- name: REPLICAS
  description: How many pods to run.
  value: "1"
- name: PORT
  description: The port the container listens on and the Service exposes.
  value: "80"
objects:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: ${NAME}
    labels: {app: "${NAME}"}
  spec:
    replicas: ${{REPLICAS}}
    selector:
      matchLabels: {app: "${NAME}"}
    template:
      metadata:
        labels: {app: "${NAME}"}
      spec:
        containers:
        - name: main
          image: ${IMAGE}
          ports:
          - containerPort: ${{PORT}}
- apiVersion: v1
  kind: Service
  metadata:
    name: ${NAME}
  spec:
    selector: {app: "${NAME}"}
    ports:
    - port: ${{PORT}}
`

// The chart scaffold is what helm create makes, smaller: a Deployment and a
// Service from values.yaml, whose values.schema.json is the catalog's
// properties table.
const scaffoldChart = `apiVersion: v2
name: [[.Name]]
description: A Deployment and a Service for one container image.
type: application
version: 0.1.0
`

const scaffoldChartValues = `# -- The container image to run.
image: nginx:1.27
# -- How many pods to run.
replicas: 1
# -- The port the container listens on and the Service exposes.
port: 80
`

const scaffoldChartSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "[[.Name]]",
  "description": "A Deployment and a Service for one container image.",
  "type": "object",
  "required": ["image"],
  "properties": {
    "image": {"type": "string", "description": "The container image to run."},
    "replicas": {"type": "integer", "minimum": 0, "default": 1, "description": "How many pods to run."},
    "port": {"type": "integer", "default": 80, "description": "The port the container listens on and the Service exposes."}
  }
}
`

const scaffoldChartDeployment = `# The release's name is the resource's name in dm.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: main
        image: {{ required "image is required" .Values.image | quote }}
        ports:
        - containerPort: {{ .Values.port }}
`

const scaffoldChartService = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports:
  - port: {{ .Values.port }}
`
