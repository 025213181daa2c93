package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v57/github"

	"github.com/dmhq/dm/internal/api"
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
}

// WebhookRegistry is a GitHub registry that push events refresh.
type WebhookRegistry struct {
	// Registry is the registry's name (github.com/acme/templates).
	Registry string
	// Owner and Repo name the repository; Branch the tracked branch, ""
	// for the repository's default branch.
	Owner, Repo, Branch string
	// Secret, if set, is this registry's own secret, which the global
	// one does not replace.
	Secret string
}

// maxWebhookBody is GitHub's own cap on a delivery's payload.
const maxWebhookBody = 25 << 20

// webhooks serves POST /v1/webhooks/github.
type webhooks struct {
	opts     WebhookOptions
	resolver *resolve.Resolver
	log      *slog.Logger
	// secrets are the distinct configured secrets.
	secrets []string

	mu      sync.Mutex
	pending map[string]*pendingRefresh // registry -> the refresh waiting to start
}

func newWebhooks(opts WebhookOptions, r *resolve.Resolver, log *slog.Logger) *webhooks {
	if opts.Window <= 0 {
		opts.Window = 500 * time.Millisecond
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 3 * time.Second
	}
	if opts.RefreshTimeout <= 0 {
		opts.RefreshTimeout = 50 * time.Second
	}
	h := &webhooks{opts: opts, resolver: r, log: log, pending: map[string]*pendingRefresh{}}
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			h.secrets = append(h.secrets, s)
		}
	}
	hasGlobalUser := false
	for _, reg := range opts.Registries {
		add(reg.Secret)
		if reg.Secret == "" {
			hasGlobalUser = true
		}
	}
	if hasGlobalUser || len(opts.Registries) == 0 {
		add(opts.Secret)
	}
	return h
}

// enabled reports whether any secret is configured.
func (h *webhooks) enabled() bool { return len(h.secrets) > 0 }

// webhookAnswer is the JSON body of a webhook's answer.
type webhookAnswer struct {
	Status     string   `json:"status"`
	Registries []string `json:"registries,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// ServeHTTP answers one GitHub delivery: 404 without a secret, 401 for a
// missing or bad signature, 200 for a ping, 202 for everything else (a
// push to a tracked branch schedules a refresh).
func (h *webhooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.enabled() {
		writeJSON(w, http.StatusNotFound, api.Error{Error: "webhooks are disabled: registryd has no webhook secret (set REGISTRYD_WEBHOOK_SECRET or --webhook-secret)"})
		return
	}
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if sig == "" {
		writeJSON(w, http.StatusUnauthorized, api.Error{Error: "missing " + github.SHA256SignatureHeader + " header"})
		return
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (ct != "application/json" && ct != "application/x-www-form-urlencoded") {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "webhook Content-Type must be application/json or application/x-www-form-urlencoded"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, api.Error{Error: "reading the webhook body: " + err.Error()})
		return
	}
	// The secret that signed the delivery decides which registries it may
	// refresh.
	var payload []byte
	secret := ""
	for _, s := range h.secrets {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if p, err := github.ValidatePayload(r, []byte(s)); err == nil {
			payload, secret = p, s
			break
		}
	}
	if secret == "" {
		h.log.Warn("webhook with a bad signature", "event", github.WebHookType(r), "delivery", r.Header.Get("X-GitHub-Delivery"))
		writeJSON(w, http.StatusUnauthorized, api.Error{Error: "signature does not match the payload"})
		return
	}
	event := github.WebHookType(r)
	switch event {
	case "ping":
		writeJSON(w, http.StatusOK, webhookAnswer{Status: "pong"})
		return
	case "push":
	default:
		writeJSON(w, http.StatusAccepted, webhookAnswer{Status: "ignored", Reason: fmt.Sprintf("event %q does not change registries", event)})
		return
	}
	ev, err := github.ParseWebHook(event, payload)
	push, ok := ev.(*github.PushEvent)
	if err != nil || !ok {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: fmt.Sprintf("push event payload: %v", err)})
		return
	}
	full := push.GetRepo().GetFullName()
	ref := push.GetRef()
	var names []string
	for _, reg := range h.opts.Registries {
		own := reg.Secret
		if own == "" {
			own = h.opts.Secret
		}
		if own != secret || !strings.EqualFold(reg.Owner+"/"+reg.Repo, full) {
			continue
		}
		branch := reg.Branch
		if branch == "" {
			branch = push.GetRepo().GetDefaultBranch()
		}
		if ref != "refs/heads/"+branch {
			continue
		}
		if g, ok := h.resolver.Registry(reg.Registry); ok {
			h.request(g.Name, g.Refresh)
			names = append(names, g.Name)
		}
	}
	if len(names) == 0 {
		writeJSON(w, http.StatusAccepted, webhookAnswer{Status: "ignored", Reason: fmt.Sprintf("no registry tracks %s of %s", ref, full)})
		return
	}
	h.log.Info("push event: refreshing", "registries", names, "ref", ref, "after", push.GetAfter())
	writeJSON(w, http.StatusAccepted, webhookAnswer{Status: "refresh scheduled", Registries: names})
}

// request schedules a refresh of the named registry once pushes to it
// have paused for the window (at most MaxWait after the first): pushes
// that arrive before it starts are served by it, later ones schedule the
// next.
func (h *webhooks) request(name string, refresh func(context.Context) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if p, ok := h.pending[name]; ok {
		p.last = now
		return
	}
	p := &pendingRefresh{first: now, last: now}
	h.pending[name] = p
	var fire func()
	fire = func() {
		h.mu.Lock()
		wait := min(time.Until(p.last.Add(h.opts.Window)), time.Until(p.first.Add(h.opts.MaxWait)))
		if wait > 0 {
			// Pushes kept coming: wait for them to pause.
			time.AfterFunc(wait, fire)
			h.mu.Unlock()
			return
		}
		delete(h.pending, name)
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), h.opts.RefreshTimeout)
		defer cancel()
		if err := refresh(ctx); err != nil {
			h.log.Warn("refresh after a push failed", "registry", name, "err", err)
		}
	}
	time.AfterFunc(h.opts.Window, fire)
}

// pendingRefresh is a refresh waiting for pushes to pause.
type pendingRefresh struct{ first, last time.Time }
