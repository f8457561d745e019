package clocktest

import "time"

// Jump moves the clock by d without running any timer: what a process sees when it wakes from a
// pause (SIGSTOP, a long GC) before its timers have had a chance to run. Advance(0) runs them.
func (c *FakeClock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
