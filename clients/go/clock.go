package leasehold

import (
	"context"
	"time"
)

// Clock is the time the elector and the member decide with. Now must carry a monotonic reading
// (time.Now does): every deadline is `sentAt + lease - safety` compared on it, never a wall-clock
// stamp from another machine. Inject a fake (package clocktest) to drive time in tests.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened; it reports whether it did.
	Stop() bool
}

// SystemClock is the real clock: time.Now and time.AfterFunc.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// sleep waits d on clock, or until ctx ends or wake receives; it reports whether d fully passed.
func sleep(ctx context.Context, clock Clock, d time.Duration, wake <-chan struct{}) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	done := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	case <-wake:
		return false
	}
}
