package leasehold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold-dev/leasehold/clients/go/internal/wire"
)

// Client is one leasehold HTTP API endpoint: the typed calls of the wire contract (generated
// from the served OpenAPI document into internal/wire) with the answers turned into this
// package's types and errors. It holds no lease state: the Elector, the sharded Member and
// k8slock keep the safety rules on top of it. Safe for concurrent use.
type Client struct {
	baseURL string
	http    *http.Client
	raw     *wire.Client
	typed   *wire.ClientWithResponses
}

// ClientOptions are the optional settings of NewClient.
type ClientOptions struct {
	// Token is the bearer token; empty for a server without auth (loopback only).
	Token string
	// HTTPClient sends the requests. It must not set an overall Timeout (watch streams are long);
	// every call is bounded by its context instead. Default: a client of its own.
	HTTPClient *http.Client
}

// NewClient returns a client of the API at baseURL (for example "http://127.0.0.1:8787").
func NewClient(baseURL string, o ClientOptions) (*Client, error) {
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, &ConfigError{Field: "baseURL", Message: fmt.Sprintf("expected an http:// or https:// URL, got %q", baseURL)}
	}
	if strings.ContainsAny(o.Token, " \t\r\n") {
		return nil, &ConfigError{Field: "Token", Message: "expected a token without spaces or line breaks"}
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if hc.Timeout != 0 {
		return nil, &ConfigError{Field: "HTTPClient.Timeout", Message: "expected 0: every call is bounded by its context, and a timeout would cut watch streams"}
	}
	token := o.Token
	raw, err := wire.NewClient(baseURL, wire.WithHTTPClient(hc), wire.WithRequestEditorFn(
		func(ctx context.Context, req *http.Request) error {
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			setTimeoutHeader(ctx, req)
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return &Client{baseURL: strings.TrimSuffix(baseURL, "/"), http: hc, raw: raw, typed: &wire.ClientWithResponses{ClientInterface: raw}}, nil
}

// Lease is one lease record as the API shows it.
type Lease struct {
	Name string
	// Holder is the leader's identity, "" once released.
	Holder string
	// Term is the fencing token: +1 each time leadership passes to a holder, kept by a release.
	Term          int64
	LeaseDuration time.Duration
	// AcquiredAt and RenewedAt are wall-clock stamps: informational, never compared with this
	// machine's clock by the elector.
	AcquiredAt time.Time
	RenewedAt  time.Time
	Metadata   map[string]string
	WriteID    string
	// Revision is the compare-and-swap token (the ETag without quotes).
	Revision string
}

// LeaseResult is the answer of acquire, renew and release.
type LeaseResult struct {
	// Leader is true when the caller holds the lease after the call.
	Leader bool
	Lease  Lease
}

// AcquireRequest asks for a lease (or renews it for its current holder).
type AcquireRequest struct {
	Holder string
	// Instance is this process's random id (Config.Instance): the server renews, releases or
	// re-acquires only for the instance that took the lease, and keeps only its digest.
	Instance      string
	LeaseDuration time.Duration
	Metadata      map[string]string
}

// HolderTerm names the holder (and its instance) and the term it holds, for renew and release.
type HolderTerm struct {
	Holder   string
	Instance string
	Term     int64
}

// RecordWrite is the raw compare-and-swap write: a whole record but renewedAt, which the server
// stamps. Holder "" releases.
type RecordWrite struct {
	Holder        string
	Term          int64
	LeaseDuration time.Duration
	Metadata      map[string]string
	WriteID       string
	AcquiredAt    time.Time
	// Instance is the writer's instance, sent in the Leasehold-Instance header: a write that
	// keeps the holder must come from the instance that took the lease.
	Instance string
}

// Acquire takes the lease when it is free (term + 1), or renews it when Holder holds it.
func (c *Client) Acquire(ctx context.Context, name string, r AcquireRequest) (LeaseResult, error) {
	body := wire.AcquireRequest{Holder: r.Holder, Instance: r.Instance, LeaseMs: millis(r.LeaseDuration)}
	if r.Metadata != nil {
		m := r.Metadata
		body.Metadata = &m
	}
	res, err := c.typed.AcquireLeaseWithResponse(ctx, name, body)
	if err != nil {
		return LeaseResult{}, transportError("acquire", err)
	}
	return leaseResult("acquire", res.HTTPResponse, res.Body, res.JSON200)
}

// Renew extends the lease for its holder in its term; a refusal (409, 404) means it is lost
// (kind "holder-in-use": the holder name is another process's).
func (c *Client) Renew(ctx context.Context, name string, r HolderTerm) (LeaseResult, error) {
	res, err := c.typed.RenewLeaseWithResponse(ctx, name, wire.HolderTermRequest{Holder: r.Holder, Instance: r.Instance, Term: int(r.Term)})
	if err != nil {
		return LeaseResult{}, transportError("renew", err)
	}
	return leaseResult("renew", res.HTTPResponse, res.Body, res.JSON200)
}

// Release frees the lease, keeping its term. Repeating it for the same term is harmless.
func (c *Client) Release(ctx context.Context, name string, r HolderTerm) (LeaseResult, error) {
	res, err := c.typed.ReleaseLeaseWithResponse(ctx, name, wire.HolderTermRequest{Holder: r.Holder, Instance: r.Instance, Term: int(r.Term)})
	if err != nil {
		return LeaseResult{}, transportError("release", err)
	}
	return leaseResult("release", res.HTTPResponse, res.Body, res.JSON200)
}

// Get reads the lease; nil when it does not exist.
func (c *Client) Get(ctx context.Context, name string) (*Lease, error) {
	res, err := c.typed.GetLeaseWithResponse(ctx, name)
	if err != nil {
		return nil, transportError("get", err)
	}
	if res.StatusCode() == http.StatusNotFound {
		return nil, nil
	}
	if res.JSON200 == nil {
		return nil, problemOf("get", res.HTTPResponse, res.Body)
	}
	lease := leaseOf(*res.JSON200)
	return &lease, nil
}

// CompareAndSwap writes w only if the lease is at revision expected ("" = only if it does not
// exist); the token needs the verb cas. A stale revision is a *Problem of kind
// "precondition-failed" carrying the current record; a write the server's term rules refuse is
// kind "term-rule"; a lease another holder still holds by the server's clock is kind "conflict"
// with RetryAfter (when the server expects it free), as is a renewal of a term that expired; a
// write keeping the holder from another instance is kind "holder-in-use".
func (c *Client) CompareAndSwap(ctx context.Context, name string, w RecordWrite, expected string) (Lease, error) {
	params := &wire.PutLeaseParams{LeaseholdInstance: w.Instance}
	if expected == "" {
		star := wire.PutLeaseParamsIfNoneMatch("*")
		params.IfNoneMatch = &star
	} else {
		tag := strconv.Quote(expected)
		params.IfMatch = &tag
	}
	body := wire.RecordWrite{
		Term:       int(w.Term),
		LeaseMs:    millis(w.LeaseDuration),
		Metadata:   w.Metadata,
		WriteId:    w.WriteID,
		AcquiredAt: int(w.AcquiredAt.UnixMilli()),
	}
	if body.Metadata == nil {
		body.Metadata = map[string]string{}
	}
	if w.Holder != "" {
		holder := w.Holder
		body.Holder = &holder
	}
	res, err := c.typed.PutLeaseWithResponse(ctx, name, params, body)
	if err != nil {
		return Lease{}, transportError("compare-and-swap", err)
	}
	switch {
	case res.JSON200 != nil:
		return leaseOf(*res.JSON200), nil
	case res.JSON201 != nil:
		return leaseOf(*res.JSON201), nil
	}
	return Lease{}, problemOf("compare-and-swap", res.HTTPResponse, res.Body)
}

func leaseResult(op string, hr *http.Response, body []byte, ok *wire.LeaseResult) (LeaseResult, error) {
	if ok == nil {
		return LeaseResult{}, problemOf(op, hr, body)
	}
	return LeaseResult{Leader: ok.Leader, Lease: leaseOf(ok.Lease)}, nil
}

func leaseOf(l wire.Lease) Lease {
	holder := ""
	if l.Holder != nil {
		holder = *l.Holder
	}
	return Lease{
		Name:          l.Name,
		Holder:        holder,
		Term:          int64(l.Term),
		LeaseDuration: time.Duration(l.LeaseMs) * time.Millisecond,
		AcquiredAt:    time.UnixMilli(int64(l.AcquiredAt)),
		RenewedAt:     time.UnixMilli(int64(l.RenewedAt)),
		Metadata:      l.Metadata,
		WriteID:       l.WriteId,
		Revision:      l.Revision,
	}
}

func millis(d time.Duration) int { return int(d / time.Millisecond) }

// Problem is a refusal the API answered (RFC 9457 problem details).
type Problem struct {
	// Op is the call that was refused ("acquire", "heartbeat", ...).
	Op     string
	Status int
	// Kind is the last part of the problem type urn:leasehold:problem:<kind>: one of the Kind
	// constants (KindConflict, KindHolderInUse, KindOverLimit, ...; kinds.gen.go).
	Kind   string
	Title  string
	Detail string
	// Lease is the current record, when the server sent it (409, 412).
	Lease *Lease
	// Rule is the term rule a refused write broke (kind "term-rule").
	Rule string
	// Errors names each failing field (400).
	Errors []FieldError
	// RetryAfter is the server's Retry-After, 0 when absent: on a 503, on a refusal over a bound
	// (429 over-limit, 503 over-capacity), and on a 409 conflict of a lease another holder still
	// holds (when the server expects it free, rounded up to whole seconds).
	RetryAfter time.Duration
	// Bound names the bound a refusal is over (kinds "over-limit" and "over-capacity"):
	// watchStreamsPerToken, watchStreams, recordsPerPrefix, createsPerMinute, maxConnections,
	// inFlight or lateMs (a busy or late server serves current holders' renewals first and sheds
	// acquisitions, reads, lists and watches: retry after RetryAfter).
	Bound string
	// FreeIn is, on a 409 conflict of a lease another holder still holds, how long until the
	// server will consider it free, to the millisecond (RetryAfter is the same, in whole seconds);
	// 0 when absent.
	FreeIn time.Duration
}

// FieldError is one failing field of a 400 answer.
type FieldError struct{ Path, Message string }

func (p *Problem) Error() string {
	msg := fmt.Sprintf("leasehold %s: %d %s", p.Op, p.Status, p.Kind)
	if p.Detail != "" {
		msg += ": " + p.Detail
	}
	return msg
}

// Ambiguous reports whether the refused call may still have applied: a 5xx answer says the
// server could not decide (its store failed or timed out, and a write may have landed), except
// over-capacity, which the server answers before doing anything.
func (p *Problem) Ambiguous() bool { return p.Status >= 500 && !p.OverBound() }

// OverBound reports a refusal over one of the server's bounds (429 over-limit: this token's;
// 503 over-capacity: the server's): nothing was done; the same call may succeed after RetryAfter.
func (p *Problem) OverBound() bool { return p.Kind == KindOverLimit || p.Kind == KindOverCapacity }

// TransportError is a call that got no answer (connection refused or reset, timeout, a lost
// response). A write sent this way may or may not have applied.
type TransportError struct {
	Op  string
	Err error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("leasehold %s: no answer: %v", e.Op, e.Err)
}
func (e *TransportError) Unwrap() error { return e.Err }

// IsAmbiguous reports whether err leaves open whether a write applied: no answer, or a 5xx.
// Such calls are settled by repeating them (acquire, renew, release and heartbeat are
// idempotent for the same holder and instance), never by assuming an outcome.
func IsAmbiguous(err error) bool {
	var t *TransportError
	if errors.As(err, &t) {
		return true
	}
	p := asProblem(err)
	return p != nil && p.Ambiguous()
}

// ProblemKind returns the kind of the API's refusal in err ("conflict", ...), "" when err is not
// an answered refusal.
func ProblemKind(err error) string {
	if p := asProblem(err); p != nil {
		return p.Kind
	}
	return ""
}

// asProblem is err's answered refusal, nil when err is not one.
func asProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return nil
}

// overBound is err's refusal over a server bound (429 over-limit, 503 over-capacity), nil otherwise.
func overBound(err error) *Problem {
	if p := asProblem(err); p != nil && p.OverBound() {
		return p
	}
	return nil
}

// ConfigError is configuration that cannot be right, named by its field; nothing was started.
type ConfigError struct{ Field, Message string }

func (e *ConfigError) Error() string { return fmt.Sprintf("leasehold: %s: %s", e.Field, e.Message) }

func transportError(op string, err error) error { return &TransportError{Op: op, Err: err} }

// problemOf turns a non-success answer into a *Problem, from its problem+json body when it has one.
func problemOf(op string, hr *http.Response, body []byte) error {
	p := &Problem{Op: op, Status: hr.StatusCode, Kind: "http-" + strconv.Itoa(hr.StatusCode)}
	var w wire.Problem
	if strings.Contains(hr.Header.Get("Content-Type"), "json") && json.Unmarshal(body, &w) == nil && w.Type != "" {
		p.Kind = strings.TrimPrefix(w.Type, "urn:leasehold:problem:")
		p.Title, p.Detail = w.Title, w.Detail
		if w.Lease != nil {
			lease := leaseOf(*w.Lease)
			p.Lease = &lease
		}
		if w.Rule != nil {
			p.Rule = *w.Rule
		}
		if w.Bound != nil {
			p.Bound = *w.Bound
		}
		if w.FreeInMs != nil {
			p.FreeIn = time.Duration(*w.FreeInMs) * time.Millisecond
		}
		if w.Errors != nil {
			for _, e := range *w.Errors {
				p.Errors = append(p.Errors, FieldError{Path: e.Path, Message: e.Message})
			}
		}
	} else {
		text := strings.TrimSpace(string(body))
		if len(text) > 200 {
			text = text[:200]
		}
		p.Detail = text
	}
	if s, err := strconv.Atoi(hr.Header.Get("Retry-After")); err == nil && s >= 0 {
		p.RetryAfter = time.Duration(s) * time.Second
	}
	return p
}

// timeoutHeader carries the caller's own deadline to the server (docs/partitions.md, "No late
// effects"): the server abandons the request when this client gives up on it, and never writes
// for it afterwards. Whole milliseconds, 1 to 600000 (the most the server takes).
const timeoutHeader = "Leasehold-Timeout-Ms"

func setTimeoutHeader(ctx context.Context, req *http.Request) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return
	}
	ms := (time.Until(deadline) + time.Millisecond - 1) / time.Millisecond
	ms = max(1, min(ms, 600_000))
	req.Header.Set(timeoutHeader, strconv.FormatInt(int64(ms), 10))
}
