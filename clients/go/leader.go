package leasehold

// The leader half of the Elector: one term's renewals, watchdog, loss and release.

import (
	"context"
	"errors"
	"time"
)

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
		attemptAt := e.clock.Now()
		res, err := e.renew(t)
		if isClosed(t.lost) {
			continue
		}
		switch {
		case err == nil && res.Leader && res.Lease.Term == t.term:
			next = t.sentAt.Add(e.t.renew)
		case overBound(err) != nil:
			// Refused before anything was done (the server over a bound): the term goes on; the
			// next try comes after Retry-After, but while the window is open there is always one.
			e.log.Warn("renewal refused over a bound of the server; trying again", "term", t.term, "error", err)
			next = e.retryRenewal(t, overBound(err).RetryAfter)
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
			if e.clock.Now().Sub(attemptAt) >= min(e.t.call, e.untilOf(t).Sub(attemptAt)) {
				// It used up its whole timeout: that wait was the back-off, send it again at once
				// (docs/partitions.md, "The renewal schedule").
				next = e.clock.Now()
			} else {
				next = e.retryRenewal(t, 0)
			}
		}
	}
}

// retryRenewal is when to send a renewal of t again after a failed one: after RetryPeriod (or
// the server's Retry-After, when longer), but no later than halfway through what is left of the
// window, so one more try comes before it closes; and no sooner than RetryPeriod / 4.
func (e *Elector) retryRenewal(t *tenure, retryAfter time.Duration) time.Time {
	e.mu.Lock()
	until := t.until
	e.mu.Unlock()
	now := e.clock.Now()
	wait := min(e.t.after(max(e.t.retry, retryAfter)), until.Sub(now)/2)
	return now.Add(max(wait, e.t.retry/4))
}

// untilOf is when t's window closes.
func (e *Elector) untilOf(t *tenure) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return t.until
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
		wait := e.t.retryDelay() / 4
		if p := overBound(err); p != nil {
			wait = p.RetryAfter
		} else if !IsAmbiguous(err) {
			e.log.Warn("release refused", "term", t.term, "error", err)
			return
		}
		sleep(context.Background(), e.clock, min(wait, left), nil)
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
	// Refused or unanswered: the record the refusal carries is observed, and the campaign tries
	// again after a pause (a refusal that stays the same must not make it call in a loop).
	wait := e.t.retryDelay() / 4
	if p := asProblem(err); p != nil {
		if p.Lease != nil {
			e.observe(p.Lease, p.Lease.Holder == "")
		}
		if !p.Ambiguous() {
			wait = e.t.after(max(e.t.retry, p.RetryAfter))
		}
	}
	sleep(ctx, e.clock, wait, nil)
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
