/**
 * Hand-over through the API (docs/design.md §4 "Bound leases", §5 "The holding rules"): the two
 * raw writes by which a bound lease passes straight to a waiting successor, in one write plus one
 * push, within the holding rules. Runtime-neutral.
 *
 * - **Registration**: any process may write itself into a held lease as its successor, or take
 *   its registration back: a write that changes nothing but the library's `leasehold.next`
 *   (`proxied.leasehold.next` here). The record keeps its holder's instance digest and its
 *   `renewedAt` (a registration renews nothing); the API notes the registering process's digest
 *   as `leasehold.next-instance`.
 * - **Hand-over**: the holder's process writes the lease to the registered successor's holder at
 *   term + 1. The record then carries the successor process's digest, so that process, not the
 *   releaser, owns the term (renews, releases it) from then on.
 *
 * Every other raw write drops the registration's digest, so a hand-over always goes to the process
 * registered in the record being replaced.
 */
import { parseSuccessor } from "../bound/refs.js";
import { proxiedKey } from "../http/proxied.js";
import { callerMetadata, type LeaseRecord, NEXT_INSTANCE_DIGEST_KEY, NEXT_KEY, SESSION_KEY } from "../lease.js";
import { digestOf, withDigest } from "./instance.js";

/** The successor key as the API stores it (the HTTP store escapes the library's reserved keys). */
const NEXT = proxiedKey(NEXT_KEY);

/**
 * A held lease bound to a process session (written through the HTTP store by a
 * `session.elector`): valid while that session is, and not rewritten by its renewals, so the
 * plain routes, which judge a record by its own stamps, never take it over (only its release
 * frees it for them). Bound candidates take it over by the raw PUT, after fencing the session.
 */
export const isBoundAndHeld = (record: LeaseRecord): boolean =>
  record.holder !== null && record.metadata[proxiedKey(SESSION_KEY)] !== undefined;

/** What a raw write is to the successor rules, and the record to write for it. */
export interface Succession {
  /** `other`: neither a registration nor a hand-over; the plain holding rules decide. */
  kind: "registration" | "hand-over" | "other";
  record: LeaseRecord;
}

/**
 * What `next` (the writer's record, stamped with the writer's digest) by the process with instance
 * digest `digest` does to `current`'s successor, and the record to write.
 */
export function succession(current: LeaseRecord | undefined, next: LeaseRecord, digest: string): Succession {
  if (!current || current.holder === null) return { kind: "other", record: next };
  const registration = registered(current, next, digest);
  if (registration) return { kind: "registration", record: registration };
  const handOver = handedOver(current, next, digest);
  if (handOver) return { kind: "hand-over", record: handOver };
  const registrationDigest = current.metadata[NEXT_INSTANCE_DIGEST_KEY];
  const keeps =
    registrationDigest !== undefined &&
    current.metadata[NEXT] === next.metadata[NEXT] &&
    current.holder === next.holder &&
    current.term === next.term;
  if (!keeps) return { kind: "other", record: next };
  const metadata = { ...next.metadata, [NEXT_INSTANCE_DIGEST_KEY]: registrationDigest };
  return { kind: "other", record: { ...next, metadata } };
}

/** The registration (or its withdrawal) `next` makes, keeping everything else of `current`. */
function registered(current: LeaseRecord, next: LeaseRecord, digest: string): LeaseRecord | undefined {
  if (!isRegistration(current, next)) return undefined;
  const metadata = callerMetadata(current.metadata);
  delete metadata[NEXT];
  const holderDigest = digestOf(current);
  const successor = next.metadata[NEXT];
  return {
    ...current,
    metadata: {
      ...metadata,
      ...(holderDigest === undefined ? {} : withDigest({}, holderDigest)),
      ...(successor === undefined ? {} : { [NEXT]: successor, [NEXT_INSTANCE_DIGEST_KEY]: digest }),
    },
    writeId: next.writeId,
  };
}

/** The hand-over `next` makes by the holder's process, owned by the successor's process. */
function handedOver(current: LeaseRecord, next: LeaseRecord, digest: string): LeaseRecord | undefined {
  const successorDigest = current.metadata[NEXT_INSTANCE_DIGEST_KEY];
  const successor = parseSuccessor(current.metadata[NEXT]);
  if (successorDigest === undefined || successor === undefined || digestOf(current) !== digest) return undefined;
  if (next.holder !== successor.holder || next.term !== current.term + 1) return undefined;
  return { ...next, metadata: withDigest(next.metadata, successorDigest) };
}

/** A write that changes nothing of a held record but its successor. */
function isRegistration(current: LeaseRecord, next: LeaseRecord): boolean {
  if (current.metadata[NEXT] === next.metadata[NEXT]) return false;
  if (next.metadata[NEXT] !== undefined && parseSuccessor(next.metadata[NEXT]) === undefined) return false;
  if (next.holder !== current.holder || next.term !== current.term || next.leaseMs !== current.leaseMs) return false;
  if (next.acquiredAt !== current.acquiredAt) return false;
  const was = callerMetadata(current.metadata);
  const now = callerMetadata(next.metadata);
  delete was[NEXT];
  delete now[NEXT];
  const keys = Object.keys(was);
  return keys.length === Object.keys(now).length && keys.every((k) => now[k] === was[k]);
}
