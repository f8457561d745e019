// Package mono reads CLOCK_MONOTONIC, the clock every process on the machine shares (Node's
// process.hrtime.bigint() reads the same one), so the process tests put the work lines of Go and
// TypeScript processes on one timeline. Go's own monotonic readings are relative to each
// process's start; this is the absolute one. Linux only, like the process tests.
package mono

import (
	"syscall"
	"unsafe"
)

const clockMonotonic = 1

// Nanos is CLOCK_MONOTONIC in nanoseconds.
func Nanos() int64 {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic(errno)
	}
	return ts.Nano()
}
