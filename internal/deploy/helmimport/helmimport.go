// Package helmimport reads a Helm 3 release's record from the cluster so
// that dm can adopt the release (dm import helm): its newest revision's
// chart, values and manifest objects.
//
// Helm keeps each revision in a Secret sh.helm.release.v1.NAME.vN labelled
// owner=helm, name=NAME, whose data.release is base64(gzip(JSON(release)))
// of helm.sh/helm/v3/pkg/release.Release. The record is decoded here
// rather than through Helm's storage driver package: that package pulls
// SQL drivers and more into dm's start-up, and the format is small and
// documented.
package helmimport

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	hchart "helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
)

// FieldManager is the field manager Helm's client-side creates and
// updates record in managedFields: the fields dm takes over on import.
const FieldManager = "helm"

// maxRecord bounds a decompressed Helm record (Helm's Secrets are at most
// 1 MiB compressed).
const maxRecord = 64 << 20

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Release is the newest revision of a Helm release, as dm adopts it.
type Release struct {
	Name      string
	Namespace string
	// Revision is Helm's revision number of the record read.
	Revision int
	// Chart, ChartVersion and AppVersion are from the chart's metadata.
	Chart, ChartVersion, AppVersion string
	// Values are the values given at install or upgrade (helm get
	// values), not the chart's defaults.
	Values map[string]any
	// Objects are the manifest's objects, in the manifest's order. Hooks
	// are not among them: Helm deletes or keeps them by their own policy.
	Objects []map[string]any
	// Hooks counts the release's hooks, which are not imported.
	Hooks int
	// ChartFiles are the chart's files as Helm's record keeps them
	// (Chart.yaml, values.yaml, values.schema.json, templates/..., other
	// files), by path relative to the chart, so that dm can render the
	// chart again; nil when it cannot, and NoChartFiles says why.
	ChartFiles   map[string]string
	NoChartFiles string
	// Records are the names of every Secret that holds a revision of
	// the release.
	Records []string
}

// Read reads release name's newest record from namespace. A release with
// no record, or whose newest revision is not deployed (failed, pending),
// is an error that says so.
func Read(ctx context.Context, client dynamic.Interface, namespace, name string) (*Release, error) {
	sel := "owner=helm,name=" + name
	list, err := client.Resource(secretsGVR).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("listing the Helm records of %s in namespace %s: %w: %w", name, namespace, err, derrors.Forbidden)
		}
		return nil, fmt.Errorf("listing the Helm records of %s in namespace %s: %w", name, namespace, err)
	}
	var newest *unstructured.Unstructured
	newestV := 0
	var names []string
	for i := range list.Items {
		s := &list.Items[i]
		var v int
		if _, err := fmt.Sscanf(s.GetLabels()["version"], "%d", &v); err != nil {
			continue
		}
		if !strings.HasPrefix(s.GetName(), "sh.helm.release.v1.") {
			continue
		}
		names = append(names, s.GetName())
		if v > newestV {
			newest, newestV = s, v
		}
	}
	if newest == nil {
		return nil, fmt.Errorf("no Helm 3 release %s in namespace %s (no Secret labelled %s): %w", name, namespace, sel, derrors.NotFound)
	}
	slices.Sort(names)
	rel, err := decode(newest)
	if err != nil {
		return nil, fmt.Errorf("Helm record %s/%s: %w", namespace, newest.GetName(), err)
	}
	if rel.Info == nil || rel.Info.Status != hrelease.StatusDeployed {
		st := "unknown"
		if rel.Info != nil {
			st = rel.Info.Status.String()
		}
		return nil, fmt.Errorf("Helm release %s in namespace %s: revision %d is %s, not deployed; settle it with helm (helm rollback or helm upgrade) before importing: %w",
			name, namespace, rel.Version, st, derrors.InvalidArgument)
	}
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return nil, fmt.Errorf("Helm record %s/%s has no chart metadata: %w", namespace, newest.GetName(), derrors.InvalidArgument)
	}
	objs, err := Objects(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("Helm release %s revision %d manifest: %w", name, rel.Version, err)
	}
	files, why := chartFiles(rel.Chart)
	return &Release{
		Name: name, Namespace: namespace, Revision: rel.Version,
		Chart: rel.Chart.Metadata.Name, ChartVersion: rel.Chart.Metadata.Version, AppVersion: rel.Chart.Metadata.AppVersion,
		Values: rel.Config, Objects: objs, Hooks: len(rel.Hooks), Records: names,
		ChartFiles: files, NoChartFiles: why,
	}, nil
}

// chartFiles rebuilds a chart's files from Helm's record of it: Chart.yaml
// from its metadata, values.yaml from its default values, the schema, the
// templates and the other files. It returns why not instead when the
// chart has dependencies (Helm's record keeps no subcharts, so the chart
// would render without them) or a file that is not UTF-8 text (a
// deployment's record keeps files as text).
func chartFiles(c *hchart.Chart) (map[string]string, string) {
	if deps := c.Metadata.Dependencies; len(deps) > 0 {
		names := make([]string, len(deps))
		for i, d := range deps {
			names[i] = d.Name
		}
		return nil, fmt.Sprintf("chart %s has dependencies (%s), and Helm's record keeps no subcharts", c.Metadata.Name, strings.Join(names, ", "))
	}
	files := map[string]string{}
	md, err := yaml.Marshal(c.Metadata)
	if err != nil {
		return nil, fmt.Sprintf("chart %s: Chart.yaml: %v", c.Metadata.Name, err)
	}
	files["Chart.yaml"] = string(md)
	if c.Values != nil {
		v, err := yaml.Marshal(c.Values)
		if err != nil {
			return nil, fmt.Sprintf("chart %s: values.yaml: %v", c.Metadata.Name, err)
		}
		files["values.yaml"] = string(v)
	}
	if len(c.Schema) > 0 {
		files["values.schema.json"] = string(c.Schema)
	}
	for _, f := range slices.Concat(c.Templates, c.Files) {
		if f == nil {
			continue
		}
		if !utf8.Valid(f.Data) {
			return nil, fmt.Sprintf("chart %s: %s is not UTF-8 text", c.Metadata.Name, f.Name)
		}
		files[f.Name] = string(f.Data)
	}
	return files, ""
}

// decode decodes a Helm record Secret's data.release.
func decode(s *unstructured.Unstructured) (*hrelease.Release, error) {
	enc, _, _ := unstructured.NestedString(s.Object, "data", "release")
	if enc == "" {
		return nil, fmt.Errorf("no data.release: %w", derrors.InvalidArgument)
	}
	// The Secret's own base64, then Helm's.
	outer, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("data.release is not base64: %v: %w", err, derrors.InvalidArgument)
	}
	b, err := base64.StdEncoding.DecodeString(string(outer))
	if err != nil {
		return nil, fmt.Errorf("release is not base64: %v: %w", err, derrors.InvalidArgument)
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("release is not gzip: %v: %w", err, derrors.InvalidArgument)
		}
		b, err = io.ReadAll(io.LimitReader(zr, maxRecord+1))
		if err != nil {
			return nil, fmt.Errorf("decompressing release: %v: %w", err, derrors.InvalidArgument)
		}
		if len(b) > maxRecord {
			return nil, fmt.Errorf("release is larger than %d bytes decompressed: %w", maxRecord, derrors.LimitExceeded)
		}
	}
	var rel hrelease.Release
	if err := json.Unmarshal(b, &rel); err != nil {
		return nil, fmt.Errorf("release is not Helm's JSON: %v: %w", err, derrors.InvalidArgument)
	}
	return &rel, nil
}

// Objects splits a Helm manifest into objects, skipping empty documents.
// Integers stay integers, as Kubernetes' unstructured objects hold them.
func Objects(manifest string) ([]map[string]any, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var out []map[string]any
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %v: %w", i, err, derrors.InvalidArgument)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %v: %w", i, err, derrors.InvalidArgument)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d is not a Kubernetes object: %v: %w", i, err, derrors.InvalidArgument)
		}
		out = append(out, u.Object)
	}
}

// DeleteRecords deletes the Secrets that hold a release's Helm records
// (dm import helm --delete-helm-record). One that is gone already is not
// an error.
func DeleteRecords(ctx context.Context, client dynamic.Interface, namespace string, names []string) error {
	for _, n := range names {
		err := client.Resource(secretsGVR).Namespace(namespace).Delete(ctx, n, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Helm record %s/%s: %w", namespace, n, err)
		}
	}
	return nil
}
