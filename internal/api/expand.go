package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/resolve"
)

// ExpandRequest is the body of POST /v1/expand: a configuration with the
// files it imports, or a reference (or import path) with properties.
type ExpandRequest struct {
	// Config is a configuration as YAML or JSON text, or a kind: Template
	// document (then Properties are its parameters). Empty with a
	// ConfigName (an empty file) it is an empty configuration, which
	// expands to nothing as in DM.
	Config     string `json:"config,omitempty"`
	ConfigName string `json:"config_name,omitempty"`
	// Imports are the files the configuration imports, path -> content.
	Imports map[string]string `json:"imports,omitempty"`

	// Ref, instead of Config, is a template reference expanded as one
	// resource named Name with Properties.
	Ref        string         `json:"ref,omitempty"`
	Properties map[string]any `json:"properties,omitempty"`
	Name       string         `json:"name,omitempty"`

	// Deployment and Namespace reach templates as env.deployment and
	// env.namespace.
	Deployment string `json:"deployment,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	// Env adds keys to, or overrides keys of, every template's env
	// (project, project_number, current_time, username, or any other).
	Env map[string]string `json:"env,omitempty"`
	// Registry is the default registry for short references,
	// [host/]owner/repo[/collection]; the server's default when empty.
	Registry string `json:"registry,omitempty"`
	// Strict makes properties a schema does not define an error; they are
	// warnings (the answer's `warnings`) otherwise.
	Strict bool `json:"strict,omitempty"`
	// SkipSchemaValidation applies schemas' defaults without validating
	// properties; violations are warnings (Helm's --skip-schema-validation).
	SkipSchemaValidation bool `json:"skip_schema_validation,omitempty"`
	// Cluster, when deploying, is the cluster charts are rendered for
	// (their .Capabilities and lookup; expand.Request.Cluster). It is not
	// sent to a registryd (--server), whose renders stay offline: the
	// credentials it would need are the deployer's.
	Cluster *engine.Cluster `json:"-"`
}

// ExpandResult is the answer of POST /v1/expand.
type ExpandResult = expand.Result

// Expander expands configurations; Service and Client implement it.
type Expander interface {
	Expand(ctx context.Context, req *ExpandRequest) (*ExpandResult, error)
}

// Expand expands a configuration or a reference in-process.
func (s *Service) Expand(ctx context.Context, req *ExpandRequest) (*ExpandResult, error) {
	r, err := req.EngineRequest()
	if err != nil {
		return nil, err
	}
	return Relisted(ctx, s.resolver, func() (*ExpandResult, error) { return s.expander.Expand(ctx, r) })
}

// EngineRequest converts req into the engine's request, checking that it
// names either a configuration or a reference.
func (req *ExpandRequest) EngineRequest() (expand.Request, error) {
	isConfig := req.Config != "" || (req.ConfigName != "" && req.Ref == "")
	if isConfig == (req.Ref != "") {
		return expand.Request{}, fmt.Errorf("expand: give either config or ref: %w", derrors.InvalidArgument)
	}
	r := expand.Request{
		ConfigName:           req.ConfigName,
		Ref:                  req.Ref,
		Properties:           req.Properties,
		Name:                 req.Name,
		Deployment:           req.Deployment,
		Namespace:            req.Namespace,
		Strict:               req.Strict,
		SkipSchemaValidation: req.SkipSchemaValidation,
		Env:                  req.Env,
		Cluster:              req.Cluster,
	}
	if isConfig {
		r.Config = []byte(req.Config)
	}
	if len(req.Imports) > 0 {
		r.Imports = make(map[string][]byte, len(req.Imports))
		for p, c := range req.Imports {
			r.Imports[p] = []byte(c)
		}
	}
	if req.Registry != "" {
		def, err := resolve.ParseRegistry(req.Registry)
		if err != nil {
			return expand.Request{}, err
		}
		r.Registry = def
	}
	return r, nil
}

// Expand asks the server to expand a configuration or a reference.
func (c *Client) Expand(ctx context.Context, req *ExpandRequest) (*ExpandResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("expand: encoding the request: %w", err)
	}
	b, _, err := c.raw(ctx, http.MethodPost, "/v1/expand", nil, nil, body)
	if err != nil {
		return nil, err
	}
	out, err := DecodeExpandResult(b)
	if err != nil {
		return nil, fmt.Errorf("POST /v1/expand: decoding the answer: %w", err)
	}
	return out, nil
}

// DecodeExpandResult decodes an expansion from JSON, keeping integers
// int64 as the engine produces them.
func DecodeExpandResult(b []byte) (*ExpandResult, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out ExpandResult
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	for i := range out.Config.Resources {
		r := &out.Config.Resources[i]
		r.Properties, _ = value.Numbers(r.Properties).(map[string]any)
	}
	var walk func([]*expand.LayoutResource)
	walk = func(rs []*expand.LayoutResource) {
		for _, r := range rs {
			r.Properties, _ = value.Numbers(r.Properties).(map[string]any)
			walk(r.Resources)
		}
	}
	walk(out.Layout.Resources)
	return &out, nil
}
