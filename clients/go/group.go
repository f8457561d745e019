package leasehold

import (
	"context"
	"time"

	"github.com/leasehold-dev/leasehold/clients/go/internal/wire"
)

// HeartbeatRequest renews (or, without Session, starts) a member's session in a sharded group.
type HeartbeatRequest struct {
	Instance string
	// Session is the session this process holds, sent only while its window is open; 0 to start
	// the next one.
	Session int64
	// Ended, only without Session, is the newest session this process worked under (all its work
	// has stopped): the server starts the next session on top of it. 0 when it never had one.
	Ended         int64
	LeaseDuration time.Duration
	// Buckets is the count a new group starts with (0: the group must exist).
	Buckets int
}

// Heartbeat is what a member holds and is asked to give up after its session was renewed.
type Heartbeat struct {
	Session       int64
	LeaseDuration time.Duration
	// Buckets is the group's bucket count N: a key belongs to BucketOf(key, N).
	Buckets  int
	Epoch    int64
	Held     []HeldBucket
	Handoffs []AskedHandoff
	Members  []string
	Unowned  int
	// Settled: nothing is moving; heartbeat every renewal interval (else every retry period).
	Settled bool
}

// HeldBucket is a bucket the member may work on, with its fencing term.
type HeldBucket struct {
	Bucket int
	Term   int64
}

// AskedHandoff is a bucket the member must stop, then confirm (ConfirmHandoff).
type AskedHandoff struct {
	Bucket int
	Term   int64
	// To is the member the bucket goes to, "" when it is released (the count changed).
	To     string
	Reason string
}

// Heartbeat renews or starts member's session of group and answers what it holds.
func (c *Client) Heartbeat(ctx context.Context, group, member string, r HeartbeatRequest) (Heartbeat, error) {
	body := wire.HeartbeatRequest{Instance: r.Instance, LeaseMs: millis(r.LeaseDuration)}
	if r.Session > 0 {
		s := int(r.Session)
		body.Session = &s
	}
	if r.Ended > 0 {
		e := int(r.Ended)
		body.Ended = &e
	}
	if r.Buckets > 0 {
		n := r.Buckets
		body.Buckets = &n
	}
	res, err := c.typed.HeartbeatMemberWithResponse(ctx, group, member, body)
	if err != nil {
		return Heartbeat{}, transportError("heartbeat", err)
	}
	if res.JSON200 == nil {
		return Heartbeat{}, problemOf("heartbeat", res.HTTPResponse, res.Body)
	}
	h := res.JSON200
	out := Heartbeat{
		Session:       int64(h.Session),
		LeaseDuration: time.Duration(h.LeaseMs) * time.Millisecond,
		Buckets:       h.Buckets,
		Epoch:         int64(h.Epoch),
		Members:       h.Members,
		Unowned:       h.Unowned,
		Settled:       h.Settled,
	}
	for _, b := range h.Held {
		out.Held = append(out.Held, HeldBucket{Bucket: b.Bucket, Term: int64(b.Term)})
	}
	for _, a := range h.Handoffs {
		to := ""
		if a.To != nil {
			to = *a.To
		}
		out.Handoffs = append(out.Handoffs, AskedHandoff{Bucket: a.Bucket, Term: int64(a.Term), To: to, Reason: string(a.Reason)})
	}
	return out, nil
}

// ConfirmHandoff tells the server the work on bucket at term has stopped; it answers where the
// bucket went ("transferred", "released" or "kept").
func (c *Client) ConfirmHandoff(ctx context.Context, group, member, instance string, session int64, bucket int, term int64) (string, error) {
	res, err := c.typed.ConfirmHandoffWithResponse(ctx, group, member, wire.HandoffConfirmation{
		Instance: instance, Session: int(session), Bucket: bucket, Term: int(term),
	})
	if err != nil {
		return "", transportError("handoff", err)
	}
	if res.JSON200 == nil {
		return "", problemOf("handoff", res.HTTPResponse, res.Body)
	}
	return string(res.JSON200.Outcome), nil
}

// Leave ends member's session (all its work must have stopped): every bucket it held is free.
// Repeating it for the same session is harmless.
func (c *Client) Leave(ctx context.Context, group, member, instance string, session int64) error {
	res, err := c.typed.LeaveGroupWithResponse(ctx, group, member, wire.LeaveRequest{Instance: instance, Session: int(session)})
	if err != nil {
		return transportError("leave", err)
	}
	if res.JSON200 == nil {
		return problemOf("leave", res.HTTPResponse, res.Body)
	}
	return nil
}
