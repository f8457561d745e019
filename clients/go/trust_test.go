package leasehold_test

// What the server proves and says, as the Elector meets it: a holder name is not a credential
// (another process with the same identity gets holder-in-use, never the same term), a lease still
// held by the server's clock is retried when the server says it will be free (Retry-After), and a
// refusal over one of the server's bounds waits what the server asks.

import (
	"context"
	"errors"
	"testing"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	"github.com/leasehold-dev/leasehold/clients/go/internal/testserver"
)

func TestElectorNeverSharesATermWithAnotherProcessOfItsIdentity(t *testing.T) {
	name := uniqueName("twins")
	h := newHistory()
	// One config copied to two processes: the same Identity, each its own random Instance. A 3 s
	// lease, so a renewal late on a loaded machine cannot end the term within the test's 1.5 s.
	twins := map[string]*candidate{}
	for _, who := range []string{"first", "second"} {
		twins[who] = start(t, leasehold.Config{
			Client: client(t, shared.URL), Name: name, Identity: "twin", ReleaseOnCancel: true,
			Timing:    leasehold.Timing{LeaseDuration: 3 * time.Second},
			Callbacks: h.callbacks(who, 0),
		})
	}
	ts := h.waitFor(t, "one twin leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	leader := leading(ts)
	other := map[string]string{"first": "second", "second": "first"}[leader.who]
	// A third process with the identity is refused by name of the rule, with the record.
	_, err := client(t, shared.URL).Acquire(context.Background(), name, leasehold.AcquireRequest{
		Holder: "twin", Instance: leasehold.NewInstance(), LeaseDuration: time.Second,
	})
	var p *leasehold.Problem
	if !errors.As(err, &p) || p.Status != 409 || p.Kind != "holder-in-use" || p.Lease == nil || p.Lease.Term != leader.term || leasehold.IsAmbiguous(err) {
		t.Fatalf("an acquire under a held identity from another instance: %v, expected 409 holder-in-use with the record", err)
	}
	// For 1.5 s the other twin, which campaigns all along, never leads.
	time.Sleep(1500 * time.Millisecond)
	if ts := h.snapshot(); len(ts) != 1 || twins[other].e.Term() != 0 {
		t.Fatalf("the other twin led beside the first: %s", describe(ts))
	}
	// Once the leader stops (and releases), the other takes the next term.
	if err := twins[leader.who].stop(); err != nil {
		t.Fatal(err)
	}
	ts = h.waitFor(t, "the other twin leading", 10*time.Second, func(ts []tenure) bool {
		l := leading(ts)
		return l != nil && l.who == other
	})
	if ts[1].term != leader.term+1 {
		t.Fatalf("expected term %d after the release, got %s", leader.term+1, describe(ts))
	}
	checkSafety(t, ts)
}

// The server counts a lease held until renewedAt + leaseMs + maxSkewMs on its own clock, later
// than a follower's observed expiry (leaseMs after it saw the last revision). Its refusal says
// when (Retry-After): the follower sends its next acquire then, not every RetryPeriod. Here the
// follower's watch stream hangs, so no free event tells it sooner.
func TestElectorRetriesATakeoverWhenTheServerSaysTheLeaseWillBeFree(t *testing.T) {
	server := testserver.Start(t, testserver.Options{Tokens: true, MaxSkew: 1500 * time.Millisecond})
	name := uniqueName("retry-after")
	h := newHistory()
	proxyA, proxyB := testserver.NewProxy(t, server.URL), testserver.NewProxy(t, server.URL)
	start(t, leasehold.Config{Client: client(t, proxyA.URL), Name: name, Identity: "a", Timing: fast, Callbacks: h.callbacks("a", 0)})
	ts := h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	_, err := client(t, server.URL).Acquire(context.Background(), name, leasehold.AcquireRequest{
		Holder: "c", Instance: leasehold.NewInstance(), LeaseDuration: time.Second,
	})
	var p *leasehold.Problem
	if !errors.As(err, &p) || p.Kind != "conflict" || p.RetryAfter < time.Second || p.RetryAfter > 3*time.Second {
		t.Fatalf("an acquire of a lease held for up to 1 s + 1.5 s: %v (Retry-After %v), expected conflict with Retry-After 1-3 s", err, p.RetryAfter)
	}
	proxyB.Inject("/watch", testserver.Hang, -1)
	start(t, leasehold.Config{Client: client(t, proxyB.URL), Name: name, Identity: "b", Timing: fast, Callbacks: h.callbacks("b", 0)})
	time.Sleep(500 * time.Millisecond) // b reads the lease, held by a
	proxyA.Inject("", testserver.Hang, -1)
	cutAt, acquiresBefore := time.Now(), proxyB.Seen("/acquire")
	ts = h.waitFor(t, "b leading after a was cut off", 15*time.Second, func(ts []tenure) bool {
		l := leading(ts)
		return l != nil && l.who == "b"
	})
	// b tries at its observed expiry (about 1 s after a's last renewal), is told about 2 s, and
	// tries again then: two acquires, where one every RetryPeriod (133-160 ms) would be about 15.
	if sent := proxyB.Seen("/acquire") - acquiresBefore; sent > 3 {
		t.Errorf("b sent %d acquires in the %v from the cut to its term: Retry-After was not waited", sent, time.Since(cutAt))
	}
	checkSafety(t, ts)
}

// Over the server's bound on watch streams per token, the Elector still leads (the stream is
// only its fast path) and opens the stream again after Retry-After, not every RetryPeriod.
func TestElectorOverTheWatchStreamBoundWaitsRetryAfter(t *testing.T) {
	server := testserver.Start(t, testserver.Options{Tokens: true, Env: []string{"LEASEHOLD_WATCH_STREAMS_PER_TOKEN=1"}})
	c := client(t, server.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := c.Watch(ctx, uniqueName("held-stream"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = c.Watch(ctx, uniqueName("over"), "")
	var p *leasehold.Problem
	if !errors.As(err, &p) || p.Status != 429 || p.Kind != "over-limit" || p.Bound != "watchStreamsPerToken" ||
		p.RetryAfter != 5*time.Second || !p.OverBound() || leasehold.IsAmbiguous(err) {
		t.Fatalf("a second stream of a token allowed one: %v, expected 429 over-limit watchStreamsPerToken, Retry-After 5 s, not ambiguous", err)
	}
	proxy := testserver.NewProxy(t, server.URL)
	h := newHistory()
	start(t, leasehold.Config{Client: client(t, proxy.URL), Name: uniqueName("bounded"), Identity: "a", Timing: fast, Callbacks: h.callbacks("a", 0)})
	h.waitFor(t, "a leading without a stream", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	time.Sleep(1500 * time.Millisecond)
	if opened := proxy.Seen("/watch"); opened < 1 || opened > 2 {
		t.Errorf("the elector tried %d streams in about 1.5 s; expected 1 (then one every Retry-After, 5 s)", opened)
	}
	if ts := h.snapshot(); len(ts) != 1 || !ts[0].end.IsZero() {
		t.Errorf("a lost its term over the watch bound: %s", describe(ts))
	}
}

func TestElectorOnADeploymentThatCannotStreamFollowsByReads(t *testing.T) {
	name := uniqueName("buffered")
	h := newHistory()
	a := start(t, leasehold.Config{
		Client: client(t, shared.URL), Name: name, Identity: "a", Timing: fast, ReleaseOnCancel: true,
		Callbacks: h.callbacks("a", 0),
	})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	proxy := testserver.NewProxy(t, shared.URL)
	proxy.Inject("/watch", testserver.StreamingUnavailable, -1)
	start(t, leasehold.Config{Client: client(t, proxy.URL), Name: name, Identity: "b", Timing: fast, Callbacks: h.callbacks("b", 0)})
	time.Sleep(1500 * time.Millisecond)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	ts := h.waitFor(t, "b leading after a's release, seen by reads", 10*time.Second, func(ts []tenure) bool {
		l := leading(ts)
		return l != nil && l.who == "b"
	})
	if ts[0].who != "a" || ts[0].term != 1 || ts[1].term != 2 {
		t.Fatalf("expected a term 1 then b term 2, got %s", describe(ts))
	}
	if opened := proxy.Seen("/watch"); opened != 1 {
		t.Errorf("b asked for a stream %d times of a server that answered 501 streaming-unavailable; expected once", opened)
	}
}

// A 503 over-capacity (the server past its connection cap) did nothing: it is not ambiguous, and
// a leader whose renewals meet it keeps its term, trying again within its window.
func TestElectorKeepsItsTermThroughRenewalsRefusedOverCapacity(t *testing.T) {
	name := uniqueName("over-capacity")
	proxy := testserver.NewProxy(t, shared.URL)
	proxy.Inject("/acquire", testserver.RefuseOverCapacity, 1)
	_, err := client(t, proxy.URL).Acquire(context.Background(), name, leasehold.AcquireRequest{
		Holder: "x", Instance: leasehold.NewInstance(), LeaseDuration: time.Second,
	})
	var p *leasehold.Problem
	if !errors.As(err, &p) || p.Kind != "over-capacity" || p.Bound != "maxConnections" || p.RetryAfter != time.Second || leasehold.IsAmbiguous(err) {
		t.Fatalf("503 over-capacity: %v, expected a refusal over maxConnections with Retry-After 1 s, not ambiguous", err)
	}
	h := newHistory()
	// A 3 s lease: renewals every second, a window of 2.7 s; the refused renewal is tried again
	// halfway through what is left of it (Retry-After, 1 s, is longer).
	a := start(t, leasehold.Config{
		Client: client(t, proxy.URL), Name: name, Identity: "a", Timing: leasehold.Timing{LeaseDuration: 3 * time.Second},
		Callbacks: h.callbacks("a", 0),
	})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	proxy.Inject("/renew", testserver.RefuseOverCapacity, 1)
	before := proxy.Seen("/renew")
	deadline := time.Now().Add(10 * time.Second)
	for proxy.Seen("/renew") < before+3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if ts := h.snapshot(); len(ts) != 1 || !ts[0].end.IsZero() || !a.e.StillLeader() {
		t.Fatalf("a lost its term to renewals refused over capacity: %s", describe(ts))
	}
}
