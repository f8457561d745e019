package leasehold

// The follower half of the Elector: campaigning for a term.

import (
	"context"
	"time"
)

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
		if o.lease != nil && o.lease.Holder == e.identity && pending[o.lease.Term] {
			// Our own acquire, whose answer was lost, shows in what the server holds: send it
			// again now (a renewal of our own lease) rather than wait it out as someone else's.
			at = o.seenAt
		}
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
	if o.free {
		return o.seenAt // the server said so: released, or a bound lease's session ended
	}
	var r *TenureRecord
	if o.lease != nil {
		r = &TenureRecord{Holder: o.lease.Holder, Term: o.lease.Term, LeaseMs: o.lease.LeaseDuration.Milliseconds()}
	}
	// Judged on its own (tenure.go), counted from when it was first seen. The Go elector never
	// compares its wall clock with another machine's stamps, so the stamps say nothing here
	// (wallNow is the record's own renewedAt).
	v := Judge(nil, r, 0, 0, 0, 0, 0)
	if v.Kind == VerdictLive {
		return o.seenAt.Add(time.Duration(v.Until) * time.Millisecond)
	}
	return o.seenAt
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
	case fatal(err):
		return nil, time.Time{}, err
	}
	p := asProblem(err)
	if p != nil && p.Lease != nil {
		e.observe(p.Lease, false)
	}
	switch {
	case p == nil:
		e.log.Warn("acquire failed", "error", err)
	case p.Kind == "conflict" && p.RetryAfter > 0:
		// Held by another holder by the server's rule (its skew bound ends later than our
		// observed expiry): try again when the server expects it free, or at the free event.
		return nil, now.Add(e.t.after(p.RetryAfter)), nil
	case p.Kind == "holder-in-use":
		// Another process holds the lease under this identity (the server knows it by its
		// instance): never ours, so it is waited out as anyone else's, and nothing of ours is
		// pending at its term.
		if p.Lease != nil {
			delete(pending, p.Lease.Term)
		}
		e.log.Warn("another process holds the lease under this identity: two live processes must not share one", "error", err)
	case p.OverBound():
		e.log.Warn("acquire refused over a bound of the server", "bound", p.Bound, "retryAfter", p.RetryAfter)
		return nil, now.Add(e.t.after(max(e.t.retry, p.RetryAfter))), nil
	case p.Kind != "conflict":
		e.log.Warn("acquire refused", "error", err)
	}
	return nil, now.Add(e.t.retryDelay()), nil
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
			if p := asProblem(err); p != nil && p.Kind == "streaming-unavailable" {
				// A deployment that answers buffered (a Lambda function behind API Gateway)
				// never streams: campaign on reads alone (RetryPeriod) for the rest of Run.
				e.log.Info("the server cannot stream; following the lease by reads", "detail", p.Detail)
				return
			}
			e.log.Warn("watch failed", "error", err)
			if p := overBound(err); p != nil {
				// Over the server's watch bounds: poll meanwhile (RetryPeriod), reopen after Retry-After.
				sleep(ctx, e.clock, e.t.after(max(e.t.retry, p.RetryAfter)), nil)
				continue
			}
		}
		sleep(ctx, e.clock, e.t.retryDelay(), nil)
	}
}

func (e *Elector) setWatchLive(live bool) {
	e.mu.Lock()
	e.watchLive = live
	e.mu.Unlock()
}
