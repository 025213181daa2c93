package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
)

// The lease a dm holds on a deployment while it changes it. See "When two
// deploys race" in docs/deploying.md.
const (
	// DefaultLeaseDuration is how long a lease lasts without a renewal,
	// and DefaultRenewPeriod how often its holder renews it: client-go's
	// leader election's 15 s lease and its holder giving up after 10 s
	// without a renewal. Long enough that a loaded apiserver (a renewal
	// taking seconds) does not make a live dm look dead; short enough
	// that a dm killed mid-apply blocks the next one for seconds.
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewPeriod   = 5 * time.Second
	// DefaultWaitForLock is how long an action waits for a live holder
	// to finish (--wait-for-lock): a deploy that another one started a
	// moment before, in a CI pipeline, usually finds it done.
	DefaultWaitForLock = 5 * time.Second

	// maxLeaseDuration bounds the duration a record asks for: a record
	// (written by a broken or hostile writer) cannot block its deployment
	// for longer.
	maxLeaseDuration = 10 * time.Minute
)

// LeaseOptions time the leases an action takes.
type LeaseOptions struct {
	// Duration is how long a lease lasts without a renewal: another dm
	// that has seen no renewal for that long takes it over. Default
	// DefaultLeaseDuration.
	Duration time.Duration
	// RenewPeriod is how often the holder renews; it stops applying if it
	// could not renew for Duration-RenewPeriod, before anyone may take
	// over. Default DefaultRenewPeriod, or a third of Duration when only
	// that is set; at most half of Duration.
	RenewPeriod time.Duration
}

func (o LeaseOptions) duration() time.Duration {
	if o.Duration > 0 {
		return min(o.Duration, maxLeaseDuration)
	}
	return DefaultLeaseDuration
}

func (o LeaseOptions) renewPeriod() time.Duration {
	d := o.duration()
	switch {
	case o.RenewPeriod > 0:
		return min(o.RenewPeriod, d/2)
	case o.Duration > 0:
		return d / 3
	}
	return DefaultRenewPeriod
}

// waitForLock is WaitForLock with its default; negative is 0.
func waitForLock(w time.Duration) time.Duration {
	switch {
	case w == 0:
		return DefaultWaitForLock
	case w < 0:
		return 0
	}
	return w
}

// operations name an action's lease by its hook action.
var operations = map[string]string{
	actionInstall: "deploy", actionUpgrade: "update", actionRollback: "rollback", actionDelete: "delete", "": "import",
}

// newLease returns a lease for an action (operation), held by this process
// (and instance, for dm-controller) under a fresh random id.
func (c *Config) newLease(operation, instance string) *release.Lease {
	h := c.self()
	var id [8]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	h.ID = hex.EncodeToString(id[:])
	if instance != "" {
		h.Instance = instance
	}
	now := c.now()
	return &release.Lease{
		Holder: h, Operation: operation,
		Duration: c.Lease.duration(), RenewPeriod: c.Lease.renewPeriod(),
		Acquired: now, Renewed: now,
	}
}

// recordDuration is how long the lease on r lasts as its holder said, which
// is what a waiter goes by (two dms of different settings agree on it).
func recordDuration(l *release.Lease) time.Duration {
	if l.Duration <= 0 {
		return DefaultLeaseDuration
	}
	return min(l.Duration, maxLeaseDuration)
}

// ours reports whether r still carries lease l (the same holder id).
func ours(r *release.Record, l *release.Lease) bool {
	return r.Lease != nil && r.Lease.Holder.ID == l.Holder.ID
}

// ErrInProgress means another action holds the deployment (it is being
// deployed, updated, rolled back or deleted), or took it over from this
// one: trying again once it is done is the remedy, not a change of input.
// It wraps derrors.Conflict.
var ErrInProgress = fmt.Errorf("another operation is in progress: %w", derrors.Conflict)

// errRaced means an action lost the race to take the deployment (another
// one recorded the revision, or claimed the latest one, first) before it
// changed anything: it starts again, and waits for the winner.
type errRaced struct{ err error }

func (e *errRaced) Error() string { return e.err.Error() }
func (e *errRaced) Unwrap() error { return e.err }

// maxRaces bounds how many times an action starts again after losing a
// race: each time it waits for the winner, so more means a storm of
// writers.
const maxRaces = 5

// retryRaced runs an action until it does not lose the race to take the
// deployment (at most maxRaces times), giving each try the same deadline
// for waiting for another holder.
func retryRaced[T any](wait time.Duration, try func(until time.Time) (T, error)) (T, error) {
	until := time.Now().Add(waitForLock(wait))
	for i := 1; ; i++ {
		res, err := try(until)
		var raced *errRaced
		if !errors.As(err, &raced) || i == maxRaces {
			return res, err
		}
	}
}

// observed is what a waiter saw of a lease: the record's renewal state,
// when it first saw that state (its own monotonic clock), and whether it
// has seen it change (the holder is alive).
type observed struct {
	key     string
	at      time.Time
	renewed bool
}

// leaseKey changes with every renewal and every other write of r.
func leaseKey(r *release.Record) string {
	return r.Lease.Holder.ID + "/" + strconv.FormatInt(r.Lease.Renewals, 10) + "/" + r.StorageVersion
}

// observe notes r's lease state at now and returns the observation.
func observe(seen map[int]*observed, r *release.Record, now time.Time) *observed {
	k := leaseKey(r)
	o := seen[r.Revision]
	switch {
	case o == nil:
		o = &observed{key: k, at: now}
		seen[r.Revision] = o
	case o.key != k:
		o.key, o.at, o.renewed = k, now, true
	}
	return o
}

// pollInterval is how often a waiter reads a leased record (one GET):
// several times per renewal, and often enough that it goes on soon after
// the holder is done.
func pollInterval(l *release.Lease) time.Duration {
	p := l.RenewPeriod / 4
	if p <= 0 || p > 250*time.Millisecond {
		p = 250 * time.Millisecond
	}
	return max(p, 20*time.Millisecond)
}

// lock is how an action waits for another that holds its deployment.
type lock struct {
	// until ends the wait for a live holder.
	until time.Time
	// refuse, if set, returns the error the action would end with after
	// the wait whatever the holder does (a person's update of a deployment
	// dm-controller manages): it ends the action at once instead.
	refuse func(hist []*release.Record) error
}

// lockHistory reads a deployment's history for an action that changes it.
// A record that another action holds (its lease is live) is waited for:
// until it is released, until its lease expires (no renewal seen for its
// duration on this process's clock, whatever the holder's clock says), or
// until until, once the holder has been seen renewing (alive: "another
// operation is in progress"). A record whose lease expired is taken over:
// a pending one is marked failed ("interrupted", naming the holder), any
// other loses the lease. A pending record without a lease (an older dm's)
// is interrupted at once.
func (c *Config) lockHistory(ctx context.Context, ns, name string, lk lock) ([]*release.Record, error) {
	seen := map[int]*observed{}
	started := time.Now()
	told := map[string]bool{}
	for {
		hist, err := c.history(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		var held *release.Record
		wrote := false
		for _, r := range hist {
			switch {
			case r.Lease == nil && r.Status == release.StatusPending:
				if err := c.takeOver(ctx, r, 0); err != nil {
					return nil, err
				}
				wrote = true
			case r.Lease != nil:
				o := observe(seen, r, now)
				if now.Sub(o.at) >= recordDuration(r.Lease) {
					if err := c.takeOver(ctx, r, now.Sub(o.at)); err != nil {
						return nil, err
					}
					wrote = true
				} else if held == nil {
					held = r
				}
			}
		}
		if wrote {
			continue // read what the writes left
		}
		if held == nil {
			return hist, nil
		}
		if lk.refuse != nil {
			if err := lk.refuse(hist); err != nil {
				return nil, err
			}
		}
		if id := held.Lease.Holder.ID; !told[id] {
			told[id] = true
			c.logf("dm: %s is held by %s (%s); waiting for it to finish, or for its lease to expire (%s without a renewal)",
				held, held.Lease.Holder, held.Lease.Operation, recordDuration(held.Lease))
		}
		if err := c.watch(ctx, held, seen, started, lk.until); err != nil {
			return nil, err
		}
	}
}

// watch polls the leased record r until it changes otherwise than by a
// renewal (released, taken, deleted) or its lease expires, and returns
// nil to have the history read again; or the error of a wait that ran out
// on a live holder, or of ctx.
func (c *Config) watch(ctx context.Context, r *release.Record, seen map[int]*observed, started, until time.Time) error {
	l := r.Lease
	tick := time.NewTicker(pollInterval(l))
	defer tick.Stop()
	for {
		o := seen[r.Revision]
		now := time.Now()
		if now.Sub(o.at) >= recordDuration(l) {
			return nil
		}
		if o.renewed && !now.Before(until) {
			return inProgress(r, now.Sub(started))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s, held by %s: %w", r, l.Holder, ctx.Err())
		case <-tick.C:
		}
		fresh, err := c.History.Get(ctx, r.Namespace, r.Name, r.Revision)
		if errors.Is(err, driver.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("waiting for %s, held by %s: %w", r, l.Holder, err)
		}
		if fresh.Lease == nil || fresh.Lease.Holder.ID != l.Holder.ID || fresh.Status != r.Status {
			return nil
		}
		observe(seen, fresh, time.Now())
	}
}

// inProgress is the error of an action that waited for a live holder.
func inProgress(r *release.Record, waited time.Duration) error {
	l := r.Lease
	// How long it has held the lease, from its renewals: no clock but
	// this one's is trusted, and the holder's renewals are spaced by its
	// own period.
	held := fmt.Sprintf("for about %s: %d renewals", (time.Duration(l.Renewals) * l.RenewPeriod).Round(time.Second), l.Renewals)
	if l.Renewals == 0 {
		held = fmt.Sprintf("for less than its renew period, %s", l.RenewPeriod)
	}
	return derrors.Errorf(ErrInProgress,
		"another operation (%s) is in progress on deployment %s/%s: %s holds revision %d (%s; since %s by its clock); waited %s (--wait-for-lock); try again when it is done",
		l.Operation, r.Namespace, r.Name, l.Holder, r.Revision, held,
		l.Acquired.Format(time.RFC3339), waited.Round(100*time.Millisecond))
}

// interruptedDescription starts the description of a revision that a dm
// did not finish applying.
const interruptedDescription = "interrupted: the dm that was applying this revision did not finish"

// takeOver takes r from a holder that died: a pending revision is marked
// failed ("interrupted", naming the holder and for how long nobody renewed
// its lease), any other record loses the lease. A conflict (the holder
// wrote after all) is not an error: the history is read again.
func (c *Config) takeOver(ctx context.Context, r *release.Record, silent time.Duration) error {
	l := r.Lease
	r.Lease = nil
	what := "its lease"
	if r.Status == release.StatusPending {
		r.Status = release.StatusFailed
		r.Description = interruptedDescription
		if l != nil {
			r.Description += fmt.Sprintf(" (%s, %s; no renewal of its lease for %s; taken over by %s)",
				l.Holder, l.Operation, silent.Round(100*time.Millisecond), c.taker())
		}
		r.Updated = c.now()
		what = "marked failed"
	}
	err := c.History.Update(ctx, r)
	if errors.Is(err, driver.ErrConflict) || errors.Is(err, driver.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("taking over %s: %w", r, err)
	}
	switch {
	case l == nil:
		c.logf("dm: %s was left pending by an interrupted dm; marked failed", r)
	case r.Status == release.StatusFailed:
		c.logf("dm: %s was left pending by %s, which stopped renewing its lease %s ago (it died or lost the cluster); %s", r, l.Holder, silent.Round(100*time.Millisecond), what)
	default:
		c.logf("dm: %s: %s, which held it (%s), stopped renewing its lease %s ago; lease removed", r, l.Holder, l.Operation, silent.Round(100*time.Millisecond))
	}
	return nil
}

// self is Config.Holder with this process's host and pid filled in.
func (c *Config) self() release.Holder {
	h := c.Holder
	if h.Host == "" {
		h.Host, _ = os.Hostname()
	}
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	return h
}

// taker names this process in a record it takes over.
func (c *Config) taker() string {
	h := c.self()
	s := "dm pid " + strconv.Itoa(h.PID) + " on host " + h.Host
	if h.Pod != "" {
		s = "dm-controller pod " + h.Pod + " (" + s[3:] + ")"
	}
	return s
}

// hold is a lease that an action holds on a record: renewed in the
// background until the action's final write of the record (or stop), and
// lost, stopping the action at once, if another dm took the record over.
type hold struct {
	c      *Config
	lease  *release.Lease
	period time.Duration
	// deadline is how long the holder goes without a successful renewal
	// before it stops applying: before any waiter may count the lease
	// expired (a renewal period earlier).
	deadline time.Duration

	mu sync.Mutex
	// snap is the record as the renewer writes it: as it was taken, with
	// the lease renewed; its StorageVersion is the record's latest.
	snap   *release.Record
	done   bool
	lost   error
	lastOK time.Time

	cancel   context.CancelCauseFunc
	stopOnce sync.Once
	stop     chan struct{}
	exited   chan struct{}
}

// errLeaseLost marks the error of an action whose lease another dm took.
var errLeaseLost = errors.New("lease lost")

// holdLease starts renewing the lease rec was written with (rec as just
// written, its StorageVersion current). The context returned is ctx,
// canceled when the lease is lost; the action applies under it.
func (c *Config) holdLease(ctx context.Context, rec *release.Record) (context.Context, *hold, error) {
	snap, err := cloneRecord(rec)
	if err != nil {
		return nil, nil, err
	}
	actx, cancel := context.WithCancelCause(ctx)
	h := &hold{
		c: c, lease: snap.Lease, period: snap.Lease.RenewPeriod,
		deadline: snap.Lease.Duration - snap.Lease.RenewPeriod,
		snap:     snap, lastOK: time.Now(),
		cancel: cancel, stop: make(chan struct{}), exited: make(chan struct{}),
	}
	// Renewals go on after ctx ends (Ctrl-C): the action's final write,
	// which still runs, ends them.
	go h.run(context.WithoutCancel(ctx))
	return actx, h, nil
}

// cloneRecord deep-copies r through its stored form: the action changes
// the objects of its record (deferred references filled) while the
// renewer writes the record.
func cloneRecord(r *release.Record) (*release.Record, error) {
	b, err := driver.Encode(r)
	if err != nil {
		return nil, err
	}
	c, err := driver.Decode(b, 0)
	if err != nil {
		return nil, fmt.Errorf("copying %s: %w", r, err)
	}
	c.StorageVersion = r.StorageVersion
	return c, nil
}

func (h *hold) run(ctx context.Context) {
	defer close(h.exited)
	t := time.NewTicker(h.period)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.renew(ctx)
	}
}

// renew renews the lease once. A write refused as a conflict is retried
// on the record as it is now if the lease is still this action's (the
// previous renewal was written although its answer was lost); else the
// lease was taken, and the action is stopped.
func (h *hold) renew(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	if silent := time.Since(h.lastOK); silent >= h.deadline {
		h.lose(fmt.Errorf("this dm could not renew its lease on %s for %s, and stopped applying so that another dm may take over; re-run: %w",
			h.snap, silent.Round(100*time.Millisecond), derrors.Unavailable))
		return
	}
	for attempt := 0; attempt < 2; attempt++ {
		h.snap.Lease.Renewals++
		h.snap.Lease.Renewed = h.c.now()
		rctx, cancel := context.WithTimeout(ctx, h.period)
		err := h.c.History.Update(rctx, h.snap)
		cancel()
		switch {
		case err == nil:
			h.lastOK = time.Now()
			return
		case errors.Is(err, driver.ErrConflict) || errors.Is(err, driver.ErrNotFound):
			fresh, gerr := h.c.History.Get(ctx, h.snap.Namespace, h.snap.Name, h.snap.Revision)
			if gerr != nil && !errors.Is(gerr, driver.ErrNotFound) {
				h.c.logf("dm: warning: renewing the lease on %s: %v", h.snap, gerr)
				return
			}
			if fresh == nil || !ours(fresh, h.lease) || fresh.Status != h.snap.Status {
				h.lose(takenError(h.snap, fresh))
				return
			}
			h.snap.StorageVersion, h.snap.Lease.Renewals = fresh.StorageVersion, fresh.Lease.Renewals
		default:
			h.c.logf("dm: warning: renewing the lease on %s: %v", h.snap, err)
			return
		}
	}
}

// takenError describes what became of rec, whose lease this action lost:
// fresh is the record now (nil: deleted).
func takenError(rec, fresh *release.Record) error {
	now := "was deleted"
	switch {
	case fresh == nil:
	case fresh.Lease != nil:
		now = fmt.Sprintf("is held by %s (%s)", fresh.Lease.Holder, fresh.Lease.Operation)
	default:
		now = fmt.Sprintf("is %s: %s", fresh.Status, fresh.Description)
	}
	return derrors.Errorf(ErrInProgress, "another dm took over %s while this one held it (the record %s); this dm stopped at once: %w", rec, now, errLeaseLost)
}

// lose records the lease lost and stops the action (h.mu held).
func (h *hold) lose(err error) {
	h.lost, h.done = err, true
	h.c.logf("dm: %v", err)
	h.cancel(err)
}

// finish writes rec, the action's final form of the record, without the
// lease, and stops the renewals: they never overwrite it, and a renewal's
// conflict it meets is retried on the record as it is, while the lease is
// still this action's. A lost lease is the error, and nothing is written.
func (h *hold) finish(ctx context.Context, rec *release.Record) error {
	defer h.end()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	h.done = true
	rec.Lease = nil
	rec.StorageVersion = h.snap.StorageVersion
	for attempt := 0; ; attempt++ {
		err := h.c.History.Update(ctx, rec)
		if !errors.Is(err, driver.ErrConflict) || attempt == 3 {
			return err
		}
		fresh, gerr := h.c.History.Get(ctx, rec.Namespace, rec.Name, rec.Revision)
		if gerr != nil && !errors.Is(gerr, driver.ErrNotFound) {
			return errors.Join(err, gerr)
		}
		if fresh == nil || !ours(fresh, h.lease) {
			h.lost = takenError(rec, fresh)
			return h.lost
		}
		rec.StorageVersion = fresh.StorageVersion
	}
}

// release stops the renewals without writing (the caller deletes the
// record, or leaves it to expire); a lost lease is the error.
func (h *hold) release() error {
	defer h.end()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	return h.lost
}

// lostErr is the error the lease was lost with, or nil.
func (h *hold) lostErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// end stops the renewer and waits for it.
func (h *hold) end() {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.exited
	h.cancel(nil)
}
