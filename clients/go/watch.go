package leasehold

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/leasehold-dev/leasehold/clients/go/internal/wire"
)

// maxEventBytes bounds one Server-Sent Event (a lease record is well under 2 KiB).
const maxEventBytes = 64 * 1024

// WatchEvent is one "lease" event of a watch stream.
type WatchEvent struct {
	// ID is the event id: the lease's revision, or "none".
	ID string
	// Lease is the current record, nil when the lease never existed.
	Lease *Lease
	// Free: released, never created, or expired by the server's rule (sent at that instant).
	Free bool
}

// Watch is an open watch stream of one lease: the current state first, then every change, and
// a Free event at the instant the server judges the lease expired.
type Watch struct {
	body    interface{ Close() error }
	scanner *bufio.Scanner
}

// Watch opens the lease's Server-Sent Events stream. lastEventID resumes after the revision last
// seen (the current state is then sent only if it changed or is free); "" starts afresh. The
// stream ends when ctx ends or the connection drops; Next then returns an error.
func (c *Client) Watch(ctx context.Context, name, lastEventID string) (*Watch, error) {
	params := &wire.WatchLeaseParams{}
	if lastEventID != "" {
		params.LastEventID = &lastEventID
	}
	res, err := c.raw.WatchLease(ctx, name, params)
	if err != nil {
		return nil, transportError("watch", err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		defer res.Body.Close()
		body := make([]byte, 4096)
		n, _ := res.Body.Read(body)
		return nil, problemOf("watch", res, body[:n])
	}
	scanner := bufio.NewScanner(res.Body)
	scanner.Buffer(make([]byte, 4096), maxEventBytes)
	return &Watch{body: res.Body, scanner: scanner}, nil
}

// Next blocks until the next lease event (keep-alive comments are skipped).
func (w *Watch) Next() (WatchEvent, error) {
	var id, kind string
	var data strings.Builder
	for w.scanner.Scan() {
		line := w.scanner.Text()
		switch {
		case line == "":
			if kind == "lease" {
				var e wire.WatchEvent
				if err := json.Unmarshal([]byte(data.String()), &e); err != nil {
					return WatchEvent{}, fmt.Errorf("leasehold watch: event %q: %w", id, err)
				}
				out := WatchEvent{ID: id, Free: e.Free}
				if e.Lease != nil {
					lease := leaseOf(*e.Lease)
					out.Lease = &lease
				}
				return out, nil
			}
			id, kind = "", ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
			// a comment (keep-alive)
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id = value
			case "event":
				kind = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
				if data.Len() > maxEventBytes {
					return WatchEvent{}, errors.New("leasehold watch: an event larger than 64 KiB")
				}
			}
		}
	}
	if err := w.scanner.Err(); err != nil {
		return WatchEvent{}, &TransportError{Op: "watch", Err: err}
	}
	return WatchEvent{}, &TransportError{Op: "watch", Err: errors.New("the stream ended")}
}

// Close ends the stream.
func (w *Watch) Close() error { return w.body.Close() }
