// A Go elector candidate as an OS process, for test/go/processes.test.ts.
//
//	candidate -url URL -name LEASE -identity ID -log FILE -lease-ms 1000
//
// While it leads, every 20 ms it takes CLOCK_MONOTONIC, then checks StillLeader(), and only then
// appends "<ns> 0 <term> <identity> <pid>" to its log (the stamp is taken before the check, so a
// process paused between the two never writes a stamp from after its window). On stdout: a JSON
// line whenever it starts or stops working ({"held":[0]} / {"held":[]}), and on SIGCONT
// {"event":"cont","stillLeader":...,"term":...}: what StillLeader() said the moment it woke.
// SIGTERM stops it gracefully (the work returns, then the lease is released).
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
)

func main() {
	url := flag.String("url", "", "API URL")
	name := flag.String("name", "", "lease name")
	identity := flag.String("identity", "", "holder identity")
	logPath := flag.String("log", "", "work log")
	leaseMs := flag.Int("lease-ms", 1000, "lease (ms)")
	flag.Parse()
	if err := run(*url, *name, *identity, *logPath, time.Duration(*leaseMs)*time.Millisecond); err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		os.Exit(1)
	}
}

func run(url, name, identity, logPath string, lease time.Duration) error {
	work, err := mono.Open(logPath, identity)
	if err != nil {
		return err
	}
	client, err := leasehold.NewClient(url, leasehold.ClientOptions{})
	if err != nil {
		return err
	}
	var e *leasehold.Elector
	e, err = leasehold.NewElector(leasehold.Config{
		Client: client, Name: name, Identity: identity, Timing: leasehold.Timing{LeaseDuration: lease},
		ReleaseOnCancel: true,
		Callbacks: leasehold.Callbacks{
			OnStartedLeading: func(ctx context.Context, term int64) {
				work.Hold(0, term)
				defer work.Drop(0)
				for ctx.Err() == nil {
					at := mono.Nanos()
					if e.StillLeader() {
						work.Work(at, 0, term)
					}
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
				}
			},
		},
	})
	if err != nil {
		return err
	}
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	go func() {
		for range cont {
			still := e.StillLeader()
			work.Event("cont", map[string]any{"stillLeader": still, "term": e.Term()})
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return e.Run(ctx)
}
