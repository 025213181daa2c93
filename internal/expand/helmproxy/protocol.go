// Package helmproxy renders Helm charts for a program that does not link
// Helm: it runs the dm-helm program (cmd/dm-helm) as a child process and
// talks to it over a small protocol on the child's stdin and stdout.
//
// Linking Helm's renderer costs every command its package initialisation
// (chartutil builds client-go's scheme, the OCI client more), about a
// tenth of a second of CPU. dm's commands mostly never meet a chart, so
// dm attaches Engine, which starts dm-helm on the first chart and keeps it
// for the rest of the command; Close ends it.
//
// The package imports no Helm library: only the engine table's types and
// the protocol. The protocol is a sequence of frames, each a 4-byte
// big-endian length and a JSON document: a Request from dm, then a
// Response from dm-helm, one at a time.
package helmproxy

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// Operations of a Request.
const (
	// OpRender renders a chart: Request.Render.
	OpRender = "render"
	// OpFetch downloads a chart: Request.Fetch.
	OpFetch = "fetch"
	// OpLint runs Helm's lint rules on a chart: Request.Lint.
	OpLint = "lint"
)

// Request is one job for dm-helm.
type Request struct {
	Op     string         `json:"op"`
	Render *RenderRequest `json:"render,omitempty"`
	Fetch  *FetchRequest  `json:"fetch,omitempty"`
	Lint   *LintRequest   `json:"lint,omitempty"`
}

// LintRequest runs Helm's lint rules on the chart whose Chart.yaml is
// File, one of Files (the version directory).
type LintRequest struct {
	File  string            `json:"file"`
	Files map[string][]byte `json:"files"`
	// KubeVersion is the Kubernetes version the rules check against
	// (empty: Helm's offline default).
	KubeVersion string `json:"kube_version,omitempty"`
}

// RenderRequest renders the chart whose Chart.yaml is File, as
// `helm template NAME CHART -n NAMESPACE` with Properties as the values.
type RenderRequest struct {
	// File, Files, FilesKey, Properties, Env and Label are the
	// engine.Invocation's (Env's name is the release name, its namespace
	// the release namespace).
	File       string            `json:"file"`
	Files      map[string][]byte `json:"files"`
	FilesKey   string            `json:"files_key,omitempty"`
	Properties map[string]any    `json:"properties,omitempty"`
	Env        map[string]any    `json:"env,omitempty"`
	Label      string            `json:"label,omitempty"`
	// KubeVersion is .Capabilities.KubeVersion (empty: Helm's offline
	// default); APIVersions are added to its API versions.
	KubeVersion string   `json:"kube_version,omitempty"`
	APIVersions []string `json:"api_versions,omitempty"`
	// Cluster, when set, is the cluster the chart is deployed to: its
	// .Capabilities (version and API versions, from discovery) replace
	// KubeVersion and APIVersions, and lookup reads it, as under helm
	// install.
	Cluster *Cluster `json:"cluster,omitempty"`
}

// Cluster names the user's cluster by their kubeconfig: dm-helm, the
// user's own process, reads it with the user's credentials, as dm does.
type Cluster struct {
	// Kubeconfig is the kubeconfig file; empty follows $KUBECONFIG, else
	// ~/.kube/config, as kubectl.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context; empty is its current one.
	Context string `json:"context,omitempty"`
}

// FetchRequest downloads a chart from a chart repository, a URL or an OCI
// registry; only AllowHosts are reached.
type FetchRequest struct {
	// Exactly one of URL (a .tgz), OCI (oci://HOST/PATH:VERSION) or Repo
	// (a repository's URL, with Chart and Version, a semver constraint).
	URL     string `json:"url,omitempty"`
	OCI     string `json:"oci,omitempty"`
	Repo    string `json:"repo,omitempty"`
	Chart   string `json:"chart,omitempty"`
	Version string `json:"version,omitempty"`
	// AllowHosts are the hosts (host or host:port) that may be reached.
	AllowHosts []string `json:"allow_hosts"`
	// CacheDir keeps downloads by digest; empty keeps none.
	CacheDir string `json:"cache_dir,omitempty"`
	// RepositoryConfig is Helm's repositories.yaml (credentials by
	// repository); RegistryConfig its OCI registry credentials. Empty
	// uses Helm's default places.
	RepositoryConfig string `json:"repository_config,omitempty"`
	RegistryConfig   string `json:"registry_config,omitempty"`
	// PlainHTTP reaches OCI registries over http (local ones).
	PlainHTTP bool `json:"plain_http,omitempty"`
}

// Response is dm-helm's answer: Output for a render, Files (the chart's,
// unpacked, relative to its directory) and Chart for a fetch, Findings
// for a lint, or Err.
type Response struct {
	Output   *engine.Output    `json:"output,omitempty"`
	Findings []engine.Finding  `json:"findings,omitempty"`
	Files    map[string][]byte `json:"files,omitempty"`
	Chart    *FetchedChart     `json:"chart,omitempty"`
	Err      *WireError        `json:"error,omitempty"`
}

// FetchedChart names a downloaded chart.
type FetchedChart struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	URL     string `json:"url"`
	Digest  string `json:"digest"`
}

// WireError is an error across the pipe: derrors' wire form (message,
// kind, an engine.Located's file and line) and an engine.LimitError's
// parts, so that dm reports a chart's error as it would have in-process.
type WireError struct {
	derrors.Wire
	// Limit is an engine.LimitError's field, limit and text.
	Limit *engine.LimitError `json:"limit,omitempty"`
}

// ToWire encodes err; nil gives nil.
func ToWire(err error) *WireError {
	if err == nil {
		return nil
	}
	w := &WireError{Wire: *derrors.ToWire(err)}
	var l *engine.Located
	if errors.As(err, &l) {
		w.Msg, w.File, w.Line = l.Err.Error(), l.File, l.Line
	}
	w.Limit = engine.WireLimit(err)
	return w
}

// Err decodes w; nil gives nil.
func (w *WireError) Err() error {
	if w == nil {
		return nil
	}
	err := w.Cause()
	if w.Limit != nil && w.Limit.Error() == w.Msg {
		err = w.Limit
	}
	if w.File != "" {
		err = engine.At(w.File, w.Line, err)
	}
	return err
}

// WriteFrame writes v as one frame and flushes w.
func WriteFrame(w *bufio.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a frame: %w", err)
	}
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(body)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	return w.Flush()
}

// ReadFrame reads one frame of at most max bytes into v. A frame over max
// is an error naming field, the limit that sets max; its bytes are not
// read.
func ReadFrame(r io.Reader, max int, field string, v any) error {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(h[:])
	if uint64(n) > uint64(max) {
		return engine.Limit(field, max, "a dm-helm message of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("a dm-helm message is not JSON: %w", err)
	}
	return nil
}
