package leasehold_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	"github.com/leasehold-dev/leasehold/clients/go/clocktest"
	"github.com/leasehold-dev/leasehold/clients/go/internal/testserver"
)

// candidate runs one elector until the test ends; stop cancels its Run and waits for it.
type candidate struct {
	e    *leasehold.Elector
	stop func() error
}

func start(t *testing.T, cfg leasehold.Config) *candidate {
	t.Helper()
	e, err := leasehold.NewElector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var result error
	stopped := false
	c := &candidate{e: e, stop: func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}}
	t.Cleanup(func() { _ = c.stop() })
	return c
}

func TestElectorOneLeaderAcrossPartitionsTermsGrow(t *testing.T) {
	name := uniqueName("partition")
	h := newHistory()
	proxies := map[string]*testserver.Proxy{}
	for _, who := range []string{"a", "b", "c"} {
		proxy := testserver.NewProxy(t, shared.URL)
		proxies[who] = proxy
		start(t, leasehold.Config{
			Client: client(t, proxy.URL), Name: name, Identity: who, Timing: fast,
			ReleaseOnCancel: true, Callbacks: h.callbacks(who, 0),
		})
	}
	// Three times: cut the leader off from the server (every call hangs); another must lead, and
	// only after the cut-off leader's context was cancelled.
	for round := 1; round <= 3; round++ {
		ts := h.waitFor(t, "someone leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
		victim := leading(ts)
		proxies[victim.who].Inject("", testserver.Hang, -1)
		h.waitFor(t, "a new leader after the partition", 10*time.Second, func(ts []tenure) bool {
			l := leading(ts)
			return l != nil && l.term > victim.term
		})
		proxies[victim.who].Heal()
	}
	ts := h.snapshot()
	checkSafety(t, ts)
	if len(ts) < 4 {
		t.Fatalf("expected at least 4 terms, got %s", describe(ts))
	}
}

func TestElectorReleasesOnlyAfterTheWorkReturned(t *testing.T) {
	name := uniqueName("release-order")
	h := newHistory()
	a := start(t, leasehold.Config{
		Client: client(t, shared.URL), Name: name, Identity: "a", Timing: fast, ReleaseOnCancel: true,
		Callbacks: h.callbacks("a", 300*time.Millisecond),
	})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	var newLeaders []string
	b := start(t, leasehold.Config{
		Client: client(t, shared.URL), Name: name, Identity: "b", Timing: fast, ReleaseOnCancel: true,
		Callbacks: func() leasehold.Callbacks {
			cb := h.callbacks("b", 0)
			cb.OnNewLeader = func(identity string) { newLeaders = append(newLeaders, identity) }
			return cb
		}(),
	})
	// b follows a (its first leader seen), then a stops: its work takes 300 ms to return.
	time.Sleep(200 * time.Millisecond)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	ts := h.waitFor(t, "b leading", 10*time.Second, func(ts []tenure) bool {
		l := leading(ts)
		return l != nil && l.who == "b"
	})
	first, second := ts[0], ts[1]
	if first.who != "a" || first.term != 1 || second.term != 2 {
		t.Fatalf("expected a term 1 then b term 2, got %s", describe(ts))
	}
	if second.start.Before(first.returned) {
		t.Errorf("b began %v before a's work returned: the release was sent before the work stopped", first.returned.Sub(second.start))
	}
	if first.stopped.Before(first.returned) {
		t.Errorf("a's OnStoppedLeading ran before its OnStartedLeading returned")
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	// b saw a, then the lease freed by a's release, then itself; and its own release last.
	seen := strings.Join(newLeaders, ",")
	if !strings.HasPrefix(seen, "a,,b,") || !strings.HasSuffix(seen, ",") {
		t.Errorf("b's OnNewLeader saw %q, expected a, \"\", b first and \"\" last", newLeaders)
	}
}

func TestElectorNeverCallsOnStoppedLeadingWithoutLeading(t *testing.T) {
	name := uniqueName("never-led")
	h := newHistory()
	start(t, leasehold.Config{Client: client(t, shared.URL), Name: name, Identity: "a", Timing: fast, Callbacks: h.callbacks("a", 0)})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	stoppedCalls := 0
	b := start(t, leasehold.Config{
		Client: client(t, shared.URL), Name: name, Identity: "b", Timing: fast,
		Callbacks: leasehold.Callbacks{
			OnStartedLeading: func(ctx context.Context, term int64) { t.Errorf("b led term %d while a held the lease", term) },
			OnStoppedLeading: func() { stoppedCalls++ },
		},
	})
	time.Sleep(300 * time.Millisecond)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if stoppedCalls != 0 {
		t.Errorf("OnStoppedLeading ran %d times for a candidate that never led", stoppedCalls)
	}
}

func TestElectorSettlesALostAcquireAndLostRenewalsBySendingThemAgain(t *testing.T) {
	name := uniqueName("ambiguous")
	proxy := testserver.NewProxy(t, shared.URL)
	// The first acquire applies on the server, but its answer is lost.
	proxy.Inject("/acquire", testserver.DropResponse, 1)
	h := newHistory()
	a := start(t, leasehold.Config{Client: client(t, proxy.URL), Name: name, Identity: "a", Timing: fast, Callbacks: h.callbacks("a", 0)})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	if got := h.snapshot()[0].term; got != 1 {
		t.Fatalf("the acquire sent again after a lost answer must settle on term 1 (the one it started), got %d", got)
	}
	if proxy.Seen("/acquire") < 2 {
		t.Fatalf("expected the lost acquire to be sent again, saw %d", proxy.Seen("/acquire"))
	}
	// Renewals whose answers are lost, then a 503: each is sent again; the term goes on.
	proxy.Inject("/renew", testserver.DropResponse, 2)
	proxy.Inject("/renew", testserver.Refuse503, 1)
	renewsBefore := proxy.Seen("/renew")
	deadline := time.Now().Add(10 * time.Second)
	for proxy.Seen("/renew") < renewsBefore+5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !a.e.StillLeader() || a.e.Term() != 1 {
		t.Fatalf("a lost its term through ambiguous renewals: leader=%t term=%d, %s", a.e.StillLeader(), a.e.Term(), describe(h.snapshot()))
	}
	lease, err := client(t, shared.URL).Get(context.Background(), name)
	if err != nil || lease == nil || lease.Holder != "a" || lease.Term != 1 {
		t.Fatalf("the server's record: %+v, %v", lease, err)
	}
	if len(h.snapshot()) != 1 {
		t.Fatalf("expected one term, got %s", describe(h.snapshot()))
	}
}

func TestElectorStopsAtItsDeadlineWhileCallsHangAndNeverLeadsThatTermAgain(t *testing.T) {
	name := uniqueName("watchdog")
	proxy := testserver.NewProxy(t, shared.URL)
	h := newHistory()
	a := start(t, leasehold.Config{Client: client(t, proxy.URL), Name: name, Identity: "a", Timing: fast, Callbacks: h.callbacks("a", 0)})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	proxy.Inject("/renew", testserver.Hang, -1)
	ts := h.waitFor(t, "a's term ended by its watchdog", 10*time.Second, func(ts []tenure) bool { return !ts[0].stopped.IsZero() })
	if a.e.StillLeader() || a.e.Term() != 0 {
		t.Fatalf("after its window closed: StillLeader=%t Term=%d", a.e.StillLeader(), a.e.Term())
	}
	// Healed at once, while the server still counts term 1 as held (its skew bound and our
	// safety margin): a must not lead term 1 again; it frees it and takes term 2.
	proxy.Heal()
	ts = h.waitFor(t, "a leading again", 10*time.Second, func(ts []tenure) bool { return len(ts) == 2 })
	if ts[0].term != 1 || ts[1].term != 2 {
		t.Fatalf("expected terms 1 then 2, got %s", describe(ts))
	}
	checkSafety(t, ts)
}

func TestElectorAcrossAPausedServer(t *testing.T) {
	server := testserver.Start(t, testserver.Options{})
	name := uniqueName("paused-server")
	h := newHistory()
	for _, who := range []string{"a", "b"} {
		c, err := leasehold.NewClient(server.URL, leasehold.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start(t, leasehold.Config{Client: c, Name: name, Identity: who, Timing: fast, Callbacks: h.callbacks(who, 0)})
	}
	ts := h.waitFor(t, "someone leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	first := *leading(ts)
	if err := server.Pause(); err != nil {
		t.Fatal(err)
	}
	// The leader's renewals hang on the stopped server: its watchdog ends the term at the deadline.
	h.waitFor(t, "the leader's term ended while the server was stopped", 10*time.Second, func(ts []tenure) bool {
		return leading(ts) == nil && !ts[0].stopped.IsZero()
	})
	if err := server.Resume(); err != nil {
		t.Fatal(err)
	}
	ts = h.waitFor(t, "a leader after the server resumed", 15*time.Second, func(ts []tenure) bool {
		l := leading(ts)
		return l != nil && l.term > first.term
	})
	checkSafety(t, ts)
}

func TestStillLeaderReadsTheClockWhenAsked(t *testing.T) {
	name := uniqueName("still-leader")
	clock := clocktest.New(time.Unix(1_000_000, 0))
	h := newHistory()
	a := start(t, leasehold.Config{
		Client: client(t, shared.URL), Name: name, Identity: "a", Timing: fast, Clock: clock,
		Callbacks: h.callbacks("a", 0),
	})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	if !a.e.StillLeader() {
		t.Fatal("StillLeader false right after the acquisition")
	}
	// A pause past the window: the clock jumps and no timer has run yet.
	clock.Jump(time.Second)
	if a.e.StillLeader() {
		t.Fatal("StillLeader true after the clock passed sentAt + lease - safety")
	}
	h.waitFor(t, "the term's context cancelled at once", 5*time.Second, func(ts []tenure) bool { return !ts[0].end.IsZero() })
	if err := a.e.Check(time.Second); err != nil {
		t.Fatalf("Check after the term ended: %v", err)
	}
}

func TestCheckReportsAStuckLeader(t *testing.T) {
	name := uniqueName("check")
	clock := clocktest.New(time.Unix(1_000_000, 0))
	h := newHistory()
	a := start(t, leasehold.Config{Client: client(t, shared.URL), Name: name, Identity: "a", Timing: fast, Clock: clock, Callbacks: h.callbacks("a", 0)})
	h.waitFor(t, "a leading", 10*time.Second, func(ts []tenure) bool { return leading(ts) != nil })
	if err := a.e.Check(0); err != nil {
		t.Fatalf("Check while leading: %v", err)
	}
	clock.Jump(3 * time.Second)
	// Nothing has run since the jump (no timer, no StillLeader): the elector looks stuck.
	if err := a.e.Check(time.Second); err == nil || !strings.Contains(err.Error(), "after its window closed") {
		t.Fatalf("Check of a leader 2.1 s past its window with 1 s tolerance: %v", err)
	}
}

func TestElectorRefusesConfigurationThatCannotBeRight(t *testing.T) {
	c := client(t, shared.URL)
	_, err := leasehold.NewElector(leasehold.Config{
		Client: c, Name: "Adapters//x", Identity: "a\nb",
		Timing:   leasehold.Timing{LeaseDuration: time.Second, RenewInterval: 950 * time.Millisecond, Jitter: 2},
		Instance: "short",
	})
	if err == nil {
		t.Fatal("expected configuration errors")
	}
	for _, field := range []string{"Name", "Identity", "Instance", "RenewInterval", "Jitter", "Callbacks.OnStartedLeading"} {
		var ce *leasehold.ConfigError
		found := false
		for _, e := range unwrapAll(err) {
			if errors.As(e, &ce) && ce.Field == field {
				found = true
			}
		}
		if !found {
			t.Errorf("no error names %s: %v", field, err)
		}
	}
	// A holder that would read as something else (U+202E shows "\u202e1-dop" as "pod-1") is refused.
	_, err = leasehold.NewElector(leasehold.Config{
		Client: c, Name: "adapters/x", Identity: "\u202e1-dop",
		Timing: leasehold.Timing{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond},
	})
	var bidi *leasehold.ConfigError
	if !errors.As(err, &bidi) || bidi.Field != "Identity" {
		t.Errorf("an identity with U+202E: %v", err)
	}
	if _, err := leasehold.NewClient("127.0.0.1:8787", leasehold.ClientOptions{}); err == nil {
		t.Error("a URL without a scheme was accepted")
	}
}

func TestElectorRunReturnsTheServersRefusalOfItsToken(t *testing.T) {
	cases := []struct {
		token, name string
		status      int
	}{
		{"wrong-token-0123456789abcdef", uniqueName("token"), 401},
		{testserver.AdaptersToken, "billing/outside-scope", 403},
	}
	for _, tc := range cases {
		c, err := leasehold.NewClient(shared.URL, leasehold.ClientOptions{Token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		err = leasehold.Run(context.Background(), leasehold.Config{
			Client: c, Name: tc.name, Timing: fast,
			Callbacks: leasehold.Callbacks{OnStartedLeading: func(context.Context, int64) { t.Error("led without a valid token") }},
		})
		var p *leasehold.Problem
		if !errors.As(err, &p) || p.Status != tc.status {
			t.Errorf("Run with token %q on %q: expected a %d problem, got %v", tc.token, tc.name, tc.status, err)
		}
	}
}

func unwrapAll(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}
