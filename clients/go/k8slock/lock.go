// Package k8slock is client-go's resourcelock.Interface on leasehold: client-go's
// leaderelection.RunOrDie, controller-runtime's manager (LeaderElectionResourceLockInterface)
// and knative/pkg's leader election run unchanged outside Kubernetes, with their lease kept by a
// leasehold API instead of a coordination.k8s.io Lease.
//
// Each Get reads the lease; each Create and Update is one compare-and-swap on the revision last
// read or written (the API's raw PUT with If-Match / If-None-Match), so two candidates never both
// win a write. The record's term is leasehold's fencing token, kept by the API's term rules:
//
//   - a write naming a new holder (or the same identity after a release) takes term + 1;
//   - a renewal by the holder keeps the term, but only when this Lock started that term: a
//     process restarted under the same identity takes the next term instead of continuing its
//     predecessor's;
//   - a release (client-go's HolderIdentity "") keeps the term.
//
// LeaderTransitions is reported as term - 1 (0 before anyone held the lease), so client-go's
// count and the term move together; what client-go writes there is not used.
//
// Timing stays client-go's: its elector judges expiry by the time it observed a record unchanged
// (LeaseDuration on its own clock), a leader steps down after failing to renew for RenewDeadline
// counted from when it last observed success. What this package adds on top: Term (the fencing
// token to send downstream from OnStartedLeading) and StillLeader, which reads the monotonic
// clock against sentAt + LeaseDuration - SafetyMargin of the last successful write, sentAt being
// when that write was sent (client-go counts from when the answer arrived).
package k8slock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

var _ rl.Interface = (*Lock)(nil)

// resource names leasehold leases in client-go's NotFound and Conflict errors.
var resource = schema.GroupResource{Group: "leasehold.dev", Resource: "leases"}

// Config is a Lock's settings.
type Config struct {
	// Client reaches the API. Required.
	Client *leasehold.Client
	// Name is the lease name (a-z 0-9 . _ / -). Required.
	Name string
	// Identity is this candidate's holder name (client-go's ResourceLockConfig.Identity). Required.
	Identity string
	// Instance is a random id this process picks once (16-64 characters), sent with every write.
	// Default: 32 random hex digits.
	Instance string
	// SafetyMargin is how long before sentAt + LeaseDuration StillLeader turns false.
	// Default LeaseDuration / 10.
	SafetyMargin time.Duration
	// Clock is the time StillLeader reads. Default leasehold.SystemClock.
	Clock leasehold.Clock
	// Logger receives RecordEvent's events. Default: none.
	Logger *slog.Logger
}

// Lock implements client-go's resourcelock.Interface on one leasehold lease.
type Lock struct {
	client   *leasehold.Client
	name     string
	identity string
	instance string
	safety   time.Duration
	clock    leasehold.Clock
	log      *slog.Logger

	mu sync.Mutex
	// current is the record last read or written.
	current *leasehold.Lease
	// held is the term this Lock holds by its own writes (0: none), valid until `until`.
	held  int64
	until time.Time
	// pending are writes whose answer was lost: recognised by their writeId when read back.
	pending []pendingWrite
}

type pendingWrite struct {
	writeID string
	sentAt  time.Time
}

const maxPending = 16

// New checks cfg and returns a lock.
func New(cfg Config) (*Lock, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, &leasehold.ConfigError{Field: "Client", Message: "expected a *leasehold.Client (leasehold.NewClient)"})
	}
	if cfg.Name == "" {
		errs = append(errs, &leasehold.ConfigError{Field: "Name", Message: "expected a lease name"})
	}
	if cfg.Identity == "" {
		errs = append(errs, &leasehold.ConfigError{Field: "Identity", Message: "expected this candidate's identity (client-go refuses an empty one)"})
	}
	if cfg.SafetyMargin < 0 {
		errs = append(errs, &leasehold.ConfigError{Field: "SafetyMargin", Message: "expected 0 (the default) or more"})
	}
	instance := cfg.Instance
	if instance == "" {
		instance = leasehold.NewInstance()
	} else if err := leasehold.CheckInstance(instance); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	clock := cfg.Clock
	if clock == nil {
		clock = leasehold.SystemClock{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Lock{
		client: cfg.Client, name: cfg.Name, identity: cfg.Identity, instance: instance,
		safety: cfg.SafetyMargin, clock: clock, log: log.With("lease", cfg.Name, "identity", cfg.Identity),
	}, nil
}

// Get reads the lease: client-go's NotFound when it does not exist. The raw bytes change with
// every revision, so client-go's observed time restarts on every write it did not make.
func (l *Lock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	lease, err := l.client.Get(ctx, l.name)
	if err != nil {
		return nil, nil, err
	}
	if lease == nil {
		return nil, nil, apierrors.NewNotFound(resource, l.name)
	}
	l.mu.Lock()
	l.seenLocked(lease)
	l.mu.Unlock()
	record := recordOf(lease)
	raw, err := json.Marshal(struct {
		Record   rl.LeaderElectionRecord `json:"record"`
		Revision string                  `json:"revision"`
	}{record, lease.Revision})
	if err != nil {
		return nil, nil, err
	}
	return &record, raw, nil
}

// Create creates the lease for ler's holder at term 1.
func (l *Lock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" {
		return errors.New("k8slock: Create without a holder")
	}
	return l.write(ctx, leasehold.RecordWrite{
		Holder: ler.HolderIdentity, Term: 1, LeaseDuration: leaseDuration(ler), AcquiredAt: time.Now(),
	}, "")
}

// Update writes ler over the record last read or written, by compare-and-swap on its revision;
// client-go's Conflict when another write came first.
func (l *Lock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	l.mu.Lock()
	cur := l.current
	held := l.held
	l.mu.Unlock()
	if cur == nil {
		return errors.New("k8slock: Update before Get or Create")
	}
	w := leasehold.RecordWrite{Holder: ler.HolderIdentity, Term: cur.Term, LeaseDuration: leaseDuration(ler), Metadata: cur.Metadata, AcquiredAt: cur.AcquiredAt}
	switch {
	case ler.HolderIdentity == "":
		// A release keeps the term.
	case cur.Holder == ler.HolderIdentity && held == cur.Term:
		// A renewal of the term this Lock holds.
	default:
		// A new holder, the same identity after a release, or a term this Lock did not start.
		w.Term = cur.Term + 1
		w.AcquiredAt = time.Now()
	}
	return l.write(ctx, w, cur.Revision)
}

func (l *Lock) write(ctx context.Context, w leasehold.RecordWrite, expected string) error {
	w.WriteID = leasehold.NewWriteID()
	w.Instance = l.instance
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	sentAt := l.clock.Now()
	l.mu.Lock()
	l.pending = append(l.pending, pendingWrite{writeID: w.WriteID, sentAt: sentAt})
	if len(l.pending) > maxPending {
		l.pending = l.pending[len(l.pending)-maxPending:]
	}
	l.mu.Unlock()
	lease, err := l.client.CompareAndSwap(ctx, l.name, w, expected)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.seenLocked(&lease)
		return nil
	}
	var p *leasehold.Problem
	if errors.As(err, &p) && refusedAsConflict[p.Kind] {
		if p.Lease != nil {
			l.seenLocked(p.Lease)
		}
		if l.current != nil && l.current.WriteID == w.WriteID {
			return nil // our write is what the server holds
		}
		if p.Kind == "conflict" && w.Holder == l.identity && w.Term == l.held {
			// A renewal of a term that expired by the server's clock: it is never continued, so
			// this Lock holds nothing, and its next write takes term + 1.
			l.held = 0
		}
		return apierrors.NewConflict(resource, l.name, err)
	}
	// No answer, or a 5xx: the write may have landed; a later read recognises it by its writeId.
	// A refusal over a server bound (429, 503 over-capacity) is returned as it is: client-go
	// tries again after RetryPeriod.
	return err
}

// refusedAsConflict are the API's refusals of a write that client-go must see as a lost race
// (its Conflict): a stale revision; a term rule; a lease another holder still holds by the
// server's clock (renewedAt + leaseMs + maxSkewMs, later than client-go's observed expiry), or a
// renewal of a term that expired; the holder name held by another process (another instance).
var refusedAsConflict = map[string]bool{
	"precondition-failed": true, "term-rule": true, "conflict": true, "holder-in-use": true,
}

// seenLocked records what the server holds. A record carrying one of our pending writes is ours,
// counted from when that write was sent.
func (l *Lock) seenLocked(lease *leasehold.Lease) {
	l.current = lease
	sentAt, mine := time.Time{}, false
	for i, p := range l.pending {
		if p.writeID == lease.WriteID {
			sentAt, mine = p.sentAt, true
			l.pending = l.pending[i+1:]
			break
		}
	}
	switch {
	case mine && lease.Holder == l.identity:
		if lease.Term != l.held || sentAt.Add(lease.LeaseDuration-l.safetyOf(lease)).After(l.until) {
			l.held, l.until = lease.Term, sentAt.Add(lease.LeaseDuration-l.safetyOf(lease))
		}
	case mine:
		l.held = 0 // our release
	case lease.Holder != l.identity || lease.Term != l.held:
		l.held = 0 // someone else's write: our term, if any, is over
	}
}

func (l *Lock) safetyOf(lease *leasehold.Lease) time.Duration {
	if l.safety > 0 {
		return l.safety
	}
	return max(time.Millisecond, lease.LeaseDuration/10)
}

// Term is the fencing token of the term this Lock holds (0 when none): pass it downstream with
// every write from OnStartedLeading.
func (l *Lock) Term() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// StillLeader reports whether this Lock holds a term and the window of its last successful write
// (sentAt + LeaseDuration - SafetyMargin, on the monotonic clock) is open. Check it right before
// each side effect: a process paused past its window sees false on waking.
func (l *Lock) StillLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held != 0 && l.clock.Now().Before(l.until)
}

// RecordEvent logs client-go's events ("became leader", "stopped leading").
func (l *Lock) RecordEvent(event string) { l.log.Info(event) }

// Identity is the candidate's identity.
func (l *Lock) Identity() string { return l.identity }

// Describe names the lock in client-go's logs.
func (l *Lock) Describe() string { return fmt.Sprintf("leasehold/%s", l.name) }

func recordOf(lease *leasehold.Lease) rl.LeaderElectionRecord {
	transitions := 0
	if lease.Term > 0 {
		transitions = int(lease.Term - 1)
	}
	return rl.LeaderElectionRecord{
		HolderIdentity:       lease.Holder,
		LeaseDurationSeconds: int((lease.LeaseDuration + time.Second - 1) / time.Second),
		AcquireTime:          metav1.NewTime(lease.AcquiredAt),
		RenewTime:            metav1.NewTime(lease.RenewedAt),
		LeaderTransitions:    transitions,
	}
}

// leaseDuration is ler's, at least one second (client-go writes 1 s on release).
func leaseDuration(ler rl.LeaderElectionRecord) time.Duration {
	return time.Duration(max(1, ler.LeaseDurationSeconds)) * time.Second
}
