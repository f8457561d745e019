package leasehold

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// MemberConfig is a sharded member's settings (docs/sharding.md, "Over HTTP").
type MemberConfig struct {
	// Client reaches the API. Required.
	Client *Client
	// Group is the group name (a-z 0-9 . _ / -, at most 160 characters). Required.
	Group string
	// Member is this member's id, unique in the group and stable across restarts (a pod or host
	// name): a-z 0-9 . _ -, 1-64 characters. Default: a random "m-xxxxxxxx".
	Member string
	// Instance is a random id this process picks once (16-64 characters): the server renews a
	// session only for the instance that started it. Default: 32 random hex digits.
	Instance string
	// Buckets is the count a new group starts with (1 to 4096); an existing group keeps its own.
	// 0 joins an existing group only.
	Buckets int
	Timing
	// Clock is the time decisions are made with. Default SystemClock.
	Clock Clock
	// Logger receives failed calls and changes of what is held. Default: none.
	Logger *slog.Logger
}

// Bucket is one bucket this member works on, for one tenure.
type Bucket struct {
	// Index is the bucket, 0 to Buckets - 1: work on the keys with BucketOf(key, Buckets) == Index.
	Index int
	// Buckets is the group's bucket count N.
	Buckets int
	// Term is the bucket's fencing token: send it with every write for its keys.
	Term int64
	m    *member
	t    *bucketTenure
}

// StillLeader reports whether this tenure is still held and the session's window is open,
// reading the clock when asked: call it right before each side effect.
func (b Bucket) StillLeader() bool { return b.m.holds(b.t) }

// RunSharded joins the group as a remote member and calls work once per bucket tenure it is
// given, with a context cancelled the moment that tenure ends (the bucket asked for, the
// session's window closed, ctx ending); a bucket's next call starts only after its previous one
// returned. A work that returns while its bucket is held leaves the bucket idle with this member
// until it moves; a work that returns an error makes the member leave the group, and RunSharded
// returns that error. When ctx ends, every bucket's work is stopped (waited for at most Grace),
// the session is left (every bucket free for the others at once), and RunSharded returns nil.
//
// The rules are docs/sharding.md's ("What a remote member must do"): the session's window is
// sentAt + LeaseDuration - SafetyMargin of the last heartbeat whose answer was acted on, on this
// clock; a heartbeat names the session only while that window is open, and its call is bounded by
// what is left of it; once the window has closed, the next heartbeat starts the next session,
// naming the one it worked under, so every bucket comes back at a new term (or moves); an answer
// that arrives after it could be acted on grants nothing; a term once stopped is never started
// again, and a bucket listed at such a term is confirmed as stopped (the server moves it on with a
// new term); a hand-off is confirmed only after its work returned.
func RunSharded(ctx context.Context, cfg MemberConfig, work func(ctx context.Context, b Bucket) error) error {
	m, err := newMember(cfg, work)
	if err != nil {
		return err
	}
	return m.run(ctx)
}

type member struct {
	client   *Client
	group    string
	id       string
	instance string
	buckets  int
	t        timing
	clock    Clock
	log      *slog.Logger
	work     func(ctx context.Context, b Bucket) error

	failed chan error

	mu sync.Mutex
	// session is the session whose window is open until deadline (0: none).
	session  int64
	deadline time.Time
	// worked is the newest session this process worked under: a start names it (Ended).
	worked   int64
	watchdog Timer
	running  map[int]*bucketTenure
	// ended is, per bucket, the highest term whose work this process stopped.
	ended map[int]int64
	// last is each bucket's latest tenure, running or stopping (a new one waits for it).
	last map[int]*bucketTenure
	// confirming is, per bucket, the term whose hand-off confirmation is in flight.
	confirming map[int]int64
	confirms   sync.WaitGroup
}

type bucketTenure struct {
	bucket  int
	term    int64
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func newMember(cfg MemberConfig, work func(ctx context.Context, b Bucket) error) (*member, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, &ConfigError{Field: "Client", Message: "expected a *leasehold.Client (NewClient)"})
	}
	checkName("Group", cfg.Group, 160, &errs)
	id := cfg.Member
	if id == "" {
		id = "m-" + randomHex(4)
	}
	if !memberPattern.MatchString(id) {
		errs = append(errs, &ConfigError{Field: "Member", Message: fmt.Sprintf("expected 1-64 characters of a-z 0-9 . _ -, starting and ending with a letter or digit, got %q", id)})
	}
	instance := instanceOrNew(cfg.Instance, &errs)
	if cfg.Buckets < 0 || cfg.Buckets > MaxBuckets {
		errs = append(errs, &ConfigError{Field: "Buckets", Message: fmt.Sprintf("expected 1 to %d (or 0 to join an existing group), got %d", MaxBuckets, cfg.Buckets)})
	}
	t := cfg.Timing.resolve(&errs)
	if work == nil {
		errs = append(errs, &ConfigError{Field: "work", Message: "expected a function (ctx, bucket) error"})
	}
	if err := configError(errs); err != nil {
		return nil, err
	}
	clock, log := defaults(cfg.Clock, cfg.Logger)
	return &member{
		client: cfg.Client, group: cfg.Group, id: id, instance: instance, buckets: cfg.Buckets, t: t,
		clock: clock, log: log.With("group", cfg.Group, "member", id), work: work,
		failed: make(chan error, 1), running: map[int]*bucketTenure{}, ended: map[int]int64{},
		last: map[int]*bucketTenure{}, confirming: map[int]int64{},
	}, nil
}

func (m *member) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			m.leave()
			return nil
		case err := <-m.failed:
			m.leave()
			return err
		default:
		}
		sentAt := m.clock.Now()
		m.mu.Lock()
		req := HeartbeatRequest{Instance: m.instance, LeaseDuration: m.t.lease, Buckets: m.buckets}
		// The answer is acted on only before usable: a renewal's, the open window's end; a start's,
		// the end of the window it would grant.
		usable := sentAt.Add(m.t.lease - m.t.safety)
		if m.session > 0 && sentAt.Before(m.deadline) {
			req.Session, usable = m.session, m.deadline
		} else {
			// The window closed (the watchdog may not have run yet): nothing runs under it, and
			// the next session starts on top of the newest one this process worked under.
			m.stopAllLocked()
			m.session, req.Ended = 0, m.worked
		}
		m.mu.Unlock()
		callCtx, cancel := context.WithTimeout(ctx, max(min(m.t.call, usable.Sub(sentAt)), time.Millisecond))
		hb, err := m.client.Heartbeat(callCtx, m.group, m.id, req)
		cancel()
		if err != nil {
			wait, fatalErr := m.refused(ctx, err)
			if fatalErr != nil {
				return fatalErr
			}
			sleep(ctx, m.clock, wait, nil)
			continue
		}
		if !m.clock.Now().Before(usable) {
			// An answer that came after it could be acted on grants nothing.
			m.stopAll()
			continue
		}
		until := sentAt.Add(m.t.lease - m.t.safety)
		stopped := m.adopt(hb, until)
		m.confirm(ctx, hb.Session, stopped)
		pause := m.t.renew
		if !hb.Settled || len(stopped) > 0 {
			pause = m.t.retryDelay()
		}
		sleep(ctx, m.clock, sentAt.Add(pause).Sub(m.clock.Now()), nil)
	}
}

// refused handles a failed heartbeat and says how long to wait before the next: a session the
// server ended, or that another process holds under this member id (member-in-use: its instance
// is not ours), stops everything, and the next heartbeat starts a new session (refused while the
// other's lives); a refusal over a server bound waits its Retry-After, the session's window
// still counting; a refusal of the configuration is returned.
func (m *member) refused(ctx context.Context, err error) (time.Duration, error) {
	p := asProblem(err)
	switch {
	case p == nil:
	case p.Kind == "session-ended" || p.Kind == "member-in-use":
		m.log.Warn("session over", "error", err)
		m.stopAll()
		m.waitStopped()
		m.mu.Lock()
		m.session = 0
		m.mu.Unlock()
		return m.t.retryDelay(), nil
	case fatal(err) || p.Status == 404:
		m.stopAll()
		m.waitStopped()
		return 0, err
	case p.OverBound():
		// Nothing was done (a busy server sheds new sessions first, and renewals only when it is
		// full): wait its Retry-After, but while the session's window is open never past half of
		// what is left of it, so one more heartbeat comes before it closes.
		m.log.Warn("heartbeat refused over a bound of the server", "bound", p.Bound, "retryAfter", p.RetryAfter)
		wait := m.t.after(max(m.t.retry, p.RetryAfter))
		m.mu.Lock()
		session, deadline := m.session, m.deadline
		m.mu.Unlock()
		if left := deadline.Sub(m.clock.Now()); session > 0 && left > 0 {
			wait = max(min(wait, left/2), m.t.retry/4)
		}
		return wait, nil
	}
	if ctx.Err() == nil {
		m.log.Warn("heartbeat failed", "error", err)
	}
	return m.t.retryDelay(), nil
}

// adopt takes a heartbeat's answer: the new window, the tenures to stop and to start. It returns
// the buckets to confirm as stopped: those asked for, and those listed at a term this member
// already stopped (the server moves them on with a new term).
func (m *member) adopt(hb Heartbeat, until time.Time) []HeldBucket {
	m.mu.Lock()
	defer m.mu.Unlock()
	if hb.Session != m.session {
		m.stopAllLocked()
	}
	m.session, m.deadline, m.worked = hb.Session, until, max(m.worked, hb.Session)
	if m.watchdog != nil {
		m.watchdog.Stop()
	}
	m.watchdog = m.clock.AfterFunc(until.Sub(m.clock.Now()), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.deadline.Equal(until) && !m.clock.Now().Before(until) {
			m.stopAllLocked()
		}
	})
	held := map[int]int64{}
	for _, h := range hb.Held {
		held[h.Bucket] = h.Term
	}
	var confirm []HeldBucket
	for _, a := range hb.Handoffs {
		delete(held, a.Bucket)
		m.stopLocked(a.Bucket)
		confirm = append(confirm, HeldBucket{Bucket: a.Bucket, Term: a.Term})
	}
	for bucket, t := range m.running {
		if term, ok := held[bucket]; !ok || term != t.term {
			m.stopLocked(bucket)
		}
	}
	for bucket, term := range held {
		if _, ok := m.running[bucket]; ok {
			continue
		}
		if term <= m.ended[bucket] {
			confirm = append(confirm, HeldBucket{Bucket: bucket, Term: term})
			continue
		}
		m.startLocked(bucket, hb.Buckets, term)
	}
	return confirm
}

// confirm tells the server each bucket's work has stopped, once it has (at most Grace). It runs
// beside the heartbeats: a confirmation waiting for work to stop, or slow to answer, never holds
// up the next renewal (confirming a few hand-offs one after another on a loaded machine let the
// session's window close).
func (m *member) confirm(ctx context.Context, session int64, buckets []HeldBucket) {
	for _, b := range buckets {
		m.mu.Lock()
		if term, ok := m.confirming[b.Bucket]; ok && term == b.Term {
			m.mu.Unlock()
			continue
		}
		m.confirming[b.Bucket] = b.Term
		last := m.last[b.Bucket]
		m.mu.Unlock()
		m.confirms.Add(1)
		go func() {
			defer m.confirms.Done()
			defer func() {
				m.mu.Lock()
				if m.confirming[b.Bucket] == b.Term {
					delete(m.confirming, b.Bucket)
				}
				m.mu.Unlock()
			}()
			if last != nil && !waitDone(m.clock, last.done, m.t.grace) {
				m.log.Warn("bucket work did not stop within Grace; confirming anyway", "bucket", b.Bucket, "term", b.Term)
			}
			callCtx, cancel := context.WithTimeout(ctx, m.t.call)
			outcome, err := m.client.ConfirmHandoff(callCtx, m.group, m.id, m.instance, session, b.Bucket, b.Term)
			cancel()
			if err != nil {
				// Refused or lost: the next heartbeat asks again or shows where the bucket went.
				m.log.Warn("hand-off confirmation failed", "bucket", b.Bucket, "term", b.Term, "error", err)
				return
			}
			m.log.Info("handed off", "bucket", b.Bucket, "term", b.Term, "outcome", outcome)
		}()
	}
}

func (m *member) startLocked(bucket, buckets int, term int64) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &bucketTenure{bucket: bucket, term: term, cancel: cancel, done: make(chan struct{})}
	previous := m.last[bucket]
	m.running[bucket] = t
	m.last[bucket] = t
	b := Bucket{Index: bucket, Buckets: buckets, Term: term, m: m, t: t}
	m.log.Info("working on bucket", "bucket", bucket, "term", term)
	go func() {
		defer close(t.done)
		if previous != nil {
			<-previous.done
		}
		if ctx.Err() != nil {
			return
		}
		if err := m.work(ctx, b); err != nil {
			select {
			case m.failed <- fmt.Errorf("leasehold: bucket %d term %d: %w", bucket, term, err):
			default:
			}
		}
	}()
}

func (m *member) stopLocked(bucket int) {
	t := m.running[bucket]
	if t == nil {
		return
	}
	delete(m.running, bucket)
	t.stopped = true
	t.cancel()
	m.ended[bucket] = max(m.ended[bucket], t.term)
	m.log.Info("stopped bucket", "bucket", bucket, "term", t.term)
}

func (m *member) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopAllLocked()
}

func (m *member) stopAllLocked() {
	for bucket := range m.running {
		m.stopLocked(bucket)
	}
}

// holds is a tenure's clock-checked test; a closed window found here ends every tenure at once.
func (m *member) holds(t *bucketTenure) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.stopped {
		return false
	}
	if m.clock.Now().Before(m.deadline) {
		return true
	}
	m.stopAllLocked()
	return false
}

// waitStopped waits (at most Grace) for every stopped tenure's work to return.
func (m *member) waitStopped() {
	m.mu.Lock()
	var waits []chan struct{}
	for _, t := range m.last {
		waits = append(waits, t.done)
	}
	m.mu.Unlock()
	limit := m.clock.Now().Add(m.t.grace)
	for _, done := range waits {
		if !waitDone(m.clock, done, limit.Sub(m.clock.Now())) {
			m.log.Warn("bucket work did not stop within Grace")
			return
		}
	}
}

// leave stops every bucket, waits for the work (at most Grace), and ends the session.
func (m *member) leave() {
	m.stopAll()
	m.waitStopped()
	m.mu.Lock()
	session := m.session
	m.mu.Unlock()
	if session > 0 {
		m.leaveSession(session)
	}
	m.confirms.Wait()
}

// leaveSession ends session (its work has stopped), repeating an ambiguous answer a few times.
func (m *member) leaveSession(session int64) {
	for attempt := 0; attempt < 3; attempt++ {
		callCtx, cancel := context.WithTimeout(context.Background(), m.t.call)
		err := m.client.Leave(callCtx, m.group, m.id, m.instance, session)
		cancel()
		wait := m.t.retryDelay() / 4
		if p := overBound(err); p != nil {
			wait = p.RetryAfter
		} else if err == nil || !IsAmbiguous(err) {
			if err != nil {
				m.log.Warn("leave refused", "session", session, "error", err)
			}
			break
		}
		sleep(context.Background(), m.clock, wait, nil)
	}
	m.mu.Lock()
	if m.session == session {
		m.session = 0
	}
	m.mu.Unlock()
}

// waitDone waits for done at most d on clock; it reports whether done closed.
func waitDone(clock Clock, done <-chan struct{}, d time.Duration) bool {
	if !isClosed(done) {
		sleep(context.Background(), clock, d, done)
	}
	return isClosed(done)
}
