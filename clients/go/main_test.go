package leasehold_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	"github.com/leasehold-dev/leasehold/clients/go/internal/testserver"
)

// shared is the API server most tests use (with tokens); a test that pauses its server starts its own.
var shared *testserver.Server

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Tokens: true}, &shared) }

var leaseCount atomic.Int64

// uniqueName is a fresh lease or group name under adapters/.
func uniqueName(what string) string {
	return fmt.Sprintf("adapters/go-%s-%d-%d", what, os.Getpid(), leaseCount.Add(1))
}

func client(t testing.TB, url string) *leasehold.Client {
	t.Helper()
	c, err := leasehold.NewClient(url, leasehold.ClientOptions{Token: testserver.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fast is the timing of the contract tests: a 1 s lease, the rest in its proportions.
var fast = leasehold.Timing{LeaseDuration: time.Second}

// tenure is one term as its OnStartedLeading saw it, on this process's monotonic clock.
type tenure struct {
	who      string
	term     int64
	start    time.Time
	end      time.Time // when its context was cancelled
	returned time.Time // when OnStartedLeading returned
	stopped  time.Time // when OnStoppedLeading ran
}

// history records every candidate's tenures.
type history struct {
	mu       sync.Mutex
	tenures  []*tenure
	changed  chan struct{}
	cleanups map[string]time.Duration
}

func newHistory() *history { return &history{changed: make(chan struct{}, 1)} }

func (h *history) notify() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// callbacks records a candidate's terms; the work checks StillLeader every few milliseconds and
// takes `cleanup` to stop once its context is cancelled.
func (h *history) callbacks(who string, cleanup time.Duration) leasehold.Callbacks {
	var current *tenure
	return leasehold.Callbacks{
		OnStartedLeading: func(ctx context.Context, term int64) {
			t := &tenure{who: who, term: term, start: time.Now()}
			h.mu.Lock()
			h.tenures = append(h.tenures, t)
			current = t
			h.mu.Unlock()
			h.notify()
			<-ctx.Done()
			h.mu.Lock()
			t.end = time.Now()
			h.mu.Unlock()
			time.Sleep(cleanup)
			h.mu.Lock()
			t.returned = time.Now()
			h.mu.Unlock()
			h.notify()
		},
		OnStoppedLeading: func() {
			h.mu.Lock()
			if current != nil {
				current.stopped = time.Now()
			}
			h.mu.Unlock()
			h.notify()
		},
	}
}

// waitFor polls cond (on every change and every 10 ms) until it holds, failing after limit.
func (h *history) waitFor(t testing.TB, what string, limit time.Duration, cond func([]tenure) bool) []tenure {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		snapshot := h.snapshot()
		if cond(snapshot) {
			return snapshot
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v: %s", what, limit, describe(snapshot))
		}
		select {
		case <-h.changed:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (h *history) snapshot() []tenure {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]tenure, len(h.tenures))
	for i, t := range h.tenures {
		out[i] = *t
	}
	return out
}

func describe(ts []tenure) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "[%s term %d ended=%t] ", t.who, t.term, !t.end.IsZero())
	}
	return b.String()
}

// checkSafety: terms strictly grow in the order they began, each led once, and a tenure's
// context was cancelled before the next one began (one leader at a time).
func checkSafety(t testing.TB, ts []tenure) {
	t.Helper()
	sorted := append([]tenure(nil), ts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		if b.term <= a.term {
			t.Errorf("terms went from %d (%s) to %d (%s)", a.term, a.who, b.term, b.who)
		}
		if a.end.IsZero() || b.start.Before(a.end) {
			t.Errorf("%s term %d began while %s term %d still led", b.who, b.term, a.who, a.term)
		}
	}
}

func leading(ts []tenure) *tenure {
	for i := range ts {
		if ts[i].end.IsZero() {
			return &ts[i]
		}
	}
	return nil
}
