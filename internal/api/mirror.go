package api

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// PublishInfo says where a registry's versions were published from, for
// the artifact's source, revision and created annotations.
type PublishInfo struct {
	// Source is the repository's URL and Revision the indexed commit (a
	// GitHub registry's); both may be empty.
	Source, Revision string
	// Created is the commit's time; zero leaves it out. Never the
	// clock's: a push is reproducible.
	Created time.Time
}

// Publishing returns the PublishInfo of the registry named prefix, with
// created as its time: a github.com registry's URL and indexed commit.
func Publishing(ctx context.Context, b Backend, prefix string, created time.Time) PublishInfo {
	info := PublishInfo{Created: created}
	list, err := b.Registries(ctx)
	if err != nil {
		return info
	}
	for _, r := range list.Registries {
		if r.Name != prefix || r.Kind != KindGitHub {
			continue
		}
		info.Revision = r.Version
		if host, rest, _ := strings.Cut(prefix, "/"); host == resolve.DefaultHost {
			info.Source = "https://" + host + "/" + rest
		}
	}
	return info
}

// ReadVersion reads the files of a described version, pinned by its
// digest so that what is read is what was listed, and the metadata to
// push them with.
func ReadVersion(ctx context.Context, b Backend, tv *TemplateVersion, info PublishInfo) (artifact.Metadata, []artifact.Content, error) {
	meta := artifact.Metadata{Name: tv.Template, Collection: tv.Collection, Version: tv.Version,
		Title: tv.Title, Description: tv.Description, Source: info.Source, Revision: info.Revision, Created: info.Created}
	pinned := tv.Resolved + "@" + tv.Digest
	files := make([]artifact.Content, 0, len(tv.Files))
	for _, f := range tv.Files {
		data, err := b.ReadFile(ctx, pinned, "", f.Path)
		if err != nil {
			return meta, nil, err
		}
		files = append(files, artifact.Content{Path: f.Path, Data: data})
	}
	return meta, files, nil
}

// MirrorCandidates returns every usable version of the registry named
// prefix, to mirror (oci.Pusher.Mirror), and notes on the versions left
// out: unusable ones, and version directories naming one version twice.
func MirrorCandidates(ctx context.Context, b Backend, prefix string, info PublishInfo) ([]oci.Candidate, []string, error) {
	list, err := b.Templates(ctx, TemplateQuery{Registry: prefix})
	if err != nil {
		return nil, nil, err
	}
	var cands []oci.Candidate
	var notes []string
	for _, t := range list.Templates {
		if t.Registry != prefix {
			continue
		}
		seen := map[string]int{}
		for _, v := range t.Versions {
			seen[v.Version]++
		}
		for _, v := range t.Versions {
			switch {
			case v.Problem != "":
				notes = append(notes, fmt.Sprintf("skipping %s: %s", v.Ref, v.Problem))
				continue
			case seen[v.Version] > 1:
				notes = append(notes, fmt.Sprintf("skipping %s: several version directories hold %s (dm lint)", v.Ref, v.Version))
				continue
			}
			ref := v.Ref + "@" + v.Digest
			c := oci.Candidate{
				Ref:    v.Ref,
				Meta:   artifact.Metadata{Name: t.Name, Collection: t.Collection, Version: v.Version},
				Digest: v.Digest,
				Read: func(ctx context.Context) (artifact.Metadata, []artifact.Content, error) {
					tv, err := b.TemplateInputs(ctx, ref, "")
					if err != nil {
						return artifact.Metadata{}, nil, err
					}
					return ReadVersion(ctx, b, tv, info)
				},
			}
			// The signatures go with the version: an air-gapped
			// registry's policy verifies what they were made over.
			if sr, ok := b.(SignatureReader); ok {
				c.Signatures = func(ctx context.Context) ([][]byte, error) { return sr.VersionSignatures(ctx, ref, "") }
			} else if v.SignatureFile {
				c.Signatures = func(ctx context.Context) ([][]byte, error) {
					sig, err := b.ReadFile(ctx, ref, "", index.SignatureFile)
					if err != nil {
						return nil, err
					}
					return [][]byte{sig}, nil
				}
			}
			cands = append(cands, c)
		}
	}
	return cands, notes, nil
}

// SignatureReader is a Backend that reads a version's signatures where
// its source keeps them, OCI referrers included (Service); from another
// (a registryd's Client) a mirror copies signature files alone.
type SignatureReader interface {
	VersionSignatures(ctx context.Context, ref, registry string) ([][]byte, error)
}

// NewPusher returns the pusher of an OCI registry spec: its credential
// from DockerConfig, else from Docker's configuration in
// DockerConfigDir.
func NewPusher(o OCISpec, log *slog.Logger) (*oci.Pusher, error) {
	opts, err := o.options(log)
	if err != nil {
		return nil, err
	}
	return oci.NewPusher(opts)
}

// KeepMirrored mirrors g to p after its first refresh and after every
// refresh that changed its index, until ctx ends, reading g's versions
// through b (a Service over the resolver that serves g); a namespace's
// registry is read in its namespace's own view. done, if set, receives
// each mirror's result. It wraps g.OnIndex, so it is called before g is
// kept indexed (KeepIndexed). wg counts the goroutine it starts.
func KeepMirrored(ctx context.Context, wg *sync.WaitGroup, g *index.Registry, b Backend, p *oci.Pusher, log *slog.Logger, done func(*oci.MirrorResult, error)) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	changed := make(chan struct{}, 1)
	kick := func() {
		select {
		case changed <- struct{}{}:
		default: // one is pending already
		}
	}
	prev := g.OnIndex
	first := true
	var mu sync.Mutex
	g.OnIndex = func(registry, result string, d time.Duration) {
		if prev != nil {
			prev(registry, result, d)
		}
		mu.Lock()
		wasFirst := first
		first = false
		mu.Unlock()
		if result == "ok" || wasFirst && result == "unchanged" {
			kick()
		}
	}
	if g.Namespace != "" {
		ctx = resolve.WithScope(ctx, resolve.Trusted(g.Namespace))
	}
	target := p.Location().String()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			if g.Snapshot() == nil {
				continue
			}
			start := time.Now()
			res, err := mirrorOnce(ctx, g, b, p, log)
			l := log.With("registry", g.Name, "target", target, "duration", time.Since(start).Round(time.Millisecond))
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil:
				l.Error("mirroring failed", "err", err)
			case res.Pushed > 0:
				l.Info("mirrored", "pushed", res.Pushed, "present", res.Present)
			default:
				l.Debug("mirror up to date", "present", res.Present)
			}
			if done != nil {
				done(res, err)
			}
		}
	}()
}

func mirrorOnce(ctx context.Context, g *index.Registry, b Backend, p *oci.Pusher, log *slog.Logger) (*oci.MirrorResult, error) {
	info := Publishing(ctx, b, g.Name, time.Time{})
	cands, notes, err := MirrorCandidates(ctx, b, g.Name, info)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		log.Warn("not mirrored", "registry", g.Name, "why", n)
	}
	return p.Mirror(ctx, cands, func(_, _ int, s oci.MirrorStep) {
		if s.Result != nil && s.Result.Pushed {
			log.Info("pushed", "registry", g.Name, "version", s.Candidate.Ref, "to", s.Result.Ref())
		}
	})
}
