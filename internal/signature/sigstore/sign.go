package sigstore

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/dmhq/dm/internal/signature"
)

// SignOptions say how to sign: with Key, or keylessly with IDToken.
type SignOptions struct {
	// Key signs key-based. The bundle names it by KeyID and holds no
	// certificate; with RekorURL set it is also logged in Rekor.
	Key *ecdsa.PrivateKey
	// IDToken is an OIDC identity token (GitHub Actions' ACTIONS_ID_TOKEN
	// with audience sigstore, for one) for which Fulcio issues a
	// short-lived certificate to an ephemeral key.
	IDToken string
	// FulcioURL and RekorURL are the Sigstore instance keyless signing
	// uses (signature.DefaultFulcioURL and DefaultRekorURL when empty). A key-based
	// signature is logged only when RekorURL is set.
	FulcioURL, RekorURL string
	// Transport, if set, carries the requests to Fulcio.
	Transport http.RoundTripper
	// Timeout bounds each request to Fulcio and Rekor (30s when zero).
	Timeout time.Duration
}

// Sign signs s and returns the Sigstore bundle as JSON.
func Sign(ctx context.Context, s signature.Subject, opts SignOptions) ([]byte, error) {
	payload, err := signature.Statement(s)
	if err != nil {
		return nil, err
	}
	content := &sign.DSSEData{Data: payload, PayloadType: signature.PayloadType}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	bo := sign.BundleOptions{Context: ctx}
	var kp sign.Keypair
	switch {
	case opts.Key != nil && opts.IDToken != "":
		return nil, errors.New("sign with a key or with an identity token, not both")
	case opts.Key != nil:
		kp = keypair{key: opts.Key}
		if opts.RekorURL != "" {
			bo.TransparencyLogs = []sign.Transparency{sign.NewRekor(&sign.RekorOptions{BaseURL: opts.RekorURL, Timeout: timeout, Retries: 1})}
		}
	case opts.IDToken != "":
		ek, err := sign.NewEphemeralKeypair(nil)
		if err != nil {
			return nil, err
		}
		kp = ek
		fulcio, rekor := or(opts.FulcioURL, signature.DefaultFulcioURL), or(opts.RekorURL, signature.DefaultRekorURL)
		bo.CertificateProvider = sign.NewFulcio(&sign.FulcioOptions{BaseURL: fulcio, Timeout: timeout, Retries: 1, Transport: opts.Transport})
		bo.CertificateProviderOptions = &sign.CertificateProviderOptions{IDToken: strings.TrimSpace(opts.IDToken)}
		bo.TransparencyLogs = []sign.Transparency{sign.NewRekor(&sign.RekorOptions{BaseURL: rekor, Timeout: timeout, Retries: 1})}
	default:
		return nil, errors.New("nothing to sign with: give a key or an identity token")
	}
	b, err := sign.Bundle(content, kp, bo)
	if err != nil {
		return nil, fmt.Errorf("signing %s: %w", s.Name(), err)
	}
	out, err := protojson.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("signing %s: encoding the bundle: %w", s.Name(), err)
	}
	return out, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
