/**
 * Bound leases in the API (docs/design.md §4 "Bound leases", §5 "The holding rules"): a lease
 * written through the HTTP store by a `session.elector` names the process session it rides on
 * (`proxied.leasehold.session`) and is not rewritten by that session's renewals, so the server
 * judges it by that session's record, as it judges a bucket by its owner's; and the two raw
 * writes by which it passes straight to a waiting successor, in one write plus one push, within
 * the holding rules. Runtime-neutral.
 *
 * - **Held while its session lives**: the session record still names the lease's holder at the
 *   session term the lease names, and is not free by the server's rule. Otherwise the lease is
 *   free from when that session tenure ended.
 * - **Registration**: any process may write itself into a held lease as its successor, or take
 *   its registration back: a write that changes nothing but the library's `leasehold.next`
 *   (`proxied.leasehold.next` here). The record keeps its holder's instance digest and its
 *   `renewedAt` (a registration renews nothing); the API notes the registering process's digest
 *   as `leasehold.next-instance`.
 * - **Hand-over**: the holder's process writes the lease to the registered successor's holder at
 *   term + 1. The record then carries the successor process's digest, so that process, not the
 *   releaser, owns the term (renews, releases it) from then on.
 *
 * Any other write keeps the registration's digest only while it keeps the registration, the
 * holder and the term; otherwise it is dropped, so a hand-over goes to the process that
 * registered the successor the replaced record names.
 */
import { parseRef, parseSuccessor, type SessionRef } from "../bound/refs.js";
import { proxiedKey } from "../http/proxied.js";
import { callerMetadata, type LeaseRecord, NEXT_INSTANCE_DIGEST_KEY, NEXT_KEY, SESSION_KEY } from "../lease.js";
import { digestOf, withDigest } from "./instance.js";

/** The successor key as the API stores it (the HTTP store escapes the library's reserved keys). */
const NEXT = proxiedKey(NEXT_KEY);

/** The process session a held bound lease rides on, or undefined (released, or not bound). */
export function boundSession(record: LeaseRecord): SessionRef | undefined {
  return record.holder === null ? undefined : parseRef(record.metadata[proxiedKey(SESSION_KEY)]);
}

/** Whether a held lease is bound, and when it stops being held, by its session's record. */
export function boundState(
  record: LeaseRecord,
  session: LeaseRecord | undefined,
  isFree: (record: LeaseRecord) => boolean,
): { expiresAt: number; free: boolean } | undefined {
  const ref = boundSession(record);
  if (!ref) return undefined;
  if (session && session.holder === record.holder && session.term === ref.term) {
    return { expiresAt: session.renewedAt + session.leaseMs, free: isFree(session) };
  }
  // The session tenure it rode on is over (released, fenced, a later term) or never was.
  const own = record.renewedAt + record.leaseMs;
  return { expiresAt: Math.min(own, session ? session.renewedAt : own), free: true };
}

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
