// A client-go candidate as an OS process, for test/go/processes.test.ts: client-go's own
// leaderelection.RunOrDie on a k8slock.Lock, campaigning again after each term as users do.
//
//	candidate -url URL -name LEASE -identity ID -log FILE
//
// While it leads, every 20 ms it takes CLOCK_MONOTONIC, then checks that the lock still holds
// the term it started with (Term() unchanged and StillLeader()), and only then appends
// "<ns> 0 <term> <identity> <pid>" to its log. On stdout, {"held":[0]} / {"held":[]} lines.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
	"github.com/leasehold-dev/leasehold/clients/go/internal/testprocs/mono"
	"github.com/leasehold-dev/leasehold/clients/go/k8slock"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
)

// The timing of the test: client-go's proportions (15 s / 10 s / 2 s) scaled down.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1400 * time.Millisecond
	retryPeriod   = 250 * time.Millisecond
)

func main() {
	url := flag.String("url", "", "API URL")
	name := flag.String("name", "", "lease name")
	identity := flag.String("identity", "", "holder identity")
	logPath := flag.String("log", "", "work log")
	flag.Parse()
	klog.SetOutput(os.Stderr)
	if err := run(*url, *name, *identity, *logPath); err != nil {
		fmt.Fprintln(os.Stderr, "k8s candidate:", err)
		os.Exit(1)
	}
}

func run(url, name, identity, logPath string) error {
	work, err := mono.Open(logPath, identity)
	if err != nil {
		return err
	}
	client, err := leasehold.NewClient(url, leasehold.ClientOptions{})
	if err != nil {
		return err
	}
	lock, err := k8slock.New(k8slock.Config{Client: client, Name: name, Identity: identity})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			ReleaseOnCancel: true, Name: name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					term := lock.Term()
					work.Hold(0, term)
					defer work.Drop(0)
					for ctx.Err() == nil {
						at := mono.Nanos()
						if lock.Term() == term && lock.StillLeader() {
							work.Work(at, 0, term)
						}
						select {
						case <-ctx.Done():
						case <-time.After(20 * time.Millisecond):
						}
					}
				},
				OnStoppedLeading: func() {},
			},
		})
	}
	return nil
}
