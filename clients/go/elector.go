package leasehold

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Config is an Elector's settings, in client-go's shape (leaderelection.LeaderElectionConfig).
type Config struct {
	// Client reaches the API. Required.
	Client *Client
	// Name is the lease name (a-z 0-9 . _ / -, for example "adapters/billing"). Required.
	Name string
	// Identity is this candidate's holder name, as others see it. Default: the host name and a
	// random suffix. Two live processes must never share one.
	Identity string
	// Instance is a random id this process picks once (16-64 characters); it proves to the
	// server that a renewal comes from the process that acquired. Default: 32 random hex digits.
	Instance string
	Timing
	// ReleaseOnCancel releases the lease when ctx ends, after OnStartedLeading has returned (or
	// Grace has passed), so a follower takes over at once instead of after the lease.
	ReleaseOnCancel bool
	// Metadata is a small string map stored with the lease (at most 1 KiB as JSON), for
	// example this leader's address.
	Metadata  map[string]string
	Callbacks Callbacks
	// Clock is the time decisions are made with. Default SystemClock.
	Clock Clock
	// Logger receives failed calls and leadership changes. Default: none.
	Logger *slog.Logger
}

// Callbacks are client-go's leader callbacks, with the term.
type Callbacks struct {
	// OnStartedLeading runs in its own goroutine when this candidate becomes leader. ctx is
	// cancelled the moment leadership ends (a lost renewal, the window closing, ctx ending);
	// term is the fencing token to send with every write downstream. Required.
	OnStartedLeading func(ctx context.Context, term int64)
	// OnStoppedLeading runs after a term ended and its OnStartedLeading returned. Unlike
	// client-go, never when this candidate has not led.
	OnStoppedLeading func()
	// OnNewLeader runs, in order, each time the observed holder changes ("" when the lease is
	// free), this candidate included.
	OnNewLeader func(identity string)
}

// Elector campaigns for one lease over the API's stateless routes (acquire, renew, release),
// keeping docs/design.md §3's rules on its own monotonic clock:
//
//   - leader until sentAt + LeaseDuration - SafetyMargin, sentAt being when the last successful
//     acquire or renew was sent; a watchdog cancels the term's context at that instant even while
//     a call hangs, and StillLeader reads the clock when asked;
//   - a follower follows the watch stream (Server-Sent Events) and acquires at the observed
//     expiry (the revision unchanged for the holder's lease on its own clock) or when the server
//     says the lease is free;
//   - an ambiguous answer (no answer, a timeout, a 5xx) is settled by sending the same call again,
//     never guessed: acquire and renew are idempotent for the holder that holds the lease;
//   - a term once ended is never led again; the release is sent only after OnStartedLeading
//     returned (bounded by Grace).
type Elector struct {
	client   *Client
	name     string
	identity string
	instance string
	t        timing
	release  bool
	metadata map[string]string
	cb       Callbacks
	clock    Clock
	log      *slog.Logger

	running atomic.Bool
	wake    chan struct{}

	mu        sync.Mutex
	held      *tenure
	lastLed   int64
	obs       observation
	watchLive bool
	leaders   chan string
	reported  *string
}

type observation struct {
	known bool
	// lease is the record last seen, nil when the lease does not exist.
	lease *Lease
	// free: the server said so (a watch event), or the record has no holder.
	free bool
	// seenAt is when this revision was first seen, on the monotonic clock.
	seenAt time.Time
}

// tenure is one term led by this elector.
type tenure struct {
	term     int64
	lease    Lease
	sentAt   time.Time
	until    time.Time
	ctx      context.Context
	cancel   context.CancelFunc
	watchdog Timer
	lost     chan struct{}
	reason   string
	// done is closed when OnStartedLeading has returned.
	done chan struct{}
}

// NewElector checks cfg and returns an elector; configuration that cannot be right is an error
// naming each bad field, and nothing starts.
func NewElector(cfg Config) (*Elector, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, &ConfigError{Field: "Client", Message: "expected a *leasehold.Client (NewClient)"})
	}
	checkName("Name", cfg.Name, 192, &errs)
	identity := cfg.Identity
	if identity == "" {
		identity = defaultIdentity()
	}
	checkHolder("Identity", identity, &errs)
	instance := instanceOrNew(cfg.Instance, &errs)
	t := cfg.Timing.resolve(&errs)
	checkMetadata(cfg.Metadata, &errs)
	if cfg.Callbacks.OnStartedLeading == nil {
		errs = append(errs, &ConfigError{Field: "Callbacks.OnStartedLeading", Message: "expected a function (ctx, term): the leader's work"})
	}
	if err := configError(errs); err != nil {
		return nil, err
	}
	clock, log := defaults(cfg.Clock, cfg.Logger)
	return &Elector{
		client: cfg.Client, name: cfg.Name, identity: identity, instance: instance, t: t,
		release: cfg.ReleaseOnCancel, metadata: cfg.Metadata, cb: cfg.Callbacks, clock: clock,
		log: log.With("lease", cfg.Name, "identity", identity), wake: make(chan struct{}, 1),
	}, nil
}

// Run builds an elector from cfg and campaigns until ctx ends (see Elector.Run).
func Run(ctx context.Context, cfg Config) error {
	e, err := NewElector(cfg)
	if err != nil {
		return err
	}
	return e.Run(ctx)
}

// Identity is this candidate's holder name.
func (e *Elector) Identity() string { return e.identity }

// Instance is this process's random id.
func (e *Elector) Instance() string { return e.instance }

// StillLeader reports whether this elector leads and its safe window is open, reading the clock
// at the moment of asking: call it right before each side effect. A process paused past its
// window (SIGSTOP, a long GC, a VM migration) sees false on waking, before any timer has run,
// and the term ends at once.
func (e *Elector) StillLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.held
	if t == nil || isClosed(t.lost) {
		return false
	}
	if e.clock.Now().Before(t.until) {
		return true
	}
	e.loseLocked(t, "expired")
	return false
}

// Term is the term this elector leads, 0 when it does not (StillLeader also checks the clock).
func (e *Elector) Term() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held == nil || isClosed(e.held.lost) {
		return 0
	}
	return e.held.term
}

// Leader is the holder last observed ("" when free) and its term.
func (e *Elector) Leader() (identity string, term int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held != nil && !isClosed(e.held.lost) {
		return e.identity, e.held.term
	}
	if e.obs.lease == nil {
		return "", 0
	}
	return e.obs.lease.Holder, e.obs.lease.Term
}

// Check is for a health endpoint, as client-go's HealthzAdaptor: an error when this elector
// believes it leads although its window closed more than tolerance ago (its goroutines are
// stuck), nil otherwise.
func (e *Elector) Check(tolerance time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.held
	if t == nil || isClosed(t.lost) {
		return nil
	}
	if late := e.clock.Now().Sub(t.until); late > tolerance {
		return fmt.Errorf("leasehold: %s still counts itself leader of %q term %d %v after its window closed", e.identity, e.name, t.term, late)
	}
	return nil
}

// Run campaigns until ctx ends: it follows the lease, leads whenever it wins a term (calling
// OnStartedLeading, then OnStoppedLeading once the term ended and the callback returned), and
// campaigns again. It returns nil when ctx ends, after the release when ReleaseOnCancel is set;
// an error when the server refuses the configuration itself (401, 403, 400), or when Run is
// already running.
func (e *Elector) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("leasehold: this Elector is already running")
	}
	defer e.running.Store(false)
	follow, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	leaders := make(chan string, 64)
	e.mu.Lock()
	e.leaders = leaders
	e.mu.Unlock()
	notified := make(chan struct{})
	go e.notifyLeaders(leaders, notified)
	defer func() {
		e.mu.Lock()
		e.leaders = nil
		e.mu.Unlock()
		close(leaders)
		<-notified
	}()
	go e.follow(follow)
	for ctx.Err() == nil {
		t, err := e.campaign(ctx)
		if err != nil {
			return err
		}
		if t == nil {
			return nil
		}
		err = e.lead(ctx, t)
		if e.cb.OnStoppedLeading != nil {
			e.cb.OnStoppedLeading()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ---- follower ----

// campaign returns the next term won, nil when ctx ended, or an error the configuration caused.
func (e *Elector) campaign(ctx context.Context) (*tenure, error) {
	// Terms this elector may have started with an acquire whose answer it never got.
	pending := map[int64]bool{}
	// After a refusal, the next try waits (notBefore) unless what was refused changes.
	var notBefore time.Time
	var refused observation
	var lastRead time.Time
	for ctx.Err() == nil {
		now := e.clock.Now()
		e.mu.Lock()
		o, live := e.obs, e.watchLive
		e.mu.Unlock()
		pollEvery := e.t.retryDelay()
		if live {
			// The stream pushes every change; a read only backs it up (a stream can stall).
			pollEvery = max(pollEvery, e.t.lease)
		}
		if !o.known || now.Sub(lastRead) >= pollEvery {
			lastRead = now
			lease, err := e.read(ctx)
			if err != nil {
				if fatal(err) {
					return nil, err
				}
				sleep(ctx, e.clock, e.t.retryDelay(), nil)
				continue
			}
			e.observe(lease, lease == nil || lease.Holder == "")
			continue
		}
		at := e.takeoverAt(o)
		if o.seenAt.Equal(refused.seenAt) && o.free == refused.free && at.Before(notBefore) {
			at = notBefore
		}
		if now.Before(at) {
			wait := min(at.Sub(now), lastRead.Add(pollEvery).Sub(now))
			sleep(ctx, e.clock, wait, e.wake)
			continue
		}
		if o.lease != nil && o.lease.Holder == e.identity && o.lease.Term <= e.lastLedTerm() && !o.free {
			// Our own term, which ended here (its window closed) though the server may still
			// count it held: a term once ended is never led again. Its work has stopped, so free
			// it, and take the next term.
			if err := e.releaseTerm(ctx, o.lease.Term); err != nil && fatal(err) {
				return nil, err
			}
			continue
		}
		t, retryAt, err := e.acquire(ctx, o, pending)
		if err != nil {
			return nil, err
		}
		if t != nil {
			return t, nil
		}
		notBefore = retryAt
		e.mu.Lock()
		refused = e.obs
		e.mu.Unlock()
	}
	return nil, nil
}

// takeoverAt is when the observed lease may be taken: now when free, else once its revision has
// stayed unchanged for the holder's lease on this clock (client-go's observed time). A record
// held under this candidate's identity but not by this process (a predecessor with the same
// identity) is waited out the same way: nothing proves it is ours.
func (e *Elector) takeoverAt(o observation) time.Time {
	if o.lease == nil || o.free || o.lease.Holder == "" {
		return o.seenAt
	}
	return o.seenAt.Add(o.lease.LeaseDuration)
}

// acquire sends one acquire. It returns the term won; or when to try again (a refusal of a lease
// still held by the server's rule, a lost or failed call); or an error of the configuration.
func (e *Elector) acquire(ctx context.Context, o observation, pending map[int64]bool) (*tenure, time.Time, error) {
	base := int64(0)
	if o.lease != nil {
		base = o.lease.Term
	}
	callCtx, cancel := context.WithTimeout(ctx, e.t.call)
	sentAt := e.clock.Now()
	res, err := e.client.Acquire(callCtx, e.name, AcquireRequest{
		Holder: e.identity, Instance: e.instance, LeaseDuration: e.t.lease, Metadata: e.metadata,
	})
	cancel()
	now := e.clock.Now()
	switch {
	case err == nil && res.Leader && res.Lease.Holder == e.identity:
		term := res.Lease.Term
		// Started by this acquire (term + 1 over what it acted on) or by an earlier one of ours
		// whose answer was lost; anything else is a term held under our identity that we did not
		// start, or one we led and ended.
		ours := (term == base+1 || pending[term]) && term > e.lastLedTerm()
		if !ours {
			e.log.Info("granted a term it did not start or already ended: releasing it to take the next", "term", term)
			e.observe(&res.Lease, false)
			if err := e.releaseTerm(ctx, term); err != nil && fatal(err) {
				return nil, time.Time{}, err
			}
			return nil, time.Time{}, nil
		}
		if !now.Before(sentAt.Add(e.t.lease - e.t.safety)) {
			// The answer came after its window closed: it grants nothing. The term counts as
			// ended; the next campaign releases it and takes the one after.
			e.setLastLed(term)
			e.observe(&res.Lease, false)
			return nil, time.Time{}, nil
		}
		return &tenure{term: term, lease: res.Lease, sentAt: sentAt, until: sentAt.Add(e.t.lease - e.t.safety)}, time.Time{}, nil
	case err == nil:
		e.observe(&res.Lease, res.Lease.Holder == "")
		return nil, now.Add(e.t.retryDelay()), nil
	case IsAmbiguous(err):
		// It may have applied: the same acquire again settles it (a holder's acquire of its own
		// lease is a renewal), and a term it started is recognised as ours.
		pending[base+1] = true
		e.log.Warn("acquire got no clear answer; sending it again", "error", err)
		return nil, now.Add(e.t.retryDelay() / 4), nil
	case ProblemKind(err) == "conflict":
		// Held by another holder by the server's rule (its skew bound ends later than our
		// observed expiry): wait for the free event, or retry.
		var p *Problem
		errors.As(err, &p)
		if p.Lease != nil {
			e.observe(p.Lease, false)
		}
		return nil, now.Add(e.t.retryDelay()), nil
	case fatal(err):
		return nil, time.Time{}, err
	default:
		e.log.Warn("acquire refused", "error", err)
		return nil, now.Add(e.t.retryDelay()), nil
	}
}

// read is one GET of the lease.
func (e *Elector) read(ctx context.Context) (*Lease, error) {
	callCtx, cancel := context.WithTimeout(ctx, e.t.call)
	defer cancel()
	lease, err := e.client.Get(callCtx, e.name)
	if err != nil && !fatal(err) {
		e.log.Warn("read failed", "error", err)
	}
	return lease, err
}

// observe records what the server showed; a new revision restarts the observed time.
func (e *Elector) observe(lease *Lease, free bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observeLocked(lease, free, e.clock.Now())
}

func (e *Elector) observeLocked(lease *Lease, free bool, at time.Time) {
	sameRevision := e.obs.known && (e.obs.lease == nil) == (lease == nil) &&
		(lease == nil || e.obs.lease.Revision == lease.Revision)
	if !sameRevision {
		e.obs = observation{known: true, lease: lease, free: free, seenAt: at}
	} else if free {
		e.obs.free = true
	}
	holder := ""
	if lease != nil && !free {
		holder = lease.Holder
	}
	e.reportLocked(holder)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// follow keeps a watch stream open while Run runs and feeds its events to the campaign.
func (e *Elector) follow(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := e.client.Watch(ctx, e.name, "")
		if err == nil {
			e.setWatchLive(true)
			for {
				ev, err := w.Next()
				if err != nil {
					break
				}
				e.mu.Lock()
				if e.held == nil {
					e.observeLocked(ev.Lease, ev.Free || ev.Lease == nil || ev.Lease.Holder == "", e.clock.Now())
				}
				e.mu.Unlock()
			}
			_ = w.Close()
			e.setWatchLive(false)
		} else if ctx.Err() == nil {
			e.log.Warn("watch failed", "error", err)
		}
		sleep(ctx, e.clock, e.t.retryDelay(), nil)
	}
}

func (e *Elector) setWatchLive(live bool) {
	e.mu.Lock()
	e.watchLive = live
	e.mu.Unlock()
}

// ---- leader ----

// lead runs one term: the callback, the renewals, the watchdog; on ctx's end the graceful stop.
// It returns once the term has ended and OnStartedLeading has returned (or, on a graceful stop,
// Grace has passed).
func (e *Elector) lead(ctx context.Context, t *tenure) error {
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.lost = make(chan struct{})
	t.done = make(chan struct{})
	e.mu.Lock()
	e.held = t
	e.lastLed = t.term
	e.armLocked(t)
	e.reportLocked(e.identity)
	e.mu.Unlock()
	e.log.Info("leading", "term", t.term)
	go func() {
		defer close(t.done)
		e.cb.OnStartedLeading(t.ctx, t.term)
	}()

	next := t.sentAt.Add(e.t.renew)
	var grace <-chan struct{}
	stopping := false
	for {
		if !stopping && ctx.Err() != nil {
			// Graceful stop: the work is told to stop, and renewals go on while it finishes.
			stopping = true
			t.cancel()
			g := make(chan struct{})
			timer := e.clock.AfterFunc(e.t.grace, func() { close(g) })
			defer timer.Stop()
			grace = g
		}
		if stopping && (isClosed(t.done) || isClosed(grace)) {
			if e.release {
				e.releaseHeld(t)
			}
			e.lose(t, "stopped")
			return nil
		}
		timer := make(chan struct{})
		wait := e.clock.AfterFunc(next.Sub(e.clock.Now()), func() { close(timer) })
		var stop <-chan struct{}
		if !stopping {
			stop = ctx.Done()
		}
		var done <-chan struct{}
		if stopping {
			done = t.done
		}
		select {
		case <-timer:
		case <-stop:
		case <-done:
		case <-grace:
		case <-t.lost:
		}
		wait.Stop()
		if isClosed(t.lost) {
			<-t.done // one callback at a time: the next term starts after this one returned
			return nil
		}
		if e.clock.Now().Before(next) {
			continue
		}
		res, err := e.renew(t)
		if isClosed(t.lost) {
			continue
		}
		switch {
		case err == nil && res.Leader && res.Lease.Term == t.term:
			next = t.sentAt.Add(e.t.renew)
		case err == nil || (!IsAmbiguous(err) && !fatal(err)):
			// Refused (409, 404, or an answer without us): the term is over.
			e.log.Warn("renewal refused: leadership lost", "term", t.term, "error", err)
			e.lose(t, "conflict")
			var p *Problem
			if errors.As(err, &p) && p.Lease != nil {
				e.observe(p.Lease, p.Lease.Holder == "")
			}
		case fatal(err):
			e.lose(t, "refused")
			<-t.done
			return err
		default:
			e.log.Warn("renewal got no clear answer; sending it again", "term", t.term, "error", err)
			e.mu.Lock()
			until := t.until
			e.mu.Unlock()
			next = e.clock.Now().Add(e.t.retryDelay())
			if until.Before(next) {
				next = until
			}
		}
	}
}

// renew sends one renewal of t, bounded by the time left in its window. A success moves the
// window to this renewal's send time.
func (e *Elector) renew(t *tenure) (LeaseResult, error) {
	sentAt := e.clock.Now()
	e.mu.Lock()
	until := t.until
	e.mu.Unlock()
	if !sentAt.Before(until) {
		e.lose(t, "expired")
		return LeaseResult{}, nil
	}
	callCtx, cancel := context.WithTimeout(context.Background(), min(e.t.call, until.Sub(sentAt)))
	defer cancel()
	res, err := e.client.Renew(callCtx, e.name, HolderTerm{Holder: e.identity, Instance: e.instance, Term: t.term})
	if err == nil && res.Leader && res.Lease.Term == t.term {
		e.mu.Lock()
		if e.held == t && !isClosed(t.lost) {
			if e.clock.Now().Before(sentAt.Add(e.t.lease - e.t.safety)) {
				t.lease, t.sentAt, t.until = res.Lease, sentAt, sentAt.Add(e.t.lease-e.t.safety)
				e.armLocked(t)
			}
		}
		e.mu.Unlock()
	}
	return res, err
}

// armLocked sets the watchdog for t's window.
func (e *Elector) armLocked(t *tenure) {
	if t.watchdog != nil {
		t.watchdog.Stop()
	}
	t.watchdog = e.clock.AfterFunc(t.until.Sub(e.clock.Now()), func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.held == t && !e.clock.Now().Before(t.until) {
			e.loseLocked(t, "expired")
		}
	})
}

func (e *Elector) lose(t *tenure, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loseLocked(t, reason)
}

// loseLocked ends t: its context is cancelled, and what it last wrote is what followers see
// (observed at its send time, so a takeover by this elector waits out its own window too).
func (e *Elector) loseLocked(t *tenure, reason string) {
	if e.held != t || isClosed(t.lost) {
		return
	}
	t.reason = reason
	close(t.lost)
	t.cancel()
	if t.watchdog != nil {
		t.watchdog.Stop()
	}
	e.held = nil
	lease := t.lease
	e.obs = observation{known: true, lease: &lease, seenAt: t.sentAt}
	e.log.Info("leadership ended", "term", t.term, "reason", reason)
}

// releaseHeld frees the lease after the work stopped, retrying an ambiguous answer (a release of
// the same term is idempotent) while the window is open; after it the lease runs out by itself.
func (e *Elector) releaseHeld(t *tenure) {
	for attempt := 0; attempt < 5; attempt++ {
		e.mu.Lock()
		until, alive := t.until, e.held == t && !isClosed(t.lost)
		e.mu.Unlock()
		left := until.Sub(e.clock.Now())
		if !alive || left <= 0 {
			return
		}
		callCtx, cancel := context.WithTimeout(context.Background(), min(e.t.call, left))
		res, err := e.client.Release(callCtx, e.name, HolderTerm{Holder: e.identity, Instance: e.instance, Term: t.term})
		cancel()
		if err == nil {
			e.mu.Lock()
			t.lease = res.Lease
			e.reportLocked(res.Lease.Holder)
			e.mu.Unlock()
			return
		}
		if !IsAmbiguous(err) {
			e.log.Warn("release refused", "term", t.term, "error", err)
			return
		}
		sleep(context.Background(), e.clock, min(e.t.retryDelay()/4, left), nil)
	}
}

// releaseTerm frees a term of ours that has ended here (its work stopped), so the next acquire
// takes term + 1; the record it answers is observed.
func (e *Elector) releaseTerm(ctx context.Context, term int64) error {
	callCtx, cancel := context.WithTimeout(ctx, e.t.call)
	defer cancel()
	res, err := e.client.Release(callCtx, e.name, HolderTerm{Holder: e.identity, Instance: e.instance, Term: term})
	if err == nil {
		e.observe(&res.Lease, res.Lease.Holder == "")
		return nil
	}
	var p *Problem
	if errors.As(err, &p) && p.Lease != nil {
		e.observe(p.Lease, p.Lease.Holder == "")
	} else {
		sleep(ctx, e.clock, e.t.retryDelay()/4, nil)
	}
	return err
}

func (e *Elector) lastLedTerm() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastLed
}

func (e *Elector) setLastLed(term int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastLed = max(e.lastLed, term)
}

// ---- leader notifications ----

func (e *Elector) reportLocked(holder string) {
	if e.reported != nil && *e.reported == holder {
		return
	}
	e.reported = &holder
	if e.leaders == nil || e.cb.OnNewLeader == nil {
		return
	}
	select {
	case e.leaders <- holder:
	default:
		// 64 changes behind: the callback is stuck; the newest state is what matters.
		e.log.Warn("OnNewLeader is behind; a change was not reported", "holder", holder)
	}
}

func (e *Elector) notifyLeaders(leaders <-chan string, done chan<- struct{}) {
	defer close(done)
	for holder := range leaders {
		if e.cb.OnNewLeader != nil {
			e.cb.OnNewLeader(holder)
		}
	}
}

// fatal: the server refuses the configuration itself (bad token, scope, field): retrying cannot help.
func fatal(err error) bool {
	var p *Problem
	if !errors.As(err, &p) {
		return false
	}
	switch p.Status {
	case 400, 401, 403, 405, 413, 415:
		return true
	}
	return false
}

func isClosed(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}
