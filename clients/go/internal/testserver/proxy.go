package testserver

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Fault is what the proxy does to a request a rule matches.
type Fault int

const (
	// DropResponse forwards the request (the server acts on it), then closes the client's
	// connection without an answer: a write that applied, whose answer was lost.
	DropResponse Fault = iota + 1
	// Refuse503 answers 503 without forwarding: the server's own "could not decide".
	Refuse503
	// Hang holds the request unanswered (not forwarded) until Heal.
	Hang
	// RefuseOverCapacity answers as the Node server does past its connection cap, without
	// forwarding: 503 over-capacity, bound maxConnections, Retry-After: 1.
	RefuseOverCapacity
	// StreamingUnavailable answers as a buffered deployment (a Lambda function behind API
	// Gateway) answers a watch: 501 streaming-unavailable, without forwarding.
	StreamingUnavailable
	// Late holds the request until Heal, then forwards it (the server acts on it, long after the
	// client gave up) and closes the client's connection: a request the network delivered late,
	// after the ones the client sent since.
	Late
)

type rule struct {
	suffix    string
	fault     Fault
	remaining int
}

// Proxy is a fault proxy on 127.0.0.1 in front of an API server: requests pass through
// (streams too) unless a rule matches.
type Proxy struct {
	URL      string
	upstream *url.URL
	forward  *httputil.ReverseProxy
	direct   *http.Client
	listener net.Listener
	server   *http.Server

	mu     sync.Mutex
	rules  []*rule
	healed chan struct{}
	seen   map[string]int
}

// NewProxy starts a proxy to upstream for t.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{
		URL:      "http://" + listener.Addr().String(),
		upstream: u,
		forward:  &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) }, FlushInterval: -1},
		direct:   &http.Client{Transport: &http.Transport{}},
		listener: listener,
		healed:   make(chan struct{}),
		seen:     map[string]int{},
	}
	p.server = &http.Server{Handler: p}
	go func() { _ = p.server.Serve(listener) }()
	t.Cleanup(func() {
		p.Heal()
		_ = p.server.Close()
	})
	return p
}

// Inject applies fault to the next `times` requests whose path ends with suffix ("/acquire",
// "/renew", "/heartbeat"); times < 0: until Heal.
func (p *Proxy) Inject(suffix string, fault Fault, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &rule{suffix: suffix, fault: fault, remaining: times})
}

// Heal removes every rule and lets hanging requests go (unanswered); Late ones are delivered now.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
	select {
	case <-p.healed:
	default:
		close(p.healed)
	}
	p.healed = make(chan struct{})
}

// Seen is how many requests with a path ending in suffix reached the proxy.
func (p *Proxy) Seen(suffix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[suffix]
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	var fault Fault
	for _, s := range []string{"/acquire", "/renew", "/release", "/heartbeat", "/handoff", "/leave", "/watch"} {
		if strings.HasSuffix(r.URL.Path, s) {
			p.seen[s]++
		}
	}
	for _, rule := range p.rules {
		if rule.remaining != 0 && strings.HasSuffix(r.URL.Path, rule.suffix) {
			if rule.remaining > 0 {
				rule.remaining--
			}
			fault = rule.fault
			break
		}
	}
	healed := p.healed
	p.mu.Unlock()
	switch fault {
	case DropResponse:
		p.deliver(r.Context(), r, mustRead(r))
		hangUp(w)
	case Late:
		body := mustRead(r)
		<-healed
		// Delivered after the client gave up: not bound to its request's context.
		p.deliver(context.Background(), r, body)
		hangUp(w)
	case Refuse503:
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"type":"urn:leasehold:problem:store-unavailable","title":"Service Unavailable","status":503,"detail":"injected by the test proxy"}`))
	case RefuseOverCapacity:
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"type":"urn:leasehold:problem:over-capacity","title":"Server at a bound of its capacity","status":503,"detail":"injected by the test proxy","bound":"maxConnections"}`))
	case StreamingUnavailable:
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = w.Write([]byte(`{"type":"urn:leasehold:problem:streaming-unavailable","title":"Streaming unavailable","status":501,"detail":"injected by the test proxy"}`))
	case Hang:
		select {
		case <-healed:
		case <-r.Context().Done():
		}
		hangUp(w)
	default:
		p.forward.ServeHTTP(w, r)
	}
}

// mustRead is the request's body (empty when it cannot be read).
func mustRead(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	return body
}

// deliver sends r (with body) to the server, and throws its answer away.
func (p *Proxy) deliver(ctx context.Context, r *http.Request, body []byte) {
	out, err := http.NewRequestWithContext(ctx, r.Method, p.upstream.String()+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return
	}
	out.Header = r.Header.Clone()
	if res, err := p.direct.Do(out); err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
	}
}
