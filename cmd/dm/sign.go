package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigproxy"
)

// verifyFlags are the verification policy of in-process registries.
type verifyFlags struct{ signature.PolicyFiles }

func addVerifyFlags(pf *pflag.FlagSet, v *verifyFlags) {
	pf.StringArrayVar(&v.Keys, "verify-key", nil, "verify versions' signatures with the public key in `FILE` (PEM, ECDSA P-256: openssl's or cosign's; repeatable)")
	pf.StringArrayVar(&v.Identities, "verify-identity", nil, "trust keyless signatures of `ISSUER=SUBJECT-REGEXP` (OIDC issuer and certificate subject, regular expressions matched whole; repeatable; needs --trusted-root)")
	pf.StringVar(&v.TrustedRoot, "trusted-root", "", "Sigstore trusted_root.json `FILE` keyless signatures chain to (verification is offline)")
	pf.BoolVar(&v.Required, "require-signature", false, "refuse versions without a signature (with --verify-key or --verify-identity)")
}

// set reports whether any verification flag is given.
func (v *verifyFlags) set() bool { return v.Set() }

// config builds the policy of the flags; nil when none is given.
func (v *verifyFlags) config() (*signature.PolicyConfig, error) {
	c, err := v.Config()
	if err != nil {
		return nil, &usageError{err}
	}
	return c, nil
}

// signFlags are dm sign's flags.
type signFlags struct {
	key, identityToken, fulcioURL, rekorURL, output string
}

// newSignCommand is dm sign.
func newSignCommand(g *globals, p *printer) *cobra.Command {
	var f signFlags
	cmd := &cobra.Command{
		Use:               "sign REF (--key FILE | --identity-token FILE)",
		ValidArgsFunction: completeRef(g),
		Short:             "Sign the version REF resolves to, storing a Sigstore bundle where the version lives",
		Long: `Sign the version REF resolves to over its content digest (and, in an OCI registry, its
manifest digest) as a Sigstore bundle: with a key pair (--key: an ECDSA P-256 private key
from openssl, or cosign's encrypted key with its password in $COSIGN_PASSWORD), or
keylessly (--identity-token: an OIDC token, such as GitHub Actions' with audience
sigstore, for which Fulcio certifies an ephemeral key; the signature is logged in Rekor).

The bundle is stored where the version lives: in an OCI registry as a referrer of the
version's manifest (the sha256-<hex> tag where the registry has no referrers API); in a
directory (--registry-dir) as ` + index.SignatureFile + ` in the version directory, which is
not part of the version's content. A GitHub registry's signature is that file in its
repository: sign in a checkout (--registry-dir PREFIX=.) and commit it. --output writes
the bundle to a file instead.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdSign(cmd.Context(), g, p, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.key, "key", "", "sign with the private key in `FILE` (PEM ECDSA P-256, or a cosign key)")
	fl.StringVar(&f.identityToken, "identity-token", "", "sign keylessly with the OIDC identity token in `FILE`")
	fl.StringVar(&f.fulcioURL, "fulcio-url", signature.DefaultFulcioURL, "Fulcio `URL` that certifies keyless signatures")
	fl.StringVar(&f.rekorURL, "rekor-url", "", "Rekor `URL` that logs the signature (keyless default "+signature.DefaultRekorURL+"; a key's signature is logged only when given)")
	fl.StringVar(&f.output, "output-file", "", "write the bundle to `FILE` instead of storing it with the version")
	return cmd
}

// signResult is what dm sign prints with -o json.
type signResult struct {
	Ref            string `json:"ref"`
	Digest         string `json:"digest"`
	ManifestDigest string `json:"manifest_digest,omitempty"`
	Signer         string `json:"signer"`
	// Stored is where the bundle is: a file, or REPOSITORY@DIGEST of
	// its referrer.
	Stored string `json:"stored"`
}

func cmdSign(ctx context.Context, g *globals, p *printer, ref string, f signFlags) error {
	if (f.key == "") == (f.identityToken == "") {
		return &usageError{errors.New("give --key FILE or --identity-token FILE")}
	}
	if g.server != "" || g.getenv("DM_SERVER") != "" {
		return &usageError{errors.New("dm sign reads the registry in-process (--registry-dir, --registry-oci); not with --server")}
	}
	req := sigproxy.SignRequest{FulcioURL: f.fulcioURL, RekorURL: f.rekorURL}
	if f.key != "" {
		b, err := os.ReadFile(f.key)
		if err != nil {
			return &usageError{fmt.Errorf("--key: %w", err)}
		}
		req.Key = b
		if pw, ok := os.LookupEnv("COSIGN_PASSWORD"); ok {
			req.Password = []byte(pw)
		}
	} else {
		b, err := os.ReadFile(f.identityToken)
		if err != nil {
			return &usageError{fmt.Errorf("--identity-token: %w", err)}
		}
		req.IDToken = strings.TrimSpace(string(b))
		if req.IDToken == "" {
			return &usageError{fmt.Errorf("--identity-token %s is empty", f.identityToken)}
		}
	}

	g.signing = true // resolve what is to be signed without verifying it
	b, err := g.local()
	if err != nil {
		return err
	}
	b.need(ref)
	svc, err := b.service(ctx)
	if err != nil {
		return err
	}
	def, err := svc.DefaultRegistryFor(g.registry)
	if err != nil {
		return err
	}
	rs, err := svc.Resolver().ResolveIn(ctx, ref, def)
	if err != nil {
		return err
	}
	if rs.Note != "" {
		fmt.Fprintln(g.stderr, "dm:", rs.Note)
	}
	reg := rs.Registry
	var src *oci.Source
	if c, ok := reg.Source.(*fetch.Cache); ok {
		src, _ = c.Unwrap().(*oci.Source)
	}
	md := ""
	if src != nil {
		d, ok := src.ManifestDigestAt(rs.Version.Path)
		if !ok {
			return fmt.Errorf("%s: the OCI registry no longer lists it: %w", rs.Resolved(), derrors.NotFound)
		}
		md = d
	}
	subj := signature.SubjectOf(rs.Template, rs.Version, md)
	bundle, signer, err := g.sigstore().Sign(ctx, subj, req)
	if err != nil {
		if errors.Is(err, derrors.InvalidArgument) {
			return &usageError{fmt.Errorf("%s: %w", rs.Resolved(), err)}
		}
		return fmt.Errorf("%s: %w", rs.Resolved(), err)
	}
	out := signResult{Ref: rs.Resolved(), Digest: rs.Version.Digest, ManifestDigest: md, Signer: signer}
	switch {
	case f.output != "":
		if err := fetch.WriteFileAtomic(f.output, bundle); err != nil {
			return err
		}
		out.Stored = f.output
	case src != nil:
		spec, ok := b.spec(reg.Name)
		if !ok || spec.OCI == nil {
			return fmt.Errorf("%s: no OCI registry configured for %s", rs.Resolved(), reg.Name)
		}
		pusher, err := api.NewPusher(*spec.OCI, nil)
		if err != nil {
			return err
		}
		digest, err := pusher.PushSignature(ctx, rs.Template.Collection, rs.Template.Name, rs.Version.Name, md, bundle)
		if err != nil {
			return fmt.Errorf("%s: storing the signature: %w", rs.Resolved(), err)
		}
		repo, _ := pusher.Repository(rs.Template.Collection, rs.Template.Name)
		out.Stored = pusher.Location().Host + "/" + repo + "@" + digest
	case reg.Kind == api.KindLocal:
		file := filepath.Join(reg.Location, filepath.FromSlash(rs.Version.Path), index.SignatureFile)
		if err := fetch.WriteFileAtomic(file, bundle); err != nil {
			return fmt.Errorf("%s: storing the signature: %w", rs.Resolved(), err)
		}
		out.Stored = file
	default:
		return &usageError{fmt.Errorf("%s: a %s registry's signature is the file %s/%s of its repository: sign in a checkout (--registry-dir %s=DIR) and commit it, or write it with --output-file",
			rs.Resolved(), reg.Kind, rs.Version.Path, index.SignatureFile, reg.Name)}
	}
	if ok, err := p.structured(out); ok || err != nil {
		return err
	}
	fmt.Fprintf(p.w, "signed %s@%s (%s)\n%s\n", out.Ref, out.Digest, signer, out.Stored)
	return nil
}
