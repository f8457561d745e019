/**
 * The record's invariants across one write (docs/design.md §1): what a new revision may say given
 * the one it replaces. The fencing token is only worth something if no writer, whatever its
 * credentials, can move it backwards, skip it, or hand the lease to someone else without it.
 * The HTTP API checks every write against these rules (acquire, renew, release and the raw
 * compare-and-swap); the elector's own writes satisfy them by construction. Runtime-neutral.
 */
import type { LeaseRecord } from "./lease.js";

export type TermRule =
  /** A term never goes down. */
  | "term-decreased"
  /** A term goes up by exactly one at a time: terms are never skipped. */
  | "term-skipped"
  /** A lease given to a holder other than the current one (from free too) carries term + 1. */
  | "new-holder-needs-next-term"
  /** A release (`holder: null`) keeps the term it releases. */
  | "release-keeps-term"
  /** A create names a holder from term 1 up, or is a released record. */
  | "create-needs-term";

export interface TermRuleViolation {
  rule: TermRule;
  message: string;
}

/**
 * Checks `next` against `current` (`null`: the lease does not exist yet). Returns the first rule
 * broken, or `undefined`. The same holder may renew at the same term or re-acquire at term + 1
 * (after its lease ran out); a create may start at any term (importing leases from elsewhere, or
 * continuing above a record that was deleted), since that can only raise the fencing token.
 */
export function checkTermRules(current: LeaseRecord | null, next: LeaseRecord): TermRuleViolation | undefined {
  if (current === null) {
    if (next.holder !== null && next.term < 1) {
      return {
        rule: "create-needs-term",
        message: `a new lease given to a holder starts at term 1 or above, not ${next.term}`,
      };
    }
    return undefined;
  }
  const { term } = current;
  if (next.term < term) {
    return { rule: "term-decreased", message: `the term is ${term}; it never goes down (got ${next.term})` };
  }
  if (next.term > term + 1) {
    return { rule: "term-skipped", message: `the term is ${term}; the next one is ${term + 1}, not ${next.term}` };
  }
  if (next.holder === null) {
    if (next.term !== term) {
      return { rule: "release-keeps-term", message: `a release keeps the term ${term} (got ${next.term})` };
    }
    return undefined;
  }
  if (next.holder !== current.holder && next.term !== term + 1) {
    const from = current.holder === null ? "a free lease" : `the lease from ${JSON.stringify(current.holder)}`;
    return {
      rule: "new-holder-needs-next-term",
      message: `giving ${from} to ${JSON.stringify(next.holder)} takes term ${term + 1} (got ${next.term})`,
    };
  }
  return undefined;
}
