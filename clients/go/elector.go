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

// fatal: the server refuses the configuration itself (bad token, scope, field; a lease name that
// is a sharded group's record, a group name taken by a lease, a lease with no term left):
// retrying cannot help.
func fatal(err error) bool {
	p := asProblem(err)
	if p == nil {
		return false
	}
	switch p.Status {
	case 400, 401, 403, 405, 413, 415:
		return true
	}
	switch p.Kind {
	case "group-record", "not-a-group", "term-exhausted":
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
