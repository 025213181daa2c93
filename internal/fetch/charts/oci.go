package charts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/dmhq/dm/internal/derrors"
)

// OCI downloads the chart at ref, oci://HOST/PATH:VERSION, through Helm's
// registry client (credentials from RegistryConfig, docker's config as
// fallback, or Credentials for the host). The version is required: a
// registry has no index to choose from.
func (f *Fetcher) OCI(ctx context.Context, ref string) (*Chart, error) {
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	rest, ok := strings.CutPrefix(ref, registry.OCIScheme+"://")
	if !ok {
		return nil, invalid(fmt.Errorf("chart reference %q: not oci://HOST/PATH:VERSION", ref))
	}
	host, _, _ := strings.Cut(rest, "/")
	slash := strings.LastIndex(rest, "/")
	colon := strings.LastIndex(rest, ":")
	if slash < 0 || colon < slash {
		return nil, invalid(fmt.Errorf("chart reference %q: no version (oci://HOST/PATH:VERSION)", ref))
	}
	scheme := "https"
	if f.PlainHTTP {
		scheme = "http"
	}
	if err := f.checkURL(&url.URL{Scheme: scheme, Host: host}); err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	hc := &http.Client{
		Transport: &guard{f: f, next: ctxTransport{ctx: ctx, next: f.transport()}},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return f.checkURL(req.URL)
		},
	}
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(hc), registry.ClientOptWriter(io.Discard)}
	if f.RegistryConfig != "" {
		opts = append(opts, registry.ClientOptCredentialsFile(f.RegistryConfig))
	}
	if f.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: registry client: %w", ref, err)
	}
	type answer struct {
		r   *registry.PullResult
		err error
	}
	// Helm's client takes no context: the transport above carries it, and
	// the pull runs aside so that a stalled one still returns.
	done := make(chan answer, 1)
	go func() {
		r, err := c.Pull(rest, registry.PullOptWithChart(true))
		done <- answer{r, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w: %w", ref, derrors.Unavailable, ctx.Err())
	}
	if a.err != nil {
		var le *LimitError
		if errors.As(a.err, &le) {
			return nil, &LimitError{URL: ref, Max: f.maxBytes()}
		}
		if errors.Is(a.err, derrors.Forbidden) {
			return nil, fmt.Errorf("%s: %w", ref, a.err)
		}
		kind := derrors.Unavailable
		if strings.Contains(a.err.Error(), "not found") {
			kind = derrors.NotFound
		}
		return nil, fmt.Errorf("%s: %w: %w", ref, kind, a.err)
	}
	data := a.r.Chart.Data
	d := digest(data)
	if want := strings.TrimPrefix(a.r.Chart.Digest, "sha256:"); want != "" && want != d {
		return nil, fmt.Errorf("%s: digest sha256:%s, but the manifest lists %s: %w", ref, d, a.r.Chart.Digest, derrors.InvalidArgument)
	}
	f.store(d, data)
	ch := &Chart{URL: ref, Digest: d, Data: data}
	if m := a.r.Chart.Meta; m != nil {
		ch.Name, ch.Version = m.Name, m.Version
	}
	return ch, nil
}

// ctxTransport gives every request of Helm's registry client the fetch's
// context, which that client does not pass on.
type ctxTransport struct {
	ctx  context.Context
	next http.RoundTripper
}

func (t ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.ctx.Err(); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(req.WithContext(t.ctx))
}

// RepositoryCredentials reads Helm's repositories file (helm repo add's
// repositories.yaml) into credentials by host, for Fetcher.Credentials.
func RepositoryCredentials(path string) (map[string]Credentials, error) {
	rf, err := repo.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("repositories file %s: %w", path, err)
	}
	out := map[string]Credentials{}
	for _, e := range rf.Repositories {
		if e.Username == "" && e.Password == "" {
			continue
		}
		u, err := url.Parse(e.URL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("repositories file %s: repository %s: URL %q: %w", path, e.Name, e.URL, derrors.InvalidArgument)
		}
		out[u.Host] = Credentials{Username: e.Username, Password: e.Password}
	}
	return out, nil
}
