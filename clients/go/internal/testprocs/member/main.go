// A Go sharded member as an OS process, for test/go/processes.test.ts: the Go twin of
// test/support/shard-worker.ts, with the same arguments, log lines and stdout.
//
//	member URL GROUP MEMBER LOG LEASE_MS BUCKETS
//
// Every 20 ms, for each bucket it works on, it takes CLOCK_MONOTONIC, then checks the bucket's
// StillLeader(), and only then appends "<ns> <bucket> <term> <member> <pid>" to its log. On
// stdout, one JSON line whenever the set of buckets it works on changes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	"github.com/leasehold-dev/leasehold/clients/go/internal/testprocs/mono"
)

func main() {
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: member URL GROUP MEMBER LOG LEASE_MS BUCKETS")
		os.Exit(2)
	}
	leaseMs, _ := strconv.Atoi(os.Args[5])
	buckets, _ := strconv.Atoi(os.Args[6])
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4], time.Duration(leaseMs)*time.Millisecond, buckets); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		os.Exit(1)
	}
}

func run(url, group, member, logPath string, lease time.Duration, buckets int) error {
	work, err := mono.Open(logPath, member)
	if err != nil {
		return err
	}
	client, err := leasehold.NewClient(url, leasehold.ClientOptions{})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return leasehold.RunSharded(ctx, leasehold.MemberConfig{
		Client: client, Group: group, Member: member, Buckets: buckets, Timing: leasehold.Timing{LeaseDuration: lease},
	}, func(ctx context.Context, b leasehold.Bucket) error {
		work.Hold(b.Index, b.Term)
		defer work.Drop(b.Index)
		for ctx.Err() == nil {
			at := mono.Nanos()
			if b.StillLeader() {
				work.Work(at, b.Index, b.Term)
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
		return nil
	})
}
