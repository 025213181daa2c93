package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v57/github"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// WebhookOptions configure POST /v1/webhooks/github.
type WebhookOptions struct {
	// Secret authenticates events for every registry in Registries that
	// has no secret of its own. Secrets are never logged or answered.
	Secret string
	// Registries are the GitHub registries events may refresh.
	Registries []WebhookRegistry
	// Window is how long pushes to a registry must pause before its
	// refresh starts, so that a burst makes one refresh; zero means 500
	// milliseconds. MaxWait bounds the wait from the first push; zero
	// means 3 seconds.
	Window  time.Duration
	MaxWait time.Duration
	// RefreshTimeout bounds a refresh a push started; zero means 50
	// seconds.
	RefreshTimeout time.Duration
	// MaxBody bounds a delivery's body: a larger one is answered 413,
	// before it is read when it announces its length. Zero means
	// DefaultWebhookMaxBody.
	MaxBody int64
	// MaxReads bounds the deliveries read at once; more are answered 503
	// with Retry-After. Zero means 4.
	MaxReads int
	// Deliveries is how many recent X-GitHub-Delivery IDs are remembered,
	// so that a replayed delivery is answered without a refresh; zero
	// means 4096.
	Deliveries int
	// OnPush, if set, is called for every registry a signed push
	// refreshes, with the pushed commit: registryd records it on the
	// registry's cluster object so that its other replicas refresh too.
	OnPush func(registry, commit string)
}

// WebhookRegistry is a GitHub registry that push events refresh.
type WebhookRegistry struct {
	// Registry is the registry's key (index.Registry.Key): its name
	// (github.com/acme/templates), NAMESPACE/NAME for a namespace's.
	Registry string
	// Owner and Repo name the repository; Branch the tracked branch, ""
	// for the repository's default branch.
	Owner, Repo, Branch string
	// Secret, if set, is this registry's own secret, which the global
	// one does not replace.
	Secret string
}

// DefaultWebhookMaxBody is WebhookOptions.MaxBody's default. GitHub caps
// a payload at 25 MB, but push payloads are kilobytes.
const DefaultWebhookMaxBody = 5 << 20

// webhookReadTimeout bounds the reading of one delivery's body, so that a
// slow client cannot hold one of the few reads for long.
const webhookReadTimeout = 10 * time.Second

// webhooks serves POST /v1/webhooks/github.
type webhooks struct {
	opts     WebhookOptions
	resolver *resolve.Resolver
	log      *slog.Logger
	shed     *prometheus.CounterVec
	// cfg holds the registries and their distinct secrets; SetRegistries
	// replaces it while deliveries are served.
	cfg atomic.Pointer[hookConfig]
	// reads is the semaphore of the bodies being read; bufs holds the
	// buffers they were read into, for the next deliveries of a burst
	// (at most MaxReads are in use at once).
	reads chan struct{}
	bufs  sync.Pool
	// seen holds the IDs of recent deliveries with a good signature.
	seen *lru.Cache[string, struct{}]

	mu sync.Mutex
	// pending holds each registry's scheduled or running refresh, keyed
	// by the registry itself: never by its name (a prefix), which
	// registries of two namespaces share, nor by its key, which a
	// registry opened anew (a rotated token, a recreated object) keeps.
	pending map[*index.Registry]*hookRefresh
}

func newWebhooks(opts WebhookOptions, r *resolve.Resolver, log *slog.Logger, shed *prometheus.CounterVec) *webhooks {
	if opts.Window <= 0 {
		opts.Window = 500 * time.Millisecond
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 3 * time.Second
	}
	if opts.RefreshTimeout <= 0 {
		opts.RefreshTimeout = 50 * time.Second
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultWebhookMaxBody
	}
	if opts.MaxReads <= 0 {
		opts.MaxReads = 4
	}
	if opts.Deliveries <= 0 {
		opts.Deliveries = 4096
	}
	seen, _ := lru.New[string, struct{}](opts.Deliveries)
	h := &webhooks{opts: opts, resolver: r, log: log, shed: shed, pending: map[*index.Registry]*hookRefresh{},
		reads: make(chan struct{}, opts.MaxReads), seen: seen}
	h.setRegistries(opts.Registries)
	return h
}

// hookConfig is one immutable configuration of the webhook registries.
type hookConfig struct {
	registries []WebhookRegistry
	// byRepo are the registries by repository, OWNER/REPO in lower case:
	// a delivery is checked only against the secrets of the registries
	// of the repository it names.
	byRepo map[string][]WebhookRegistry
	// global is the global secret, when a delivery may be signed with it:
	// some registry has no secret of its own, or none is configured.
	global string
	// enabled reports whether any secret is configured.
	enabled bool
}

// setRegistries replaces the registries pushes may refresh.
func (h *webhooks) setRegistries(regs []WebhookRegistry) {
	c := &hookConfig{registries: slices.Clone(regs), byRepo: map[string][]WebhookRegistry{}}
	hasGlobalUser := false
	for _, reg := range c.registries {
		repo := strings.ToLower(reg.Owner + "/" + reg.Repo)
		c.byRepo[repo] = append(c.byRepo[repo], reg)
		if reg.Secret == "" {
			hasGlobalUser = true
		} else {
			c.enabled = true
		}
	}
	if hasGlobalUser || len(regs) == 0 {
		c.global = h.opts.Secret
	}
	c.enabled = c.enabled || c.global != ""
	h.cfg.Store(c)
}

// secretsFor returns the distinct secrets a delivery naming repository
// full (OWNER/REPO) may be signed with: those of the registries of that
// repository, else the global one. At most one per candidate registry, so
// that a delivery costs one HMAC per registry that could take it, not one
// per secret registryd knows (every tenant's).
func (c *hookConfig) secretsFor(full string, global string) []string {
	var out []string
	for _, reg := range c.byRepo[strings.ToLower(full)] {
		s := reg.Secret
		if s == "" {
			s = global
		}
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 && c.global != "" {
		// A ping of an organisation's hook, another repository's event:
		// the global secret's holder is answered as before.
		out = append(out, c.global)
	}
	return out
}

// enabled reports whether any secret is configured.
func (h *webhooks) enabled() bool { return h.cfg.Load().enabled }

// webhookAnswer is the JSON body of a webhook's answer.
type webhookAnswer struct {
	Status     string   `json:"status"`
	Registries []string `json:"registries,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// parseSignature returns the HMAC of an X-Hub-Signature-256 header:
// "sha256=" and 64 hex digits, nothing else. The algorithm is never taken
// from the header.
func parseSignature(header string) ([]byte, bool) {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(hexSum) != 2*sha256.Size {
		return nil, false
	}
	sum, err := hex.DecodeString(hexSum)
	return sum, err == nil
}

// ServeHTTP answers one GitHub delivery: 404 without a secret; 401 for a
// missing, malformed or wrong signature, checked for presence and form
// before the body is read; 413 for a body over MaxBody; 503 while MaxReads
// bodies are being read; 200 for a ping or a delivery already handled;
// 202 for everything else (a push to a tracked branch schedules a
// refresh).
func (h *webhooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.enabled() {
		writeJSON(w, http.StatusNotFound, api.Error{Error: "webhooks are disabled: registryd has no webhook secret (set REGISTRYD_WEBHOOK_SECRET or --webhook-secret)"})
		return
	}
	header := r.Header.Get(github.SHA256SignatureHeader)
	if header == "" {
		writeJSON(w, http.StatusUnauthorized, api.Error{Error: "missing " + github.SHA256SignatureHeader + " header"})
		return
	}
	want, ok := parseSignature(header)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, api.Error{Error: github.SHA256SignatureHeader + " must be sha256= and 64 hex digits"})
		return
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (ct != "application/json" && ct != "application/x-www-form-urlencoded") {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "webhook Content-Type must be application/json or application/x-www-form-urlencoded"})
		return
	}
	if r.ContentLength > h.opts.MaxBody {
		h.shed.WithLabelValues("body_too_large").Inc()
		writeJSON(w, http.StatusRequestEntityTooLarge, api.Error{Error: fmt.Sprintf("webhook body of %d bytes is over the %d-byte limit (--webhook-max-body)", r.ContentLength, h.opts.MaxBody)})
		return
	}
	select {
	case h.reads <- struct{}{}:
		defer func() { <-h.reads }()
	default:
		h.shed.WithLabelValues("webhook_reads").Inc()
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, api.Error{Error: fmt.Sprintf("%d webhook deliveries are being read; try again shortly", cap(h.reads))})
		return
	}
	cfg := h.cfg.Load()
	body, release, err := h.read(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.shed.WithLabelValues("body_too_large").Inc()
			writeJSON(w, http.StatusRequestEntityTooLarge, api.Error{Error: fmt.Sprintf("webhook body is over the %d-byte limit (--webhook-max-body)", tooBig.Limit)})
			return
		}
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "reading the webhook body: " + derrors.Clip(err.Error(), 200)})
		return
	}
	defer release()
	// The repository the delivery names picks the secrets it is checked
	// against (unsigned, it only narrows which could sign it).
	payload := body
	var formErr error
	if ct == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		formErr = err
		payload = []byte(form.Get("payload"))
	}
	full := repositoryOf(payload)
	secret := matchSignature(body, want, cfg.secretsFor(full, h.opts.Secret))
	delivery := r.Header.Get("X-GitHub-Delivery")
	if secret == "" {
		h.log.Warn("webhook with a bad signature", "event", derrors.Clip(github.WebHookType(r), 100), "delivery", derrors.Clip(delivery, 100))
		writeJSON(w, http.StatusUnauthorized, api.Error{Error: "signature does not match the payload"})
		return
	}
	// Only signed deliveries are remembered, so that nobody without the
	// secret can make registryd ignore a real one.
	if delivery != "" {
		if dup, _ := h.seen.ContainsOrAdd(delivery, struct{}{}); dup {
			h.shed.WithLabelValues("replay").Inc()
			writeJSON(w, http.StatusOK, webhookAnswer{Status: "duplicate", Reason: "delivery " + derrors.Clip(delivery, 100) + " was already handled"})
			return
		}
	}
	if formErr != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "webhook form: " + derrors.Clip(formErr.Error(), 200)})
		return
	}
	h.handle(w, r, payload, secret, full, cfg.byRepo[strings.ToLower(full)])
}

// read reads the body, at most MaxBody bytes, into a buffer sized for it
// at once: the announced length, else MaxBody. Grown by doubling, a
// chunked body would cost up to three times MaxBody while it is read, and
// a flood of them as much again in garbage. release gives the buffer back;
// call it when done with the body.
func (h *webhooks) read(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(webhookReadTimeout))
	want := h.opts.MaxBody
	if r.ContentLength >= 0 {
		want = min(r.ContentLength, want)
	}
	// MinRead more, so that reading the end needs no room of its own.
	need := int(want) + bytes.MinRead
	var b []byte
	if p, _ := h.bufs.Get().(*[]byte); p != nil && cap(*p) >= need {
		b = (*p)[:0]
	} else {
		b = make([]byte, 0, need)
	}
	buf := bytes.NewBuffer(b)
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.opts.MaxBody)); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), func() {
		b := buf.Bytes()[:0]
		h.bufs.Put(&b)
	}, nil
}

// matchSignature returns the secret among secrets whose HMAC of body is
// want, or "". With no secret to try it still computes one HMAC, with a
// key nobody holds, so that a delivery naming a repository no registry
// tracks takes as long as one naming a tracked one: the answer's time
// does not tell which repositories registryd serves.
func matchSignature(body, want []byte, secrets []string) string {
	if len(secrets) == 0 {
		m := hmac.New(sha256.New, []byte(unusedKey))
		m.Write(body)
		_ = hmac.Equal(m.Sum(nil), want)
		return ""
	}
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write(body)
		if hmac.Equal(m.Sum(nil), want) {
			return s
		}
	}
	return ""
}

// unusedKey is the HMAC key of a delivery that no secret may sign.
const unusedKey = "registryd: no registry tracks this repository"

// repositoryOf returns the OWNER/REPO a delivery's payload names
// (repository.full_name, else the path of repository.html_url), or "". A
// scan of the payload costs about four HMACs of it (encoding/json checks,
// then skips, what is not the repository), whatever the number of
// secrets registryd knows.
func repositoryOf(payload []byte) string {
	var p struct {
		Repository *struct {
			FullName string `json:"full_name"`
			HTMLURL  string `json:"html_url"`
		} `json:"repository"`
	}
	if json.Unmarshal(payload, &p) != nil || p.Repository == nil {
		return ""
	}
	if p.Repository.FullName != "" {
		return p.Repository.FullName
	}
	if u, err := url.Parse(p.Repository.HTMLURL); err == nil {
		if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) == 2 {
			return parts[0] + "/" + parts[1]
		}
	}
	return ""
}

// handle answers a delivery naming repository full, signed with secret;
// regs are the registries of that repository.
func (h *webhooks) handle(w http.ResponseWriter, r *http.Request, payload []byte, secret, full string, regs []WebhookRegistry) {
	event := github.WebHookType(r)
	switch event {
	case "ping":
		writeJSON(w, http.StatusOK, webhookAnswer{Status: "pong"})
		return
	case "push":
	default:
		writeJSON(w, http.StatusAccepted, webhookAnswer{Status: "ignored", Reason: fmt.Sprintf("event %q does not change registries", derrors.Clip(event, 100))})
		return
	}
	ev, err := github.ParseWebHook(event, payload)
	push, ok := ev.(*github.PushEvent)
	if err != nil || !ok {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: derrors.Clip(fmt.Sprintf("push event payload: %v", err), 300)})
		return
	}
	ref := push.GetRef()
	var names []string
	for _, reg := range regs {
		own := reg.Secret
		if own == "" {
			own = h.opts.Secret
		}
		if own != secret {
			continue
		}
		branch := reg.Branch
		if branch == "" {
			branch = push.GetRepo().GetDefaultBranch()
		}
		if ref != "refs/heads/"+branch {
			continue
		}
		if g, ok := h.resolver.ByKey(reg.Registry); ok {
			// The receiving replica reads the branch head: the others,
			// told by OnPush, list the pushed commit only.
			h.request(g, "")
			names = append(names, g.Name)
			if h.opts.OnPush != nil {
				h.opts.OnPush(g.Key(), push.GetAfter())
			}
		}
	}
	if len(names) == 0 {
		writeJSON(w, http.StatusAccepted, webhookAnswer{Status: "ignored", Reason: derrors.Clip(fmt.Sprintf("no registry tracks %s of %s", ref, full), 300)})
		return
	}
	h.log.Info("push event: refreshing", "registries", names, "ref", ref, "after", push.GetAfter())
	writeJSON(w, http.StatusAccepted, webhookAnswer{Status: "refresh scheduled", Registries: names})
}

// hookRefresh is a registry's push-triggered refresh: scheduled (waiting
// for pushes to pause, or for the source's back-off to end), running, and
// at most one more queued behind a running one.
type hookRefresh struct {
	first, last time.Time
	scheduled   bool
	running     bool
	queued      bool
	// commit is the commit the last request of the next refresh named;
	// head reports that one named none. A head read serves every push.
	commit string
	head   bool
}

// request schedules a refresh of g once pushes to it have paused for the
// window (at most MaxWait after the first) and no sooner than the source
// asked to be left alone until (Status.RetryAt, as timed refreshes obey):
// pushes that arrive before it starts are served by it; pushes while it
// runs queue one more, never more. commit, if not "", is the commit the
// push named (another replica recorded it): the refresh lists it rather
// than asking for the branch head, unless a request without one shares it.
func (h *webhooks) request(g *index.Registry, commit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	p, ok := h.pending[g]
	if !ok {
		p = &hookRefresh{}
		h.pending[g] = p
	}
	if commit == "" {
		p.head = true
	} else {
		p.commit = commit
	}
	p.last = now
	switch {
	case p.running:
		p.queued = true
	case !p.scheduled:
		p.first, p.scheduled = now, true
		h.schedule(g, p, h.opts.Window)
	}
}

// schedule fires p's refresh after d; h.mu is held.
func (h *webhooks) schedule(g *index.Registry, p *hookRefresh, d time.Duration) {
	time.AfterFunc(d, func() { h.fire(g, p) })
}

// fire starts p's refresh, unless pushes kept coming or the source's
// back-off has not ended: then it waits for them.
func (h *webhooks) fire(g *index.Registry, p *hookRefresh) {
	h.mu.Lock()
	wait := min(time.Until(p.last.Add(h.opts.Window)), time.Until(p.first.Add(h.opts.MaxWait)))
	wait = max(wait, time.Until(g.Status().RetryAt))
	if wait > 0 {
		h.schedule(g, p, wait)
		h.mu.Unlock()
		return
	}
	p.scheduled, p.running = false, true
	commit := p.commit
	if p.head {
		commit = ""
	}
	p.commit, p.head = "", false
	h.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), h.opts.RefreshTimeout)
	if err := g.RefreshAt(ctx, commit); err != nil {
		h.log.Warn("refresh after a push failed", "registry", g.Key(), "err", err)
	}
	cancel()

	h.mu.Lock()
	defer h.mu.Unlock()
	p.running = false
	if !p.queued {
		delete(h.pending, g)
		return
	}
	p.queued = false
	now := time.Now()
	p.first, p.last, p.scheduled = now, now, true
	h.schedule(g, p, h.opts.Window)
}
