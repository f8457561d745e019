package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	"github.com/leasehold-dev/leasehold/clients/go/internal/testserver"
)

// bucketWork records every bucket tenure of a group's members, as its work function saw it.
type bucketWork struct {
	mu      sync.Mutex
	running map[int]map[string]int64 // bucket -> member -> term
	terms   map[int][]int64          // bucket -> terms started, in order
	overlap []string
}

func newBucketWork() *bucketWork {
	return &bucketWork{running: map[int]map[string]int64{}, terms: map[int][]int64{}}
}

func (w *bucketWork) fn(member string) func(ctx context.Context, b leasehold.Bucket) error {
	return func(ctx context.Context, b leasehold.Bucket) error {
		w.mu.Lock()
		if w.running[b.Index] == nil {
			w.running[b.Index] = map[string]int64{}
		}
		for other, term := range w.running[b.Index] {
			w.overlap = append(w.overlap, fmt.Sprintf("bucket %d: %s term %d began while %s term %d worked", b.Index, member, b.Term, other, term))
		}
		if ts := w.terms[b.Index]; len(ts) > 0 && b.Term <= ts[len(ts)-1] {
			w.overlap = append(w.overlap, fmt.Sprintf("bucket %d: term %d after term %d", b.Index, b.Term, ts[len(ts)-1]))
		}
		w.running[b.Index][member] = b.Term
		w.terms[b.Index] = append(w.terms[b.Index], b.Term)
		w.mu.Unlock()
		<-ctx.Done()
		w.mu.Lock()
		delete(w.running[b.Index], member)
		w.mu.Unlock()
		return nil
	}
}

// loads is how many buckets each member works on now.
func (w *bucketWork) loads() map[string][]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]int{}
	for bucket, members := range w.running {
		for m := range members {
			out[m] = append(out[m], bucket)
		}
	}
	for _, bs := range out {
		sort.Ints(bs)
	}
	return out
}

func (w *bucketWork) waitBalanced(t *testing.T, what string, members []string, buckets int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		loads := w.loads()
		total, ok := 0, len(loads) == len(members)
		for _, m := range members {
			n := len(loads[m])
			total += n
			ok = ok && n >= buckets/len(members) && n <= (buckets+len(members)-1)/len(members)
		}
		if ok && total == buckets {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not balanced (%s) within 20 s: %v", what, loads)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runMember(t *testing.T, cfg leasehold.MemberConfig, w *bucketWork) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- leasehold.RunSharded(ctx, cfg, w.fn(cfg.Member)) }()
	var result error
	stopped := false
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func TestMembersShareBucketsBalancedAndHandOverOnLeave(t *testing.T) {
	group := uniqueName("group")
	w := newBucketWork()
	stopA := runMember(t, leasehold.MemberConfig{Client: client(t, shared.URL), Group: group, Member: "a", Buckets: 8, Timing: fast}, w)
	w.waitBalanced(t, "a alone", []string{"a"}, 8)
	runMember(t, leasehold.MemberConfig{Client: client(t, shared.URL), Group: group, Member: "b", Buckets: 8, Timing: fast}, w)
	w.waitBalanced(t, "a and b", []string{"a", "b"}, 8)
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	w.waitBalanced(t, "b after a left", []string{"b"}, 8)
	if len(w.overlap) > 0 {
		t.Fatal(strings.Join(w.overlap, "\n"))
	}
}

// The engine issue's reproduction: a member whose heartbeats hang past its window stops every
// bucket; the server still counts its session live when the next heartbeat gets through, and would
// list the same buckets at the same terms. The member must get them back at new terms.
func TestMemberWhoseWindowClosedGetsItsBucketsBackAtNewTerms(t *testing.T) {
	group := uniqueName("lapse")
	proxy := testserver.NewProxy(t, shared.URL)
	w := newBucketWork()
	runMember(t, leasehold.MemberConfig{Client: client(t, proxy.URL), Group: group, Member: "a", Buckets: 4, Timing: fast}, w)
	w.waitBalanced(t, "a alone", []string{"a"}, 4)
	w.mu.Lock()
	before := map[int]int64{}
	for b, ts := range w.terms {
		before[b] = ts[len(ts)-1]
	}
	w.mu.Unlock()
	// Heartbeats hang until a's window (900 ms after its last heartbeat was sent) has closed.
	proxy.Inject("/heartbeat", testserver.Hang, -1)
	deadline := time.Now().Add(10 * time.Second)
	for len(w.loads()["a"]) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a kept working after its window closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	proxy.Heal()
	w.waitBalanced(t, "a again", []string{"a"}, 4)
	w.mu.Lock()
	defer w.mu.Unlock()
	for b, ts := range w.terms {
		if ts[len(ts)-1] <= before[b] {
			t.Errorf("bucket %d: worked on again at term %d, not above %d", b, ts[len(ts)-1], before[b])
		}
	}
	if len(w.overlap) > 0 {
		t.Fatal(strings.Join(w.overlap, "\n"))
	}
}

// termsNow is the newest term each bucket was worked on at.
func (w *bucketWork) termsNow() map[int]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int]int64{}
	for b, ts := range w.terms {
		out[b] = ts[len(ts)-1]
	}
	return out
}

// waitIdle waits until member works on nothing.
func (w *bucketWork) waitIdle(t *testing.T, member string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(w.loads()[member]) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s kept working after its window closed", member)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Lost answers and late deliveries, in the order that hurt (docs/sharding.md, "What a remote
// member must do"): a's heartbeats are held on the way until its window closes, so it stops and
// starts the next session; those starts are held too; then every held request reaches the server
// at once, after the ones a sends since (renewals of the old session, starts naming it), and the
// next answers are lost. Every bucket a stopped comes back at a new term, or moves; no bucket is
// worked on by two members at once, and no term twice.
func TestMemberAcrossLostAndLateHeartbeats(t *testing.T) {
	group := uniqueName("late")
	proxy := testserver.NewProxy(t, shared.URL)
	w := newBucketWork()
	runMember(t, leasehold.MemberConfig{Client: client(t, proxy.URL), Group: group, Member: "a", Buckets: 8, Timing: fast}, w)
	runMember(t, leasehold.MemberConfig{Client: client(t, shared.URL), Group: group, Member: "b", Buckets: 8, Timing: fast}, w)
	w.waitBalanced(t, "a and b", []string{"a", "b"}, 8)
	before := w.termsNow()
	stopped := w.loads()["a"]
	proxy.Inject("/heartbeat", testserver.Late, -1)
	w.waitIdle(t, "a")
	// a's starts (naming the session it worked under) are held as well, a retry period apart.
	for proxy.Seen("/heartbeat") < 4 {
		time.Sleep(10 * time.Millisecond)
	}
	proxy.Heal()
	proxy.Inject("/heartbeat", testserver.DropResponse, 3)
	w.waitBalanced(t, "a and b again", []string{"a", "b"}, 8)
	after := w.termsNow()
	for _, b := range stopped {
		if after[b] <= before[b] {
			t.Errorf("bucket %d: worked on at term %d after a stopped it at %d", b, after[b], before[b])
		}
	}
	if len(w.overlap) > 0 {
		t.Fatal(strings.Join(w.overlap, "\n"))
	}
}

// A server that stalls for about one lease (SIGSTOP of its process): every member's window
// closes, some sessions expire by the server's clock meanwhile; once it answers again, every
// bucket is worked on again, at new terms, and the members balance.
func TestMembersRideOutAServerStall(t *testing.T) {
	server := testserver.Start(t, testserver.Options{})
	group := uniqueName("stall")
	w := newBucketWork()
	members := []string{"a", "b", "c"}
	for _, m := range members {
		runMember(t, leasehold.MemberConfig{Client: client(t, server.URL), Group: group, Member: m, Buckets: 8, Timing: fast}, w)
	}
	w.waitBalanced(t, "three members", members, 8)
	before := w.termsNow()
	if err := server.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(fast.LeaseDuration)
	if err := server.Resume(); err != nil {
		t.Fatal(err)
	}
	w.waitBalanced(t, "after the stall", members, 8)
	after := w.termsNow()
	for b := range before {
		if after[b] <= before[b] {
			t.Errorf("bucket %d: worked on at term %d after the stall, not above %d", b, after[b], before[b])
		}
	}
	if len(w.overlap) > 0 {
		t.Fatal(strings.Join(w.overlap, "\n"))
	}
}

// docs/sharding.md's test vectors, as test/sharding/bucket-of.test.ts checks them in TypeScript.
func TestBucketOfMatchesTheDocumentedVectors(t *testing.T) {
	vectors := []struct {
		key  string
		want [5]int
	}{
		{"", [5]int{0, 1, 13, 17, 266}},
		{"a", [5]int{0, 1, 12, 31, 163}},
		{"order-42", [5]int{0, 0, 7, 7, 111}},
		{"tenant/7/invoice/2026-001", [5]int{0, 1, 4, 54, 852}},
		{"héllo", [5]int{0, 1, 4, 52, 962}},
		{"日本", [5]int{0, 0, 14, 37, 130}},
		{"🙂", [5]int{0, 1, 4, 4, 524}},
	}
	for _, v := range vectors {
		for i, n := range []int{1, 2, 16, 64, 1000} {
			if got := leasehold.BucketOf(v.key, n); got != v.want[i] {
				t.Errorf("BucketOf(%q, %d) = %d, want %d", v.key, n, got, v.want[i])
			}
		}
	}
}

// Member-scoped tokens (docs/security.md): each member's token covers its own record
// <group>/_members/<member> alone. The members share the group as any others; a token cannot act
// for another member (403, whatever the call), and a process holding the right token but another
// instance cannot take over a live member's session (409 member-in-use). Nothing refused moves a
// bucket.
func TestMemberScopedTokensActForTheirOwnMemberOnly(t *testing.T) {
	group := testserver.ScopedGroup
	w := newBucketWork()
	scoped := func(i int) *leasehold.Client {
		c, err := leasehold.NewClient(shared.URL, leasehold.ClientOptions{Token: testserver.MemberTokens[i]})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	m0, m1 := testserver.ScopedMembers[0], testserver.ScopedMembers[1]
	instance1 := leasehold.NewInstance()
	runMember(t, leasehold.MemberConfig{Client: scoped(0), Group: group, Member: m0, Buckets: 4, Timing: fast}, w)
	runMember(t, leasehold.MemberConfig{Client: scoped(1), Group: group, Member: m1, Instance: instance1, Buckets: 4, Timing: fast}, w)
	w.waitBalanced(t, "m0 and m1", []string{m0, m1}, 4)
	before := w.loads()

	// m0's token, for m1: the sharded member refuses to start, and no call for m1 gets through.
	err := leasehold.RunSharded(context.Background(), leasehold.MemberConfig{Client: scoped(0), Group: group, Member: m1, Timing: fast},
		func(context.Context, leasehold.Bucket) error { t.Error("worked as m1 with m0's token"); return nil })
	var p *leasehold.Problem
	if !errors.As(err, &p) || p.Status != 403 {
		t.Fatalf("RunSharded as m1 with m0's token: %v, expected the server's 403", err)
	}
	ctx := context.Background()
	for what, call := range map[string]func() error{
		"heartbeat": func() error {
			_, err := scoped(0).Heartbeat(ctx, group, m1, leasehold.HeartbeatRequest{Instance: leasehold.NewInstance(), LeaseDuration: time.Second})
			return err
		},
		"handoff": func() error {
			_, err := scoped(0).ConfirmHandoff(ctx, group, m1, instance1, 1, before[m1][0], 1)
			return err
		},
		"leave": func() error { return scoped(0).Leave(ctx, group, m1, instance1, 1) },
	} {
		if err := call(); !errors.As(err, &p) || p.Status != 403 || p.Kind != "forbidden" {
			t.Errorf("%s for m1 with m0's token: %v, expected 403 forbidden", what, err)
		}
	}
	// m1's own token from another process (another instance): m1's session is live, so 409.
	_, err = scoped(1).Heartbeat(ctx, group, m1, leasehold.HeartbeatRequest{Instance: leasehold.NewInstance(), LeaseDuration: time.Second})
	if !errors.As(err, &p) || p.Status != 409 || p.Kind != "member-in-use" {
		t.Errorf("a heartbeat as m1 from another instance: %v, expected 409 member-in-use", err)
	}
	time.Sleep(500 * time.Millisecond)
	if after := w.loads(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the refused calls moved buckets: %v, then %v", before, after)
	}
	if len(w.overlap) > 0 {
		t.Fatal(strings.Join(w.overlap, "\n"))
	}
}
