package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/derrors"
)

// maxResponse bounds an API answer the client reads.
const maxResponse = 64 << 20

// Client calls a registryd over HTTP. It implements Backend.
//
// A registryd serving a cluster's Registry objects answers a request for a
// namespace's registries only when it names the namespace and carries a
// Kubernetes bearer token whose holder may get those objects: Token and
// Namespace (or ForNamespace, per request) say so.
type Client struct {
	base string
	hc   *http.Client
	// Token, if set, returns the bearer token sent with every request
	// but the admin refresh (which sends the admin token); "" sends none.
	// It is called per request, so a rotated token file is read anew.
	Token func() string
	// Namespace is the namespace whose registries requests ask for, when
	// their context names none (ForNamespace); "" asks for none.
	Namespace string
}

type namespaceKey struct{}

// ForNamespace returns ctx asking a Client's requests made with it for
// the registries of namespace ns: dm-controller expands each instance
// for its own namespace.
func ForNamespace(ctx context.Context, ns string) context.Context {
	return context.WithValue(ctx, namespaceKey{}, ns)
}

// namespaceFor returns the namespace a request made with ctx asks for.
func (c *Client) namespaceFor(ctx context.Context) string {
	if ns, ok := ctx.Value(namespaceKey{}).(string); ok {
		return ns
	}
	return c.Namespace
}

var _ Backend = (*Client)(nil)

// NewClient returns a client of the registryd at baseURL, such as
// http://127.0.0.1:8080. hc may be nil for a client with a 30-second
// timeout.
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, derrors.Errorf(derrors.InvalidArgument, "server URL %q: want http(s)://host[:port]", baseURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), hc: hc}, nil
}

// HTTPError is an error answer of the server. It unwraps to the derrors
// sentinel that matches its status code, so errors.Is(err,
// derrors.NotFound) holds for a 404.
type HTTPError struct {
	Status  int
	Message string
	// Kind is the answer's kind, if it named one.
	Kind string
}

// Error returns the server's message.
func (e *HTTPError) Error() string { return e.Message }

// Unwrap returns the sentinel for the status code.
func (e *HTTPError) Unwrap() error {
	switch e.Status {
	case http.StatusNotFound:
		return derrors.NotFound
	case http.StatusBadRequest:
		return derrors.InvalidArgument
	case http.StatusConflict:
		return derrors.Ambiguous
	case http.StatusUnauthorized, http.StatusForbidden:
		return derrors.Unauthorized
	case http.StatusUnprocessableEntity:
		if e.Kind == derrors.WireKind(derrors.VerificationFailed) {
			return derrors.VerificationFailed
		}
		return derrors.LimitExceeded
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return derrors.Unavailable
	}
	return nil
}

// do sends a request and decodes a JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, header http.Header, out any) error {
	b, _, err := c.raw(ctx, method, path, q, header, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

func (c *Client) raw(ctx context.Context, method, path string, q url.Values, header http.Header, body []byte) ([]byte, http.Header, error) {
	if ns := c.namespaceFor(ctx); ns != "" {
		q2 := url.Values{}
		maps.Copy(q2, q)
		q2.Set("namespace", ns)
		q = q2
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != nil {
		if tok := c.Token(); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w: %w", method, path, err, derrors.Unavailable)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: reading the answer: %w: %w", method, path, err, derrors.Unavailable)
	}
	if resp.StatusCode/100 != 2 {
		var e Error
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("%s %s: %s", method, path, resp.Status)
		}
		return nil, nil, &HTTPError{Status: resp.StatusCode, Message: e.Error, Kind: e.Kind}
	}
	return b, resp.Header, nil
}

func values(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// Registries lists the server's registries.
func (c *Client) Registries(ctx context.Context) (*RegistryList, error) {
	var out RegistryList
	return &out, c.do(ctx, http.MethodGet, "/v1/registries", nil, nil, &out)
}

// IndexChanges waits, up to wait (whole seconds, within the client's
// timeout), until the registries' indexed state differs from the one
// whose token is since, and returns the state; with since empty it
// answers at once. GET /v1/index/changes.
func (c *Client) IndexChanges(ctx context.Context, since string, wait time.Duration) (*IndexChanges, error) {
	var out IndexChanges
	q := values("since", since, "wait", strconv.Itoa(int(wait/time.Second)))
	return &out, c.do(ctx, http.MethodGet, "/v1/index/changes", q, nil, &out)
}

// Registry describes one registry with its findings.
func (c *Client) Registry(ctx context.Context, name string) (*Registry, error) {
	var out Registry
	return &out, c.do(ctx, http.MethodGet, "/v1/registries/"+name, nil, nil, &out)
}

// Refresh asks the server to refresh a registry now, authenticating with
// the admin token, and returns the registry after the refresh.
func (c *Client) Refresh(ctx context.Context, name, token string) (*Registry, error) {
	var out Registry
	h := http.Header{"Authorization": {"Bearer " + token}}
	return &out, c.do(ctx, http.MethodPost, "/v1/registries/"+name+"/refresh", nil, h, &out)
}

// Collections lists collections of one registry, or of all.
func (c *Client) Collections(ctx context.Context, registry string) (*CollectionList, error) {
	var out CollectionList
	return &out, c.do(ctx, http.MethodGet, "/v1/collections", values("registry", registry), nil, &out)
}

// Templates lists templates.
func (c *Client) Templates(ctx context.Context, q TemplateQuery) (*TemplateList, error) {
	var out TemplateList
	return &out, c.do(ctx, http.MethodGet, "/v1/templates", values("registry", q.Registry, "collection", q.Collection, "q", q.Q), nil, &out)
}

// Versions returns a template and its versions.
func (c *Client) Versions(ctx context.Context, ref, registry string) (*Template, error) {
	var out Template
	return &out, c.do(ctx, http.MethodGet, "/v1/versions", values("ref", ref, "registry", registry), nil, &out)
}

// Template describes one version.
func (c *Client) Template(ctx context.Context, ref, registry string) (*TemplateVersion, error) {
	var out TemplateVersion
	if err := c.do(ctx, http.MethodGet, "/v1/template", values("ref", ref, "registry", registry), nil, &out); err != nil {
		return nil, err
	}
	// "example" in JSON is the example's test; the file name travels as
	// example_file.
	out.Example = out.ExampleFile
	return &out, nil
}

// TemplateInputs describes one version as Template does: registryd's
// description holds the lint findings it keeps by digest.
func (c *Client) TemplateInputs(ctx context.Context, ref, registry string) (*TemplateVersion, error) {
	return c.Template(ctx, ref, registry)
}

// Resolve resolves a reference.
func (c *Client) Resolve(ctx context.Context, ref, registry string) (*Resolution, error) {
	var out Resolution
	return &out, c.do(ctx, http.MethodGet, "/v1/resolve", values("ref", ref, "registry", registry), nil, &out)
}

// Search searches templates.
func (c *Client) Search(ctx context.Context, q, registry string) (*SearchResults, error) {
	var out SearchResults
	return &out, c.do(ctx, http.MethodGet, "/v1/search", values("q", q, "registry", registry), nil, &out)
}

// ReadFile reads one file of a resolved version.
func (c *Client) ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error) {
	b, _, err := c.raw(ctx, http.MethodGet, "/v1/file", values("ref", ref, "registry", registry, "path", path), nil, nil)
	return b, err
}

// IsStatus reports whether err is a server answer with the given status.
func IsStatus(err error, status int) bool {
	var se *HTTPError
	return errors.As(err, &se) && se.Status == status
}
