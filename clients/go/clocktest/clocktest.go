// Package clocktest is a manual leasehold.Clock for tests: time moves only when the test calls
// Advance, and timers due by then fire in deadline order.
package clocktest

import (
	"sort"
	"sync"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
)

// FakeClock is a leasehold.Clock whose time the test moves. Its readings carry no monotonic
// part, which is what a paused process sees on waking: a jump.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	clock *FakeClock
	at    time.Time
	f     func()
	done  bool
}

// New returns a clock reading start.
func New(start time.Time) *FakeClock { return &FakeClock{now: start} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *FakeClock) AfterFunc(d time.Duration, f func()) leasehold.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{clock: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *timer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// Advance moves the clock by d and runs every timer that came due, in deadline order, each in its
// own goroutine (as time.AfterFunc does).
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		go t.f()
	}
}

// Pending is how many timers wait to fire.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}
