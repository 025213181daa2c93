package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
	"github.com/dmhq/dm/internal/resolve"
)

// newPushCommand is dm push.
func newPushCommand(g *globals, p *printer) *cobra.Command {
	cmd := &cobra.Command{
		Use:               "push REF oci://HOST/PATH",
		ValidArgsFunction: completeRef(g),
		Short:             "Push the version REF resolves to to an OCI registry, as HOST/PATH/[COLLECTION/]TEMPLATE:VERSION",
		Long: `Push the version REF resolves to (from any registry dm reads) to the OCI repository
HOST/PATH/[COLLECTION/]TEMPLATE, tagged with its version, as one artifact: a manifest
of artifact type ` + artifact.ArtifactType + `, a config listing the files and one
reproducible tar+gzip layer, so the same version always has the same manifest digest.
Prints REPOSITORY:TAG@DIGEST. A tag that holds the version already is left alone; one
that holds other content is an error, never overwritten. Credentials come from
Docker's configuration (docker login, credential helpers); --plain-http for a
registry served over plain HTTP (loopback, in-cluster).`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdPush(cmd.Context(), g, p, args[0], args[1])
		},
	}
	return cmd
}

// newMirrorCommand is dm mirror.
func newMirrorCommand(g *globals, p *printer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror SOURCE oci://HOST/PATH",
		Short: "Push every version of registry SOURCE that OCI registry HOST/PATH lacks",
		Long: `Push every usable version of registry SOURCE ([github.com/]OWNER/REPO, HOST/OWNER/REPO,
oci://HOST/PATH, or the prefix of a --registry-dir directory) that the OCI registry lacks,
each as dm push pushes it, and list the templates in the index artifact HOST/PATH:dm-index
for registries without a catalog API. A second run pushes nothing and says so. A tag
holding other content than its source's version is never overwritten: it is named, the
other versions are pushed, and dm exits 1.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdMirror(cmd.Context(), g, p, args[0], args[1])
		},
	}
	return cmd
}

// pusher returns the pusher of target, reading credentials as dm reads
// registries: Docker's configuration of dm's environment.
func (g *globals) pusher(target string) (*oci.Pusher, error) {
	if !strings.HasPrefix(target, oci.Scheme) {
		return nil, &usageError{fmt.Errorf("target %q: want oci://HOST/PATH", target)}
	}
	p, err := api.NewPusher(api.OCISpec{URL: target, PlainHTTP: g.plainHTTP, DockerConfigDir: g.dockerConfigDir()}, nil)
	if err != nil {
		return nil, &usageError{err}
	}
	return p, nil
}

// dockerConfigDir is where Docker's configuration is: $DOCKER_CONFIG,
// else ~/.docker.
func (g *globals) dockerConfigDir() string {
	if d := g.getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	if h := g.getenv("HOME"); h != "" {
		return filepath.Join(h, ".docker")
	}
	return ""
}

// pushResult is what dm push prints with -o json.
type pushResult struct {
	Ref            string `json:"ref"`
	Repository     string `json:"repository"`
	Tag            string `json:"tag"`
	ManifestDigest string `json:"manifest_digest"`
	Digest         string `json:"digest"`
	Pushed         bool   `json:"pushed"`
}

func cmdPush(ctx context.Context, g *globals, p *printer, ref, target string) error {
	pusher, err := g.pusher(target)
	if err != nil {
		return err
	}
	b, err := g.backend()
	if err != nil {
		return err
	}
	tv, err := b.TemplateInputs(ctx, ref, g.registry)
	if err != nil {
		return err
	}
	if tv.Note != "" {
		fmt.Fprintln(g.stderr, "dm:", tv.Note)
	}
	meta, files, err := api.ReadVersion(ctx, b, tv, publishing(ctx, g, b, tv.Registry))
	if err != nil {
		return err
	}
	packed, err := artifact.Pack(meta, files)
	if err != nil {
		return fmt.Errorf("%s: %w", tv.Resolved, err)
	}
	if packed.Digest != tv.Digest {
		return derrors.Errorf(derrors.Conflict, "%s changed while it was read (listed %s, read %s): push again", tv.Resolved, tv.Digest, packed.Digest)
	}
	res, err := pusher.Push(ctx, packed, meta.Collection, meta.Name, meta.Version)
	if err != nil {
		return err
	}
	if _, err := pusher.AddToIndex(ctx, joinTemplate(meta.Collection, meta.Name)); err != nil {
		fmt.Fprintf(g.stderr, "dm: warning: %v (registries without a catalog API will not list %s)\n", err, meta.Name)
	}
	out := pushResult{Ref: tv.Resolved, Repository: res.Repository, Tag: res.Tag, ManifestDigest: res.ManifestDigest, Digest: packed.Digest, Pushed: res.Pushed}
	if ok, err := p.structured(out); ok {
		return err
	}
	if !res.Pushed {
		fmt.Fprintf(g.stderr, "dm: %s:%s holds %s already; nothing pushed\n", res.Repository, res.Tag, tv.Resolved)
	}
	_, err = fmt.Fprintln(p.w, res.Ref())
	return err
}

func joinTemplate(coll, name string) string {
	if coll == "" {
		return name
	}
	return coll + "/" + name
}

// publishing returns the PublishInfo of the registry named prefix, its
// time SOURCE_DATE_EPOCH's when the environment sets it (as
// reproducible builds do): never the clock's.
func publishing(ctx context.Context, g *globals, b api.Backend, prefix string) api.PublishInfo {
	var created time.Time
	if e := g.getenv("SOURCE_DATE_EPOCH"); e != "" {
		if n, err := strconv.ParseInt(e, 10, 64); err == nil {
			created = time.Unix(n, 0).UTC()
		}
	}
	return api.Publishing(ctx, b, prefix, created)
}

// mirrorResult is what dm mirror prints with -o json.
type mirrorResult struct {
	Source    string   `json:"source"`
	Target    string   `json:"target"`
	Pushed    []string `json:"pushed"`
	Present   int      `json:"present"`
	Conflicts []string `json:"conflicts,omitempty"`
	// Signatures counts the signatures stored as referrers.
	Signatures int `json:"signatures"`
}

func cmdMirror(ctx context.Context, g *globals, p *printer, sourceArg, target string) error {
	pusher, err := g.pusher(target)
	if err != nil {
		return err
	}
	prefix, err := registryPrefix(sourceArg)
	if err != nil {
		return &usageError{err}
	}
	if g.registry == "" {
		// SOURCE is read as --registry names a registry, unless a
		// --registry-dir or --registry-oci serves it.
		g.registry = sourceArg
	}
	b, err := g.backend()
	if err != nil {
		return err
	}
	cands, notes, err := api.MirrorCandidates(ctx, b, prefix, publishing(ctx, g, b, prefix))
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(g.stderr, "dm:", n)
	}
	prog := newProgress(g.stderr)
	out := mirrorResult{Source: prefix, Target: target, Pushed: []string{}}
	res, err := pusher.Mirror(ctx, cands, func(i, n int, s oci.MirrorStep) {
		switch {
		case s.Err != nil:
			prog.line("%s: %v", s.Candidate.Ref, s.Err)
		case s.Result.Pushed:
			out.Pushed = append(out.Pushed, s.Result.Ref())
			prog.line("pushed %s", s.Result.Ref())
		default:
			prog.status("[%d/%d] %s is there", i+1, n, s.Result.Repository+":"+s.Result.Tag)
		}
	})
	prog.done()
	var conflict *oci.MirrorConflictError
	if err != nil && !errors.As(err, &conflict) {
		return err
	}
	out.Present, out.Signatures = res.Present, res.Signatures
	for _, c := range res.Conflicts {
		out.Conflicts = append(out.Conflicts, c.Repository+":"+c.Tag)
	}
	if ok, perr := p.structured(out); ok {
		if perr != nil {
			return perr
		}
		return err
	}
	sigs := ""
	switch res.Signatures {
	case 0:
	case 1:
		sigs = "; stored 1 signature"
	default:
		sigs = fmt.Sprintf("; stored %d signatures", res.Signatures)
	}
	switch {
	case res.Pushed == 0 && len(res.Conflicts) == 0:
		fmt.Fprintf(p.w, "nothing to push: %s holds all %d versions of %s%s\n", target, res.Present, prefix, sigs)
	default:
		fmt.Fprintf(p.w, "pushed %d versions of %s to %s; %d were there already%s\n", res.Pushed, prefix, target, res.Present, sigs)
	}
	return err
}

// registryPrefix is the reference prefix of a registry as --registry or
// dm mirror names it.
func registryPrefix(s string) (string, error) {
	if strings.HasPrefix(s, oci.Scheme) {
		return api.OCIPrefix(s)
	}
	r, err := resolve.ParseRegistry(s)
	if err != nil {
		return "", err
	}
	if r.Collection != "" {
		return "", fmt.Errorf("registry %q: a mirror copies a whole registry: want [host/]owner/repo without a collection", s)
	}
	return r.Prefix(), nil
}

// progress writes a mirror's progress: on a terminal a status line
// rewritten in place, else only the lines that matter.
type progress struct {
	w     io.Writer
	tty   bool
	shown bool
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

func (p *progress) line(format string, args ...any) {
	p.clear()
	fmt.Fprintf(p.w, "dm: "+format+"\n", args...)
}

func (p *progress) status(format string, args ...any) {
	if !p.tty {
		return
	}
	p.clear()
	fmt.Fprintf(p.w, "dm: "+format, args...)
	p.shown = true
}

func (p *progress) done() { p.clear() }
