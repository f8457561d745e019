/**
 * The record's invariants across one write (docs/design.md §1): what a new revision may say given
 * the one it replaces. The fencing token is only worth something if no writer, whatever its
 * credentials, can move it backwards, skip it, or hand the lease to someone else without it.
 * The HTTP API checks every write against these rules (acquire, renew, release and the raw
 * compare-and-swap); the elector's own writes satisfy them by construction. Beside them, the rule
 * of a scheduled job's record (`fire`, docs/schedule.md): its latest fire never goes back and a
 * settled fire is never reopened, so no writer can make a fire that ran runnable again.
 * Runtime-neutral.
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
  | "create-needs-term"
  /** A scheduled job's latest fire never goes back, and is never dropped once written. */
  | "fire-rewound"
  /** A settled fire (`done`) is never reopened: it would run again. */
  | "fire-reopened";

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
  return termViolation(current, next) ?? fireViolation(current, next);
}

function termViolation(current: LeaseRecord | null, next: LeaseRecord): TermRuleViolation | undefined {
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

/** The scheduled job's rule: `fire` moves forward only, and `done` is never undone for one fire. */
function fireViolation(current: LeaseRecord | null, next: LeaseRecord): TermRuleViolation | undefined {
  const was = current?.fire;
  if (!was) return undefined;
  const fire = next.fire;
  if (!fire || fire.at < was.at) {
    const got = fire ? new Date(fire.at).toISOString() : "none";
    return {
      rule: "fire-rewound",
      message: `the latest fire is ${new Date(was.at).toISOString()}; it never goes back (got ${got})`,
    };
  }
  if (fire.at === was.at && was.done && !fire.done) {
    return {
      rule: "fire-reopened",
      message: `the fire ${new Date(was.at).toISOString()} is settled; it is never reopened`,
    };
  }
  return undefined;
}
