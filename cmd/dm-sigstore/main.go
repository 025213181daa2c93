// dm-sigstore verifies and makes the Sigstore signatures of template
// versions for dm, which links no Sigstore library (package
// internal/signature/sigproxy): dm starts it on the first signature a
// command verifies or makes. It reads one JSON request a line on its
// standard input and answers each with one line on its standard output,
// until its input ends.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigproxy"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "%s is started by dm: it verifies and makes template versions' signatures over its standard input and output\n", sigproxy.Program)
		os.Exit(2)
	}
	if err := serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", sigproxy.Program, err)
		os.Exit(1)
	}
}

// serve answers requests from in on out until in ends.
func serve(ctx context.Context, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	var checker sigstore.Checker
	for {
		req, err := sigproxy.ReadRequest(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp := answer(ctx, &checker, req)
		if err := sigproxy.WriteResponse(w, resp); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

func answer(ctx context.Context, checker *sigstore.Checker, req *sigproxy.Request) (resp *sigproxy.Response) {
	defer func() {
		if p := recover(); p != nil {
			resp = &sigproxy.Response{Err: derrors.ToWire(fmt.Errorf("%s: internal error: %v", sigproxy.Program, p))}
		}
	}()
	switch req.Op {
	case "check":
		if req.Policy == nil {
			return &sigproxy.Response{Err: derrors.ToWire(derrors.Errorf(derrors.InvalidArgument, "check without a policy"))}
		}
		res, err := checker.Check(ctx, req.Policy, req.Subject, req.Bundles)
		var ve *signature.Error
		if errors.As(err, &ve) {
			return &sigproxy.Response{Refused: ve}
		}
		if err != nil {
			return &sigproxy.Response{Err: derrors.ToWire(err)}
		}
		return &sigproxy.Response{Result: res}
	case "sign":
		if req.Sign == nil {
			return &sigproxy.Response{Err: derrors.ToWire(derrors.Errorf(derrors.InvalidArgument, "sign without a key or token"))}
		}
		opts := sigstore.SignOptions{IDToken: req.Sign.IDToken, FulcioURL: req.Sign.FulcioURL, RekorURL: req.Sign.RekorURL}
		signer := ""
		if len(req.Sign.Key) > 0 {
			k, err := sigstore.ParsePrivateKey(req.Sign.Key, func() ([]byte, error) {
				if req.Sign.Password == nil {
					return nil, errors.New("the key is encrypted: set COSIGN_PASSWORD")
				}
				return req.Sign.Password, nil
			})
			if err != nil {
				return &sigproxy.Response{Err: derrors.ToWire(derrors.Errorf(derrors.InvalidArgument, "--key: %v", err))}
			}
			opts.Key = k
			signer = "key " + signature.KeyID(&k.PublicKey)
		} else {
			signer = "keyless (" + req.Sign.FulcioURL + ")"
		}
		b, err := sigstore.Sign(ctx, req.Subject, opts)
		if err != nil {
			return &sigproxy.Response{Err: derrors.ToWire(err)}
		}
		return &sigproxy.Response{Bundle: b, Signer: signer}
	}
	return &sigproxy.Response{Err: derrors.ToWire(derrors.Errorf(derrors.InvalidArgument, "unknown op %q", req.Op))}
}
