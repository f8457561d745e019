// Acquires, renews, reads, watches and releases one lease against a running leasehold API, then
// joins a sharded group as a remote member (heartbeat, leave), through the client oapi-codegen
// generated from the document that server serves (package leaseholdapi, generated next to this
// file by test/go-client.test.ts; never edited by hand). One line per step on stdout; any surprise
// is a message on stderr and exit status 1.
//
//	go-client -url http://127.0.0.1:8787 [-token T] -name adapters/go-1 -group adapters/go-group-1
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"leasehold.test/go-client/leaseholdapi"
)

const holder = "go-client"

func main() {
	url := flag.String("url", "", "base URL of the leasehold API")
	token := flag.String("token", "", "bearer token (empty: a server without auth)")
	name := flag.String("name", "", "lease name")
	group := flag.String("group", "", "sharded group name")
	flag.Parse()
	if err := run(*url, *token, *name, *group); err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
}

func run(url, token, name, group string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := leaseholdapi.NewClientWithResponses(url, leaseholdapi.WithRequestEditorFn(
		func(_ context.Context, req *http.Request) error {
			if token != "" {
				// Lower case on purpose: the scheme is case-insensitive.
				req.Header.Set("Authorization", "bearer "+token)
			}
			return nil
		}))
	if err != nil {
		return err
	}

	// This process's instance: picked once, sent with every write; the server keeps its digest only.
	instance := newInstance()
	metadata := map[string]string{"lang": "go"}
	acquired, err := client.AcquireLeaseWithResponse(ctx, name, leaseholdapi.AcquireRequest{
		Holder: holder, Instance: instance, LeaseMs: 15000, Metadata: &metadata,
	})
	if err != nil {
		return err
	}
	if acquired.JSON200 == nil || !acquired.JSON200.Leader {
		return unexpected("acquire", acquired.HTTPResponse, acquired.Body)
	}
	term := acquired.JSON200.Lease.Term
	fmt.Printf("acquired %s term=%d etag=%s\n", acquired.JSON200.Lease.Name, term, acquired.HTTPResponse.Header.Get("ETag"))

	renewed, err := client.RenewLeaseWithResponse(ctx, name, leaseholdapi.HolderTermRequest{Holder: holder, Instance: instance, Term: term})
	if err != nil {
		return err
	}
	if renewed.JSON200 == nil || !renewed.JSON200.Leader {
		return unexpected("renew", renewed.HTTPResponse, renewed.Body)
	}
	fmt.Printf("renewed term=%d revision=%s\n", renewed.JSON200.Lease.Term, renewed.JSON200.Lease.Revision)

	read, err := client.GetLeaseWithResponse(ctx, name)
	if err != nil {
		return err
	}
	if read.JSON200 == nil || read.JSON200.Holder == nil {
		return unexpected("get", read.HTTPResponse, read.Body)
	}
	fmt.Printf("read holder=%s term=%d lang=%s etag=%s\n", *read.JSON200.Holder, read.JSON200.Term,
		read.JSON200.Metadata["lang"], read.HTTPResponse.Header.Get("ETag"))

	// The generated ClientInterface returns the raw response: the stream is read as it arrives.
	stream, err := client.ClientInterface.(*leaseholdapi.Client).WatchLease(ctx, name, &leaseholdapi.WatchLeaseParams{})
	if err != nil {
		return err
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		return fmt.Errorf("watch: status %d, content type %q", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	events := readEvents(bufio.NewScanner(stream.Body))
	first, err := nextEvent(events)
	if err != nil {
		return err
	}
	fmt.Printf("watch %s\n", describe(first))

	released, err := client.ReleaseLeaseWithResponse(ctx, name, leaseholdapi.HolderTermRequest{Holder: holder, Instance: instance, Term: term})
	if err != nil {
		return err
	}
	if released.JSON200 == nil || released.JSON200.Leader || released.JSON200.Lease.Holder != nil {
		return unexpected("release", released.HTTPResponse, released.Body)
	}
	fmt.Printf("released term=%d\n", released.JSON200.Lease.Term)

	second, err := nextEvent(events)
	if err != nil {
		return err
	}
	fmt.Printf("watch %s\n", describe(second))

	// The typed problem of a refused call: renewing a released term.
	stale, err := client.RenewLeaseWithResponse(ctx, name, leaseholdapi.HolderTermRequest{Holder: holder, Instance: instance, Term: term})
	if err != nil {
		return err
	}
	if stale.ApplicationproblemJSON409 == nil {
		return unexpected("stale renew", stale.HTTPResponse, stale.Body)
	}
	fmt.Printf("stale renew %d %s\n", stale.ApplicationproblemJSON409.Status, stale.ApplicationproblemJSON409.Type)
	return shard(ctx, client, group)
}

// shard is a remote member's life in a sharded group: the first heartbeat starts the group and
// its session, the answer lists the buckets held with their terms; leave ends the session.
func shard(ctx context.Context, client *leaseholdapi.ClientWithResponses, group string) error {
	const member = "go-member"
	instance := newInstance()
	buckets := 4
	beat, err := client.HeartbeatMemberWithResponse(ctx, group, member, leaseholdapi.HeartbeatRequest{
		Instance: instance, LeaseMs: 15000, Buckets: &buckets,
	})
	if err != nil {
		return err
	}
	if beat.JSON200 == nil {
		return unexpected("heartbeat", beat.HTTPResponse, beat.Body)
	}
	terms := make([]string, 0, len(beat.JSON200.Held))
	for _, held := range beat.JSON200.Held {
		terms = append(terms, fmt.Sprintf("%d@%d", held.Bucket, held.Term))
	}
	fmt.Printf("heartbeat session=%d buckets=%d held=%s settled=%t\n", beat.JSON200.Session, beat.JSON200.Buckets,
		strings.Join(terms, ","), beat.JSON200.Settled)

	session := beat.JSON200.Session
	left, err := client.LeaveGroupWithResponse(ctx, group, member, leaseholdapi.LeaveRequest{Instance: instance, Session: session})
	if err != nil {
		return err
	}
	if left.JSON200 == nil {
		return unexpected("leave", left.HTTPResponse, left.Body)
	}
	fmt.Printf("left session=%d\n", left.JSON200.Session)

	stale, err := client.HeartbeatMemberWithResponse(ctx, group, member, leaseholdapi.HeartbeatRequest{
		Instance: instance, LeaseMs: 15000, Session: &session,
	})
	if err != nil {
		return err
	}
	if stale.ApplicationproblemJSON409 == nil {
		return unexpected("stale heartbeat", stale.HTTPResponse, stale.Body)
	}
	fmt.Printf("stale heartbeat %d %s\n", stale.ApplicationproblemJSON409.Status, stale.ApplicationproblemJSON409.Type)
	return nil
}

type event struct {
	id   string
	data leaseholdapi.WatchEvent
	err  error
}

// readEvents parses Server-Sent Events (one "data:" line per event, as the server sends them)
// into the generated WatchEvent type.
func readEvents(scanner *bufio.Scanner) <-chan event {
	out := make(chan event)
	go func() {
		defer close(out)
		var id, kind, data string
		for scanner.Scan() {
			line := scanner.Text()
			switch {
			case line == "":
				if kind == "lease" {
					var e event
					e.id = id
					e.err = json.Unmarshal([]byte(data), &e.data)
					out <- e
				}
				id, kind, data = "", "", ""
			case strings.HasPrefix(line, "id:"):
				id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			case strings.HasPrefix(line, "event:"):
				kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			}
		}
		if err := scanner.Err(); err != nil {
			out <- event{err: err}
		}
	}()
	return out
}

func nextEvent(events <-chan event) (event, error) {
	select {
	case e, ok := <-events:
		if !ok {
			return e, fmt.Errorf("watch: the stream ended")
		}
		return e, e.err
	case <-time.After(10 * time.Second):
		return event{}, fmt.Errorf("watch: no event within 10 s")
	}
}

func describe(e event) string {
	if e.data.Lease == nil {
		return fmt.Sprintf("id=%s lease=null free=%t", e.id, e.data.Free)
	}
	holder := "null"
	if e.data.Lease.Holder != nil {
		holder = *e.data.Lease.Holder
	}
	return fmt.Sprintf("id=%s holder=%s term=%d free=%t", e.id, holder, e.data.Lease.Term, e.data.Free)
}

func unexpected(step string, res *http.Response, body []byte) error {
	return fmt.Errorf("%s: unexpected %s: %s", step, res.Status, strings.TrimSpace(string(body)))
}

// newInstance is a random id (a UUID's 32 hex digits) picked once per process.
func newInstance() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
