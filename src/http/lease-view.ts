/**
 * A stored lease as callers read it, the API's and the CLI's one view (`LeaseView`, the wire's
 * `Lease`): the record's fields (its typed protocol fields among them), its revision, and `expiresAt`,
 * when it runs out by its writer's stamps (`renewedAt + leaseMs`), or by what the caller knows
 * better (the API: a bucket's or a bound lease's session). Runtime-neutral.
 */
import type { Stored } from "../lease.js";
import type { LeaseView } from "./schemas.js";

export function leaseView(stored: Stored, expiresAt?: number): LeaseView {
  const r = stored.record;
  return {
    name: r.name,
    holder: r.holder,
    term: r.term,
    leaseMs: r.leaseMs,
    acquiredAt: r.acquiredAt,
    renewedAt: r.renewedAt,
    expiresAt: expiresAt ?? r.renewedAt + r.leaseMs,
    metadata: r.metadata,
    writeId: r.writeId,
    ...(r.session ? { session: r.session } : {}),
    ...(r.successor ? { successor: r.successor } : {}),
    ...(r.upstream ? { upstream: r.upstream } : {}),
    ...(r.fire ? { fire: r.fire } : {}),
    ...(r.releases !== undefined ? { releases: r.releases } : {}),
    revision: stored.revision,
  };
}
