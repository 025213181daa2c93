package kubereg

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LegacyIssuer is the issuer of the ServiceAccount tokens Kubernetes kept
// in Secrets before bound tokens: they name no audience.
const LegacyIssuer = "kubernetes/serviceaccount"

// Reasons a token is refused without a review.
const (
	refuseMalformed = "malformed"
	refuseIssuer    = "issuer"
	refuseAudience  = "audience"
	refuseExpired   = "expired"
	refuseOpaque    = "opaque"
)

// clockLeeway is how far past its expiry (or before its start) a token is
// still sent for review: the apiserver's clock, not registryd's, decides.
const clockLeeway = time.Minute

// tokenCheck decides, without asking the apiserver, whether a bearer
// token is worth a TokenReview: a ServiceAccount token is a JWT, whose
// header and claims can be read (not verified: only the apiserver can)
// to tell one the apiserver could never accept: not a well-formed JWT, of
// another issuer or audience, expired. It only ever refuses: a token it
// lets through is still reviewed.
type tokenCheck struct {
	// issuers and audiences are those of the flags and of registryd's own
	// token; opaque lets tokens that are not JWTs be reviewed.
	issuers, audiences []string
	opaque             bool
	// discover asks the apiserver for its service-account issuer; nil
	// asks nothing.
	discover func(context.Context) (string, error)
	log      *slog.Logger

	mu sync.Mutex
	// discovered is the apiserver's issuer once read; next is when to
	// try again after a failure; asking reports a discovery under way.
	discovered string
	next       time.Time
	asking     bool
}

// discoverRetry is how long after a failed discovery the next is tried.
const discoverRetry = 30 * time.Second

// jwtClaims are the claims tokenCheck reads.
type jwtClaims struct {
	Issuer    string   `json:"iss"`
	Audience  audience `json:"aud"`
	Expiry    *float64 `json:"exp"`
	NotBefore *float64 `json:"nbf"`
}

// audience is a JWT's aud: one string or a list of them (RFC 7519 4.1.3).
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		var l []string
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		*a = l
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*a = audience{s}
	return nil
}

// looksLikeJWT reports whether token claims to be a JWT (a JWS in compact
// serialization): three dot-separated parts, the first a base64url JSON
// object ("eyJ" is `{"`). Others are opaque tokens (bootstrap tokens,
// static tokens, a cloud's webhook tokens).
func looksLikeJWT(token string) bool {
	return strings.Count(token, ".") == 2 && strings.HasPrefix(token, "eyJ")
}

// parseJWT decodes the header and claims of a compact JWS without
// verifying its signature; ok is false when it is not well formed.
func parseJWT(token string) (c jwtClaims, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] == "" {
		return c, false
	}
	dec := func(s string, v any) bool {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil {
			return false
		}
		return json.Unmarshal(b, v) == nil
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if !dec(parts[0], &h) || h.Alg == "" || strings.EqualFold(h.Alg, "none") {
		return c, false
	}
	if !dec(parts[1], &c) {
		return c, false
	}
	return c, true
}

// refuse returns why token is refused without a review, or "" to review
// it. It may start a discovery of the apiserver's issuer, never waits for
// one.
func (k *tokenCheck) refuse(token string, now time.Time) string {
	if !looksLikeJWT(token) {
		if k.opaque {
			return ""
		}
		return refuseOpaque
	}
	c, ok := parseJWT(token)
	if !ok {
		return refuseMalformed
	}
	if c.Issuer == LegacyIssuer {
		// A legacy token names no audience and has no expiry.
		return ""
	}
	if issuers := k.expectedIssuers(); len(issuers) > 0 && !slices.Contains(issuers, c.Issuer) {
		return refuseIssuer
	}
	if len(k.audiences) > 0 && !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(k.audiences, a) }) {
		return refuseAudience
	}
	unix := float64(now.Unix())
	if c.Expiry != nil && *c.Expiry+clockLeeway.Seconds() < unix || c.NotBefore != nil && *c.NotBefore-clockLeeway.Seconds() > unix {
		return refuseExpired
	}
	return ""
}

// expectedIssuers returns the issuers a JWT may name: the flags', registryd's
// own token's and the apiserver's, once discovered. Empty means any: until
// the apiserver has said, no issuer is refused.
func (k *tokenCheck) expectedIssuers() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.discovered == "" && k.discover != nil && !k.asking && time.Now().After(k.next) {
		k.asking = true
		go k.learn(context.Background())
	}
	if k.discovered == "" || slices.Contains(k.issuers, k.discovered) {
		return k.issuers
	}
	return append(slices.Clip(k.issuers), k.discovered)
}

// learn asks the apiserver for its service-account issuer (its OIDC
// discovery document, /.well-known/openid-configuration).
func (k *tokenCheck) learn(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	iss, err := k.discover(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asking = false
	if err != nil {
		k.next = time.Now().Add(discoverRetry)
		k.log.Warn("cannot read the apiserver's service-account issuer; bearer tokens' issuers are not checked before their review meanwhile", "err", err, "retry_in", discoverRetry)
		return err
	}
	k.discovered = iss
	k.log.Info("bearer tokens of other issuers are refused without a review", "issuer", iss, "also", k.issuers, "audiences", k.audiences)
	return nil
}

// Learn reads the apiserver's service-account issuer now, so that the
// first requests' tokens are checked against it; without it the issuer is
// read at the first token, in the background.
func (a *Authorizer) Learn(ctx context.Context) error {
	if a.check.discover == nil {
		return nil
	}
	a.check.mu.Lock()
	a.check.asking = true
	a.check.mu.Unlock()
	return a.check.learn(ctx)
}

// discoverIssuer reads the issuer of the apiserver's OIDC discovery
// document (the ServiceAccountIssuerDiscovery feature: every apiserver
// since 1.21 serves it; reading it needs get on the non-resource URL
// /.well-known/openid-configuration).
func discoverIssuer(c kubernetes.Interface) func(context.Context) (string, error) {
	rc := c.Discovery().RESTClient()
	if rc == nil {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		b, err := rc.Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
		if err != nil {
			return "", fmt.Errorf("GET /.well-known/openid-configuration: %w", err)
		}
		var doc struct {
			Issuer string `json:"issuer"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.Issuer == "" {
			return "", errors.New("GET /.well-known/openid-configuration: no issuer in the answer")
		}
		return doc.Issuer, nil
	}
}

// ownClaims returns the claims of the token cfg authenticates with (in a
// pod, its projected ServiceAccount token, whose issuer and audiences are
// the apiserver's own), if it has one.
func ownClaims(cfg *rest.Config) (jwtClaims, bool) {
	tok := cfg.BearerToken
	if tok == "" && cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return jwtClaims{}, false
		}
		tok = strings.TrimSpace(string(b))
	}
	if !looksLikeJWT(tok) {
		return jwtClaims{}, false
	}
	c, ok := parseJWT(tok)
	return c, ok && c.Issuer != "" && c.Issuer != LegacyIssuer
}
