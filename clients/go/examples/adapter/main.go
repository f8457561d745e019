// A receive adapter in the style of Knative eventing's: it takes events from a source and sends
// them to a sink, but only while it leads, and it passes its term downstream so the sink can
// refuse a deposed leader's late sends (docs/fencing.md). Run several replicas; one sends.
//
//	LEASEHOLD_STORE=http://127.0.0.1:8787 LEASEHOLD_TOKEN=... SINK=http://sink.example/ go run ./examples/adapter
package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
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
	sink := os.Getenv("SINK")
	var elector *leasehold.Elector
	elector, err = leasehold.NewElector(leasehold.Config{
		Client:          client,
		Name:            "adapters/github-source",
		ReleaseOnCancel: true, // on SIGTERM: stop sending, then release, so a replica takes over at once
		Metadata:        map[string]string{"pod": os.Getenv("HOSTNAME")},
		Callbacks: leasehold.Callbacks{
			OnStartedLeading: func(ctx context.Context, term int64) {
				log.Printf("leading, term %d", term)
				receive(ctx, elector, term, sink)
			},
			OnStoppedLeading: func() { log.Print("stopped leading") },
			OnNewLeader:      func(identity string) { log.Printf("leader: %q", identity) },
		},
	})
	if err != nil {
		log.Fatal(err) // configuration that cannot be right, each field named
	}
	// A liveness probe: fails if the elector believes it leads 5 s past its window (stuck).
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := elector.Check(5 * time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	go func() { log.Print(http.ListenAndServe("127.0.0.1:8080", nil)) }()
	if err := elector.Run(ctx); err != nil {
		log.Fatal(err) // the server refused the token or the lease name
	}
}

// receive forwards events until leadership ends (ctx is cancelled at that instant). Before each
// send it asks StillLeader(), which reads the clock: a process that was paused past its window
// sees false on waking, before any timer has run.
func receive(ctx context.Context, elector *leasehold.Elector, term int64, sink string) {
	events := source(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case event := <-events:
			if !elector.StillLeader() {
				return
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, sink, bytes.NewReader(event))
			if err != nil {
				log.Print(err)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Ce-Specversion", "1.0")
			req.Header.Set("Ce-Type", "dev.example.github.push")
			req.Header.Set("Ce-Source", "adapters/github-source")
			req.Header.Set("Ce-Id", fmt.Sprintf("%d-%d", term, time.Now().UnixNano()))
			// The fencing token: the sink keeps the highest term it has seen and refuses older ones.
			req.Header.Set("Ce-Leaseholdterm", strconv.FormatInt(term, 10))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				log.Print(err)
				continue
			}
			_ = res.Body.Close()
		}
	}
}

// source stands in for the system the adapter reads (a webhook queue, a poll of an API).
func source(ctx context.Context) <-chan []byte {
	out := make(chan []byte)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case out <- []byte(fmt.Sprintf(`{"n":%d}`, n)):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
