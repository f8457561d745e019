// Package leasehold is the Go client of leasehold, leader election on compare-and-swap leases
// kept in storage you already run, reached through leasehold's HTTP API.
//
//   - Run / Elector: one lease, in client-go's shape (OnStartedLeading(ctx, term),
//     OnStoppedLeading, OnNewLeader, ReleaseOnCancel), campaigning across terms until ctx ends.
//     Leadership lasts until sentAt + LeaseDuration - SafetyMargin of the last successful
//     renewal on this process's monotonic clock; a watchdog ends it at that instant and
//     StillLeader reads the clock when asked; lost answers are settled by sending the call again;
//     the release is sent only after the work returned.
//   - RunSharded: a member of a sharded group, one work call per bucket held, with BucketOf.
//   - Client: the API's calls (acquire, renew, release, get, compare-and-swap, watch, the group
//     routes), over a wire layer generated from the served OpenAPI document.
//
// The package k8slock (module github.com/leasehold-dev/leasehold/clients/go/k8slock) is
// client-go's resourcelock.Interface on leasehold. The whole guide: docs/go.md in the repository.
package leasehold
