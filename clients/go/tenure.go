package leasehold

// The tenure rules (docs/design.md §3), as src/tenure.ts writes them: is this tenure over, and when
// will it be. Both languages run the vectors in test/vectors/tenure.json (tenure_test.go here).
// Times are milliseconds: wall clock for RenewedAt and wallNow, a monotonic count for now and
// firstSeen.

// TenureRecord is what the rules read of a lease record. Holder "" is released.
type TenureRecord struct {
	Holder    string
	Term      int64
	LeaseMs   int64
	RenewedAt int64
}

// Tenure is one term of a record held by one holder.
type Tenure struct {
	Holder string
	Term   int64
}

// TenureOver reports a tenure over for good: the record shows a later term, or the same term released.
func TenureOver(t Tenure, r TenureRecord) bool {
	return r.Term > t.Term || (r.Term == t.Term && r.Holder == "")
}

// FreeByStamps is the stateless rule: released, or past renewedAt + leaseMs + maxSkewMs on wallNow.
func FreeByStamps(r TenureRecord, wallNow, maxSkewMs int64) bool {
	return r.Holder == "" || wallNow > r.RenewedAt+r.LeaseMs+maxSkewMs
}

// FreeInMs is in how many ms FreeByStamps turns true (0 when it already is).
func FreeInMs(r TenureRecord, wallNow, maxSkewMs int64) int64 {
	if r.Holder == "" {
		return 0
	}
	return max(0, r.RenewedAt+r.LeaseMs+maxSkewMs-wallNow+1)
}

// ExpiresAt is observed time: when a held record first seen at firstSeen expires unless its
// revision changes; firstSeen itself when it is already stale by its stamps.
func ExpiresAt(r TenureRecord, firstSeen, wallNow, maxSkewMs int64) int64 {
	if FreeByStamps(r, wallNow, maxSkewMs) {
		return firstSeen
	}
	return firstSeen + r.LeaseMs
}

// VerdictKind says what one observation of a tenure means.
type VerdictKind string

const (
	// VerdictOver: take what it held.
	VerdictOver VerdictKind = "over"
	// VerdictExpired: expired by observed time or stamps; a compare-and-swap on the revision seen proves it.
	VerdictExpired VerdictKind = "expired"
	// VerdictLive: look again at Until.
	VerdictLive VerdictKind = "live"
)

// Verdict is the rules' answer; Until is set when live.
type Verdict struct {
	Kind  VerdictKind
	Until int64
}

// Judge is the verdict on a tenure (nil: the record judged on its own) from its record (nil: none
// exists) first seen at firstSeen, at now.
func Judge(t *Tenure, r *TenureRecord, firstSeen, now, wallNow, maxSkewMs, fallbackMs int64) Verdict {
	if t == nil {
		if r == nil || r.Holder == "" {
			return Verdict{Kind: VerdictOver}
		}
	} else {
		if r != nil && TenureOver(*t, *r) {
			return Verdict{Kind: VerdictOver}
		}
		if r == nil || r.Term < t.Term {
			until := firstSeen + fallbackMs
			if now >= until {
				return Verdict{Kind: VerdictOver}
			}
			return Verdict{Kind: VerdictLive, Until: until}
		}
	}
	until := ExpiresAt(*r, firstSeen, wallNow, maxSkewMs)
	if now >= until {
		return Verdict{Kind: VerdictExpired}
	}
	return Verdict{Kind: VerdictLive, Until: until}
}
