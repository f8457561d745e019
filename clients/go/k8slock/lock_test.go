package k8slock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	"github.com/leasehold-dev/leasehold/clients/go/internal/testserver"
	"github.com/leasehold-dev/leasehold/clients/go/k8slock"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

var shared *testserver.Server

func TestMain(m *testing.M) { testserver.Main(m, testserver.Options{Tokens: true}, &shared) }

var count atomic.Int64

func uniqueName(what string) string {
	return fmt.Sprintf("adapters/k8slock-%s-%d-%d", what, os.Getpid(), count.Add(1))
}

func newLock(t *testing.T, url, name, identity string) *k8slock.Lock {
	t.Helper()
	c, err := leasehold.NewClient(url, leasehold.ClientOptions{Token: testserver.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := k8slock.New(k8slock.Config{Client: c, Name: name, Identity: identity})
	if err != nil {
		t.Fatal(err)
	}
	return lock
}

// leadership records client-go's terms, with the term each OnStartedLeading read from its lock.
type leadership struct {
	mu    sync.Mutex
	spans []span
}

type span struct {
	who        string
	term       int64
	start, end time.Time
}

func (l *leadership) current() *span {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.spans {
		if l.spans[i].end.IsZero() {
			s := l.spans[i]
			return &s
		}
	}
	return nil
}

func (l *leadership) waitFor(t *testing.T, what string, cond func(*span) bool) *span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s := l.current(); cond(s) {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not %s within 20 s: %+v", what, l.spans)
	return nil
}

// run is one candidate: client-go's own elector (RunOrDie) on a k8slock.Lock. The work runs
// while the lock's StillLeader holds and its context lasts.
func (l *leadership) run(ctx context.Context, lock *k8slock.Lock, who string) {
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 150 * time.Millisecond,
		ReleaseOnCancel: true, Name: "k8slock-test",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				l.mu.Lock()
				i := len(l.spans)
				l.spans = append(l.spans, span{who: who, term: lock.Term(), start: time.Now()})
				l.mu.Unlock()
				for ctx.Err() == nil && lock.StillLeader() {
					time.Sleep(5 * time.Millisecond)
				}
				l.mu.Lock()
				l.spans[i].end = time.Now()
				l.mu.Unlock()
			},
			OnStoppedLeading: func() {},
		},
	})
}

func TestClientGoElectsAndFailsOverThroughK8slock(t *testing.T) {
	name := uniqueName("elect")
	var l leadership
	proxies := map[string]*testserver.Proxy{}
	cancels := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for _, who := range []string{"a", "b", "c"} {
		proxy := testserver.NewProxy(t, shared.URL)
		proxies[who] = proxy
		ctx, cancel := context.WithCancel(context.Background())
		cancels[who] = cancel
		lock := newLock(t, proxy.URL, name, who)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil { // client-go's Run ends with its term: campaign again, as users do
				l.run(ctx, lock, who)
			}
		}()
	}
	first := l.waitFor(t, "a leader", func(s *span) bool { return s != nil })
	if first.term != 1 {
		t.Fatalf("the first leader's lock reports term %d, expected 1", first.term)
	}
	// Cut the leader off (every call hangs): client-go steps down after RenewDeadline, another
	// takes over after LeaseDuration of an unchanged record.
	proxies[first.who].Inject("", testserver.Hang, -1)
	second := l.waitFor(t, "a new leader after the partition", func(s *span) bool { return s != nil && s.who != first.who })
	proxies[first.who].Heal()
	// A graceful stop (ReleaseOnCancel): the release keeps the term, the next leader takes term + 1.
	cancels[second.who]()
	third := l.waitFor(t, "a leader after the release", func(s *span) bool { return s != nil && s.term > second.term })
	for _, cancel := range cancels {
		cancel()
	}
	wg.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	spans := append([]span(nil), l.spans...)
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	for i := 1; i < len(spans); i++ {
		if spans[i].start.Before(spans[i-1].end) {
			t.Errorf("%s term %d began before %s term %d ended", spans[i].who, spans[i].term, spans[i-1].who, spans[i-1].term)
		}
		if spans[i].term <= spans[i-1].term {
			t.Errorf("terms went from %d to %d", spans[i-1].term, spans[i].term)
		}
	}
	if third.term != second.term+1 {
		t.Errorf("after a release of term %d the next leader has term %d", second.term, third.term)
	}
	// The record agrees: LeaderTransitions is term - 1.
	record, _, err := newLock(t, shared.URL, name, "reader").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lease, _ := clientOf(t).Get(context.Background(), name)
	if int64(record.LeaderTransitions) != lease.Term-1 {
		t.Errorf("LeaderTransitions %d with term %d", record.LeaderTransitions, lease.Term)
	}
}

func TestLockKeepsTheTermRulesItPromises(t *testing.T) {
	ctx := context.Background()
	name := uniqueName("rules")
	a := newLock(t, shared.URL, name, "a")
	if _, _, err := a.Get(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing lease: %v, expected NotFound", err)
	}
	now := time.Now()
	record := rl.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 10, AcquireTime: metaTime(now), RenewTime: metaTime(now)}
	if err := a.Create(ctx, record); err != nil {
		t.Fatal(err)
	}
	if a.Term() != 1 || !a.StillLeader() {
		t.Fatalf("after Create: term %d, still leader %t", a.Term(), a.StillLeader())
	}
	if err := a.Update(ctx, record); err != nil || a.Term() != 1 {
		t.Fatalf("a renewal must keep term 1: term %d, %v", a.Term(), err)
	}
	// While the server counts the lease held (renewedAt + leaseMs + maxSkewMs), another identity
	// cannot take it, nor can another process with the same identity (a restarted one) continue or
	// take it: client-go's Conflict, nothing written, a still leads.
	b := newLock(t, shared.URL, name, "b")
	restarted := newLock(t, shared.URL, name, "a")
	for _, other := range []struct {
		who    string
		lock   *k8slock.Lock
		record rl.LeaderElectionRecord
	}{{"another identity", b, rl.LeaderElectionRecord{HolderIdentity: "b", LeaseDurationSeconds: 10}}, {"a restarted process", restarted, record}} {
		if _, _, err := other.lock.Get(ctx); err != nil {
			t.Fatal(err)
		}
		if err := other.lock.Update(ctx, other.record); !apierrors.IsConflict(err) || other.lock.Term() != 0 {
			t.Fatalf("%s took a lease still held: term %d, %v (expected Conflict)", other.who, other.lock.Term(), err)
		}
	}
	if err := a.Update(ctx, record); err != nil || a.Term() != 1 || !a.StillLeader() {
		t.Fatalf("a's renewal after the refused takeovers: term %d, still leader %t, %v", a.Term(), a.StillLeader(), err)
	}
	// A term that expired by the server's clock is never continued: the renewal is a Conflict, a
	// holds nothing, and its next write takes term 2.
	short := record
	short.LeaseDurationSeconds = 1
	if err := a.Update(ctx, short); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second + 150*time.Millisecond) // the lease and the server's skew bound (100 ms)
	if err := a.Update(ctx, short); !apierrors.IsConflict(err) || a.Term() != 0 || a.StillLeader() {
		t.Fatalf("a renewal of an expired term: term %d, still leader %t, %v (expected Conflict)", a.Term(), a.StillLeader(), err)
	}
	if _, _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, record); err != nil || a.Term() != 2 {
		t.Fatalf("a taking the expired lease again must take term 2: term %d, %v", a.Term(), err)
	}
	// A release keeps the term; the same identity from another process may then take it, at term + 1.
	if err := a.Update(ctx, rl.LeaderElectionRecord{LeaseDurationSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	got, _, err := restarted.Get(ctx)
	if err != nil || got.HolderIdentity != "" || got.LeaderTransitions != 1 {
		t.Fatalf("after the release: %+v, %v", got, err)
	}
	if err := restarted.Update(ctx, record); err != nil || restarted.Term() != 3 {
		t.Fatalf("taking it after a release must be term 3: term %d, %v", restarted.Term(), err)
	}
	// a's revision is stale now: client-go's Conflict, and a holds nothing.
	if err := a.Update(ctx, record); !apierrors.IsConflict(err) {
		t.Fatalf("Update on a stale revision: %v, expected Conflict", err)
	}
	if a.Term() != 0 || a.StillLeader() {
		t.Fatalf("after losing the race a reports term %d, still leader %t", a.Term(), a.StillLeader())
	}
}

// The raw compare-and-swap is a verb of its own: a token that may read and write but not cas
// reads the lease and is refused every write, with the server's 403 (not a Conflict client-go
// would retry as a lost race).
func TestLockNeedsATokenWithTheCasVerb(t *testing.T) {
	c, err := leasehold.NewClient(shared.URL, leasehold.ClientOptions{Token: testserver.AdaptersToken})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := k8slock.New(k8slock.Config{Client: c, Name: uniqueName("no-cas"), Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := lock.Get(context.Background()); !apierrors.IsNotFound(err) {
		t.Fatalf("Get with a read-write token: %v, expected NotFound", err)
	}
	err = lock.Create(context.Background(), rl.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 10})
	var p *leasehold.Problem
	if !errors.As(err, &p) || p.Status != 403 || apierrors.IsConflict(err) {
		t.Fatalf("Create with a token without cas: %v, expected the server's 403", err)
	}
}

func TestLockRefusesConfigurationThatCannotBeRight(t *testing.T) {
	_, err := k8slock.New(k8slock.Config{Instance: "short"})
	var ce *leasehold.ConfigError
	for _, field := range []string{"Client", "Name", "Identity", "Instance"} {
		found := false
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if errors.As(e, &ce) && ce.Field == field {
				found = true
			}
		}
		if !found {
			t.Errorf("no error names %s: %v", field, err)
		}
	}
}

func clientOf(t *testing.T) *leasehold.Client {
	c, err := leasehold.NewClient(shared.URL, leasehold.ClientOptions{Token: testserver.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }
