package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/openshift"
	"github.com/dmhq/dm/internal/expand/value"
)

// Bounds of the processing endpoints: they run other people's templates.
const (
	maxExpandBody   = 8 << 20
	expandTimeout   = 60 * time.Second
	maxTemplateBody = 4 << 20
)

// handleExpand serves POST /v1/expand. It takes only application/json: a
// type that a cross-site form or a text/plain fetch can send would let any
// web page have its visitors' browsers start expansions.
func (s *Server) handleExpand(w http.ResponseWriter, r *http.Request) {
	if !contentType(w, r, "POST /v1/expand", "application/json") {
		return
	}
	var req api.ExpandRequest
	release, err := s.decodeBody(w, r, maxExpandBody, &req)
	if err != nil {
		s.writeBodyError(w, r, err)
		return
	}
	defer release()
	req.Properties, _ = value.Numbers(req.Properties).(map[string]any)
	// Expansions run other people's code: only so many at once.
	wait := time.NewTimer(s.queueWait)
	select {
	case s.expansions <- struct{}{}:
		wait.Stop()
		defer func() { <-s.expansions }()
	case <-wait.C:
		w.Header().Set("Retry-After", "5")
		s.writeError(w, r, fmt.Errorf("%d expansions are running; try again later: %w", cap(s.expansions), derrors.Unavailable))
		return
	case <-r.Context().Done():
		wait.Stop()
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), expandTimeout)
	defer cancel()
	var res any
	if jx, ok := s.expander.(jsonExpander); ok {
		res, err = jx.ExpandJSON(ctx, &req)
	} else {
		res, err = s.expander.Expand(ctx, &req)
	}
	if err == nil {
		err = ctx.Err() // an engine that noticed the deadline late
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("expansion took longer than %s: %w", expandTimeout, derrors.LimitExceeded)
	}
	if err != nil && strings.Contains(err.Error(), expand.SkipSchemaHint) {
		err = apiWords{err}
	}
	s.answer(w, r, res, err)
}

// apiWords is an expansion's error as the JSON API says it: the request
// field that skips schema validation in place of dm's flag.
type apiWords struct{ err error }

func (e apiWords) Error() string {
	return strings.ReplaceAll(e.err.Error(), expand.SkipSchemaHint, expand.SkipSchemaHintAPI)
}

func (e apiWords) Unwrap() error { return e.err }

// handleProcessedTemplates serves POST /processedTemplates (seed 000): a
// Template in (JSON or YAML, parameter values set in it), the processed
// Template out, still a Template, with parameters generated, substituted
// and labels applied.
func (s *Server) handleProcessedTemplates(w http.ResponseWriter, r *http.Request) {
	// JSON or YAML, never a type a cross-site form can send without a
	// preflight.
	if !contentType(w, r, "POST /processedTemplates", "application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml") {
		return
	}
	body, release, err := s.readBudgeted(w, r, maxTemplateBody)
	if err != nil {
		s.writeBodyError(w, r, err)
		return
	}
	defer release()
	if tp, ok := s.expander.(templateProcessor); ok {
		ctx, cancel := context.WithTimeout(r.Context(), expandTimeout)
		defer cancel()
		out, err := tp.ProcessTemplate(ctx, body)
		s.answer(w, r, out, err)
		return
	}
	out, err := openshift.ProcessRequest(body)
	s.answer(w, r, out, err)
}

// contentType answers 415 and reports false unless the request's media
// type is one of types.
func contentType(w http.ResponseWriter, r *http.Request, route string, types ...string) bool {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && slices.Contains(types, ct) {
		return true
	}
	writeJSON(w, http.StatusUnsupportedMediaType, api.Error{Error: fmt.Sprintf("%s takes Content-Type %s, not %q", route, strings.Join(types, " or "), derrors.Clip(r.Header.Get("Content-Type"), 100))})
	return false
}

// decodeBody decodes a JSON request body of at most max bytes into v,
// strictly: unknown fields and trailing data are errors, and numbers stay
// json.Number for the caller to type. The body's bytes stay reserved in
// the budget until release is called.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, max int64, v any) (release func(), err error) {
	b, release, err := s.readBudgeted(w, r, max)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		release()
		return nil, fmt.Errorf("request body: %v: %w", err, derrors.InvalidArgument)
	}
	if dec.More() {
		release()
		return nil, fmt.Errorf("request body: data after the JSON object: %w", derrors.InvalidArgument)
	}
	return release, nil
}

// writeBodyError answers a body that could not be read: 413 when it was
// too large.
func (s *Server) writeBodyError(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeJSON(w, http.StatusRequestEntityTooLarge, api.Error{Error: fmt.Sprintf("request body is over the %d-byte limit", tooBig.Limit)})
		return
	}
	if errors.Is(err, errBudget) {
		w.Header().Set("Retry-After", "1")
		s.writeError(w, r, err)
		return
	}
	if !errors.Is(err, derrors.InvalidArgument) {
		err = fmt.Errorf("reading the request body: %v: %w", err, derrors.InvalidArgument)
	}
	s.writeError(w, r, err)
}
