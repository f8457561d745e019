// Every replica works: the group's 16 buckets are shared out over the live replicas, each bucket
// worked on by one replica at a time, with its own fencing term. A key belongs to bucket
// BucketOf(key, b.Buckets); a replica handles the keys of the buckets it holds.
//
//	LEASEHOLD_STORE=http://127.0.0.1:8787 LEASEHOLD_TOKEN=... MEMBER=$HOSTNAME go run ./examples/sharded
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	leasehold "github.com/leasehold-dev/leasehold/clients/go"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := leasehold.NewClient(os.Getenv("LEASEHOLD_STORE"), leasehold.ClientOptions{Token: os.Getenv("LEASEHOLD_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	err = leasehold.RunSharded(ctx, leasehold.MemberConfig{
		Client:  client,
		Group:   "adapters/billing",
		Member:  os.Getenv("MEMBER"), // stable across restarts: a pod or host name
		Buckets: 16,                  // the count a new group starts with
	}, func(ctx context.Context, b leasehold.Bucket) error {
		log.Printf("bucket %d/%d, term %d", b.Index, b.Buckets, b.Term)
		for ctx.Err() == nil {
			for _, key := range pending(ctx) {
				if leasehold.BucketOf(key, b.Buckets) != b.Index {
					continue // another bucket's key
				}
				if !b.StillLeader() {
					return nil // the session's window closed: stop before acting
				}
				handle(key, b.Term) // pass b.Term downstream as the fencing token
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		return nil // ctx cancelled: the bucket moves (a hand-off waits for this return)
	})
	if err != nil {
		log.Fatal(err)
	}
}

func pending(context.Context) []string { return []string{"tenant/7/invoice/2026-001", "order-42"} }

func handle(key string, term int64) { log.Printf("handled %s at term %d", key, term) }
