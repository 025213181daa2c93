package main

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy/kube"
)

// serverClient returns the client of the registryd at server. A registryd
// that serves a cluster's Registry objects shows a namespace's registries
// only to a caller that names the namespace and proves, with a Kubernetes
// bearer token, that it may get them: dm sends --server-token (or
// DM_SERVER_TOKEN), else the token of its kubeconfig's current context,
// and -n (else the context's namespace).
func (g *globals) serverClient(server string) (*api.Client, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	token := g.serverToken
	if token == "" {
		token = g.getenv("DM_SERVER_TOKEN")
	}
	ns := g.kube.namespace
	cfg, cfgNS := g.kubeconfigAuth()
	if ns == "" {
		ns = cfgNS
	}
	if token == "" && cfg != nil && tokenSafe(server) {
		// client-go's own wrappers read the token, its file or its exec
		// plugin; the config holds nothing but that, so no password, no
		// client identity and no impersonation reaches the server.
		rt, err := rest.HTTPWrappersForConfig(cfg, http.DefaultTransport)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig credentials for --server: %w", err)
		}
		hc.Transport = rt
	}
	c, err := api.NewClient(server, hc)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--server: %w", err)}
	}
	if token != "" {
		c.Token = func() string { return token }
	}
	c.Namespace = ns
	return c, nil
}

// kubeconfigAuth returns the bearer-token credentials of the kubeconfig's
// current context (nil when it has none, or there is no kubeconfig) and
// its namespace.
func (g *globals) kubeconfigAuth() (*rest.Config, string) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kube.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.kube.context})
	ns, _, err := cc.Namespace()
	if err != nil {
		ns = ""
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, ns
	}
	return kube.BearerAuth(rc), ns
}

// tokenSafe reports whether a kubeconfig's token may go to server: over
// HTTPS, or to a loopback address (kubectl port-forward). Over plain HTTP
// elsewhere it could be read on the way; --server-token sends one anyway.
func tokenSafe(server string) bool {
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
