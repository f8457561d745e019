/**
 * Bound leases in the API (docs/design.md §4 "Bound leases", §5 "The holding rules"): a lease
 * written through the HTTP store by a session-bound elector names the process session it rides on
 * in its typed `session` field and is not rewritten by that session's renewals, so the server
 * judges it by that session's record, as it judges a bucket by its owner's; and the two raw
 * writes by which it passes straight to a waiting successor, in one write plus one push, within
 * the holding rules. Runtime-neutral.
 *
 * The protocol fields are the server's to believe only as far as it checked them:
 * - **Binding** (a write that names a `session` the record did not carry at that term and holder):
 *   only to a process session record (`[<scope>/]_sessions/<id>`) inside the caller's scope that
 *   the writing instance itself holds, for the lease's holder at that term, live by the server's
 *   rule. So no caller can tie a lease to another process's session, nor to a record it may not
 *   write, and the server never judges a lease by a record outside the writer's scope.
 * - **Held while its session lives**: the session record still names the lease's holder at the
 *   session term the lease names, and is not free by the server's rule. Otherwise the lease is free
 *   from when that session tenure ended.
 * - **Registration**: a process other than the holder's may offer to take the next hand-over: a
 *   write that changes nothing of a held record but `successor`, naming a holder other than the
 *   current one and a live session the registering instance holds (checked like a binding). The
 *   record keeps its holder's proof and `renewedAt` (a registration renews nothing); the server
 *   keeps the registering instance's digest as `successorDigest`. A registration replaces another
 *   process's only once that one's session is no longer live; the registering process may
 *   withdraw it.
 * - **Hand-over**: the holder's own process, while its term is live, writes the lease to the
 *   registered successor's holder and session at term + 1. The record then carries the
 *   registering process's digest, so that process, not the releaser, owns the term. A holder's
 *   own write never triggers a hand-over otherwise: a re-acquisition after its term lapsed is a
 *   plain write.
 */
import { sameRef, sameSuccessor } from "../bound/refs.js";
import { type LeaseRecord, recordRole, type SessionRef } from "../lease.js";
import { heldUnder } from "../tenure.js";
import { digestOf } from "./instance.js";
import { ProblemError } from "./problems.js";

/** The process session a held bound lease rides on, or undefined (released, or not bound). */
export function boundSession(record: LeaseRecord): SessionRef | undefined {
  return record.holder === null ? undefined : record.session;
}

/** Whether a held lease is bound, and when it stops being held, by its session's record (src/tenure.ts). */
export function boundState(
  record: LeaseRecord,
  session: LeaseRecord | undefined,
  wallNow: number,
  maxSkewMs: number,
): { expiresAt: number; free: boolean } | undefined {
  const ref = boundSession(record);
  return ref && heldUnder({ holder: record.holder!, term: ref.term }, record, session, wallNow, maxSkewMs);
}

/**
 * A session tenure the server must see held by `digest`'s process for `holder` before it writes
 * (a binding, or a registration's successor); `why` names the field for the refusal.
 */
export interface SessionCheck {
  ref: SessionRef;
  holder: string;
  digest: string;
  field: "session" | "successor.session";
}

/** What a raw write is to the successor rules, the record to write for it, and what to check first. */
export interface Succession {
  /** `other`: neither a registration nor a hand-over; the plain holding rules decide. */
  kind: "registration" | "hand-over" | "other";
  record: LeaseRecord;
  checks: SessionCheck[];
  /** A registration that replaces another process's: allowed once that one's session is not live. */
  replaces?: SessionCheck;
}

/**
 * What `next` (the writer's record, stamped with the writer's digest as `holderDigest`) by the
 * process with digest `digest` does to `current`'s protocol fields; `live` is whether `current` is
 * held by the server's rule. Throws a 409 `protocol-field` for a write of a field the writer does
 * not own.
 */
export function succession(
  current: LeaseRecord | undefined,
  next: LeaseRecord,
  digest: string,
  live: boolean,
): Succession {
  if (current && live && isRegistration(current, next)) return registration(current, next, digest);
  if (current && live && handsOver(current, next, digest)) {
    const { successor: _s, successorDigest, ...rest } = next;
    return { kind: "hand-over", record: { ...rest, holderDigest: current.successorDigest! }, checks: [] };
  }
  const checks: SessionCheck[] = [];
  if (next.session) {
    const kept = current !== undefined && current.holder === next.holder && current.term === next.term;
    if (!kept || !sameRef(current.session, next.session)) {
      checks.push({ ref: next.session, holder: next.holder!, digest, field: "session" });
    }
  }
  let record = next;
  if (next.successor) {
    // A successor only comes by a registration: any other write keeps the one registered, or drops it.
    const keeps = current !== undefined && current.holder === next.holder && current.term === next.term;
    if (!keeps || !sameSuccessor(current.successor, next.successor) || current.successorDigest === undefined) {
      throw refused("successor", "a successor is registered only by a write that changes nothing else of a held lease");
    }
    record = { ...next, successorDigest: current.successorDigest };
  }
  return { kind: "other", record, checks };
}

/** The registration (or its withdrawal) `next` makes, keeping everything else of `current`. */
function registration(current: LeaseRecord, next: LeaseRecord, digest: string): Succession {
  const { successor: _s, successorDigest: _d, ...kept } = current;
  if (next.successor === undefined) {
    if (current.successorDigest !== digest) {
      throw refused("successor", "only the process that registered a successor may withdraw it");
    }
    return { kind: "registration", record: { ...kept, writeId: next.writeId }, checks: [] };
  }
  const successor = next.successor;
  if (digest === digestOf(current)) {
    throw refused("successor", "the holder's own process cannot register a successor of its lease");
  }
  if (successor.holder === current.holder) {
    throw refused(
      "successor",
      `the successor must be another holder than the current one (${JSON.stringify(current.holder)})`,
    );
  }
  const check: SessionCheck = { ref: successor.session, holder: successor.holder, digest, field: "successor.session" };
  const replaces =
    current.successor !== undefined && current.successorDigest !== undefined && current.successorDigest !== digest
      ? {
          ref: current.successor.session,
          holder: current.successor.holder,
          digest: current.successorDigest,
          field: "successor.session" as const,
        }
      : undefined;
  return {
    kind: "registration",
    record: { ...kept, successor, successorDigest: digest, writeId: next.writeId },
    checks: [check],
    ...(replaces ? { replaces } : {}),
  };
}

/** The holder's own process hands the live lease to its registered successor at term + 1. */
function handsOver(current: LeaseRecord, next: LeaseRecord, digest: string): boolean {
  const successor = current.successor;
  if (!successor || current.successorDigest === undefined || digestOf(current) !== digest) return false;
  return next.holder === successor.holder && next.term === current.term + 1 && sameRef(next.session, successor.session);
}

/** A write that changes nothing of a held record but its successor. */
function isRegistration(current: LeaseRecord, next: LeaseRecord): boolean {
  if (sameSuccessor(current.successor, next.successor)) return false;
  if (current.successor === undefined && next.successor === undefined) return false;
  if (next.holder !== current.holder || next.term !== current.term || next.leaseMs !== current.leaseMs) return false;
  if (next.acquiredAt !== current.acquiredAt || !sameRef(current.session, next.session)) return false;
  if (current.session === undefined) return false;
  const was = current.metadata;
  const now = next.metadata;
  const keys = Object.keys(was);
  return keys.length === Object.keys(now).length && keys.every((k) => now[k] === was[k]);
}

/** Why a session named in a write does not hold for it, or undefined when it does. */
export function sessionRefusal(
  check: SessionCheck,
  session: LeaseRecord | undefined,
  free: boolean,
): string | undefined {
  const { ref } = check;
  if (recordRole(ref.name) !== "session")
    return `"${ref.name}" is not a process session record ([<scope>/]_sessions/<id>)`;
  if (!session) return `the session record "${ref.name}" does not exist`;
  if (session.holder !== check.holder || session.term !== ref.term || free) {
    return `the session record "${ref.name}" is not held by ${JSON.stringify(check.holder)} at term ${ref.term}`;
  }
  if (digestOf(session) !== check.digest) return `the session "${ref.name}" is held by another process`;
  return undefined;
}

export function refused(field: string, why: string): ProblemError {
  return new ProblemError("protocol-field", `${field}: ${why}; nothing was written`, {
    errors: [{ path: field, message: why }],
  });
}
