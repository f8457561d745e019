package leasehold

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// Timing is the lease timing the Elector and the sharded Member share. Zero fields take their
// defaults, in client-go's proportions of the lease.
type Timing struct {
	// LeaseDuration is how long the lease (or the member's session) is valid after each renewal.
	// Default 15 s; 10 ms to 24 h, whole milliseconds.
	LeaseDuration time.Duration
	// RenewInterval is the time between renewals. Default LeaseDuration / 3; must be less than
	// LeaseDuration - SafetyMargin.
	RenewInterval time.Duration
	// RetryPeriod is the wait after a failed call and a follower's poll interval while no watch
	// stream is open. Default LeaseDuration / 7.5; at most LeaseDuration.
	RetryPeriod time.Duration
	// SafetyMargin is given up before the lease could expire elsewhere: leadership ends at
	// sentAt + LeaseDuration - SafetyMargin on this process's monotonic clock. It covers the
	// clocks' rate error. Default LeaseDuration / 10; less than LeaseDuration.
	SafetyMargin time.Duration
	// Jitter spreads retries: each waits RetryPeriod × (1 + Jitter × random). 0 means the
	// default 0.2; at most 1.
	Jitter float64
	// CallTimeout bounds one API call (a renewal's also by the time left in its window); a call
	// that runs out counts as ambiguous. Default RenewInterval.
	CallTimeout time.Duration
	// Grace is how long the work may take to stop after its context was cancelled by a graceful
	// stop before the lease is released anyway. Default LeaseDuration.
	Grace time.Duration
}

type timing struct {
	lease, renew, retry, safety, call, grace time.Duration
	jitter                                   float64
}

// resolve fills the defaults and checks the relations, appending one error per bad field.
func (t Timing) resolve(errs *[]error) timing {
	r := timing{lease: t.LeaseDuration, renew: t.RenewInterval, retry: t.RetryPeriod, safety: t.SafetyMargin, call: t.CallTimeout, grace: t.Grace, jitter: t.Jitter}
	if r.lease == 0 {
		r.lease = 15 * time.Second
	}
	bad := func(field, format string, args ...any) {
		*errs = append(*errs, &ConfigError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if r.lease < 10*time.Millisecond || r.lease > 24*time.Hour || r.lease%time.Millisecond != 0 {
		bad("LeaseDuration", "expected 10ms to 24h in whole milliseconds, got %v", r.lease)
		return r
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"RenewInterval", r.renew}, {"RetryPeriod", r.retry}, {"SafetyMargin", r.safety}, {"CallTimeout", r.call}, {"Grace", r.grace}} {
		if d.value < 0 {
			bad(d.name, "expected a duration of 0 (the default) or more, got %v", d.value)
		}
	}
	if r.safety == 0 {
		r.safety = max(time.Millisecond, (r.lease / 10).Truncate(time.Millisecond))
	}
	if r.renew == 0 {
		r.renew = (r.lease / 3).Truncate(time.Millisecond)
	}
	if r.retry == 0 {
		r.retry = max(time.Millisecond, time.Duration(float64(r.lease)/7.5).Truncate(time.Millisecond))
	}
	if r.call == 0 {
		// Two whole renewal attempts fit in what is left of the window when a renewal is due
		// (docs/partitions.md, "The renewal schedule"; src/elector/renewal-schedule.ts).
		r.call = max(time.Millisecond, min(r.renew, ((r.lease-r.safety-r.renew)/2).Truncate(time.Millisecond)))
	}
	if r.grace == 0 {
		r.grace = r.lease
	}
	if r.jitter == 0 {
		r.jitter = 0.2
	}
	if r.jitter < 0 || r.jitter > 1 || math.IsNaN(r.jitter) {
		bad("Jitter", "expected 0 to 1, got %v", t.Jitter)
	}
	if r.safety >= r.lease {
		bad("SafetyMargin", "expected less than LeaseDuration (%v), got %v", r.lease, r.safety)
	}
	if r.renew >= r.lease-r.safety {
		bad("RenewInterval", "expected less than LeaseDuration - SafetyMargin (%v - %v = %v), got %v: the holder must renew before its safe window closes", r.lease, r.safety, r.lease-r.safety, r.renew)
	}
	if r.retry > r.lease {
		bad("RetryPeriod", "expected at most LeaseDuration (%v), got %v", r.lease, r.retry)
	}
	return r
}

// retryDelay is RetryPeriod × (1 + Jitter × random).
func (t timing) retryDelay() time.Duration { return t.after(t.retry) }

// after is a wait of d (a RetryPeriod, or the server's Retry-After) plus RetryPeriod × Jitter ×
// random, so candidates told one instant do not call in step.
func (t timing) after(d time.Duration) time.Duration {
	return d + time.Duration(float64(t.retry)*t.jitter*mrand.Float64())
}

var (
	leaseNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._/-]{0,190}[a-z0-9])?$`)
	segmentPattern   = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)
	memberPattern    = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)
	instancePattern  = regexp.MustCompile(`^[A-Za-z0-9._:-]{16,64}$`)
)

// checkName checks a lease or group name: the API's pattern, and every "/"-separated segment
// starting and ending with a letter or digit (no empty, "." or ".." segment).
func checkName(field, name string, maxLen int, errs *[]error) {
	ok := len(name) <= maxLen && leaseNamePattern.MatchString(name)
	for _, s := range strings.Split(name, "/") {
		ok = ok && segmentPattern.MatchString(s)
	}
	if !ok {
		*errs = append(*errs, &ConfigError{Field: field, Message: fmt.Sprintf("expected 1-%d characters of a-z 0-9 . _ / -, each /-separated segment starting and ending with a letter or digit, got %q", maxLen, name)})
	}
}

// plainText: no control character, format character (bidirectional controls among them) or line
// separator (Unicode Cc, Cf, Zl, Zp): the server's holder rule.
func plainText(r rune) bool {
	return !unicode.IsControl(r) && !unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

func checkHolder(field, holder string, errs *[]error) {
	ok := holder != "" && len([]rune(holder)) <= 256
	for _, r := range holder {
		ok = ok && plainText(r)
	}
	if !ok {
		*errs = append(*errs, &ConfigError{Field: field, Message: fmt.Sprintf("expected 1-256 characters without control, format or line-separator characters (Unicode Cc, Cf, Zl, Zp), got %q", holder)})
	}
}

// NewInstance is a new random instance id: 32 hex digits from crypto/rand.
func NewInstance() string { return randomHex(16) }

// NewWriteID is a new random id for one write (RecordWrite.WriteID).
func NewWriteID() string { return randomHex(12) }

// CheckInstance refuses an instance id the API would not take: 16-64 characters of A-Z a-z 0-9
// . _ : - (a random id, never shared between processes).
func CheckInstance(instance string) error {
	if !instancePattern.MatchString(instance) {
		return &ConfigError{Field: "Instance", Message: "expected 16-64 characters of A-Z a-z 0-9 . _ : - (a random id this process picks once, such as a UUID), or empty for a random one"}
	}
	return nil
}

// instanceOrNew returns instance, or a new random one.
func instanceOrNew(instance string, errs *[]error) string {
	if instance == "" {
		return NewInstance()
	}
	if err := CheckInstance(instance); err != nil {
		*errs = append(*errs, err)
	}
	return instance
}

func checkMetadata(metadata map[string]string, errs *[]error) {
	if metadata == nil {
		return
	}
	encoded, _ := json.Marshal(metadata)
	if len(encoded) > 1024 {
		*errs = append(*errs, &ConfigError{Field: "Metadata", Message: fmt.Sprintf("expected at most 1024 bytes as JSON, got %d", len(encoded))})
	}
}

func randomHex(bytes int) string {
	b := make([]byte, bytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// defaultIdentity is the host name and a random suffix: unique per process.
func defaultIdentity() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if !plainText(r) {
			return -1
		}
		return r
	}, host)
	if host == "" {
		host = "candidate"
	}
	if len(host) > 200 {
		host = host[:200]
	}
	return host + "-" + randomHex(4)
}

// defaults are the clock and logger of a Config left empty: the system clock, no log.
func defaults(clock Clock, log *slog.Logger) (Clock, *slog.Logger) {
	if clock == nil {
		clock = SystemClock{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return clock, log
}

func configError(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
