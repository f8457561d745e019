// One candidate of the Go DynamoDB lock client (cirello.io/dynamolock/v2), as its README uses it:
// a lease of leaseMs with a background heartbeat, and a blocking AcquireLock that reads the item
// every refreshMs until the lock is free or its observed lease ran out. For bench/follower-reads.
//
//	dynamolock-candidate <endpoint> <table> <key> <owner> <leaseMs> <heartbeatMs> <refreshMs>
//
// Prints one JSON line per step, stamped with CLOCK_MONOTONIC (the clock the bench reads with
// process.hrtime): {"event":"waiting"|"acquired"|"released","at":"<ns>"}. SIGTERM releases the
// lock (a graceful handover); SIGKILL is the crash.
//
// bench/support/lock-peers.ts builds this in a temp copy, requiring the dynamolock release the
// module proxy serves (or a source tree named by DYNAMOLOCK_V2_DIR, by a replace directive).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"cirello.io/dynamolock/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func nanos() int64 {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic(errno)
	}
	return ts.Nano()
}

func say(event string) { fmt.Printf("{\"event\":%q,\"at\":\"%d\"}\n", event, nanos()) }

func millis(s string) time.Duration {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return time.Duration(n) * time.Millisecond
}

func main() {
	a := os.Args[1:]
	db := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(a[0]),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("leasehold-test", "leasehold-test", ""),
	})
	client, err := dynamolock.New(db, a[1],
		dynamolock.WithOwnerName(a[3]),
		dynamolock.WithLeaseDuration(millis(a[4])),
		dynamolock.WithHeartbeatPeriod(millis(a[5])),
	)
	if err != nil {
		panic(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	say("waiting")
	lock, err := client.AcquireLockWithContext(context.Background(), a[2],
		dynamolock.WithRefreshPeriod(millis(a[6])),
		dynamolock.WithAdditionalTimeToWaitForLock(24*time.Hour),
	)
	if err != nil {
		panic(err)
	}
	say("acquired")
	<-stop
	if ok, err := client.ReleaseLockWithContext(context.Background(), lock); ok && err == nil {
		say("released")
	}
}
