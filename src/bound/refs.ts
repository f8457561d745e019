/**
 * How a bound lease names its session and its registered successor: the record's typed protocol
 * fields `session` and `successor` (docs/design.md §1 "Protocol fields", §4 "Bound leases").
 * Runtime-neutral.
 */
import type { LeaseRecord, SessionRef, Successor } from "../lease.js";

export type { SessionRef, Successor } from "../lease.js";

export const formatRef = (ref: SessionRef): string => `${ref.name}@${ref.term}`;

export const sameRef = (a: SessionRef | undefined, b: SessionRef | undefined): boolean =>
  a !== undefined && b !== undefined && a.name === b.name && a.term === b.term;

export const sameSuccessor = (a: Successor | undefined, b: Successor | undefined): boolean =>
  a !== undefined && b !== undefined && a.holder === b.holder && sameRef(a.session, b.session);

/** The session a bound lease record names; `undefined` for a plain (self-renewing) record. */
export const sessionOf = (record: LeaseRecord): SessionRef | undefined => record.session;

/** The successor registered in a bound lease record, if any. */
export const successorOf = (record: LeaseRecord): Successor | undefined => record.successor;

/** `record` without a registered successor (and its proof). */
export function withoutSuccessor(record: LeaseRecord): LeaseRecord {
  const { successor: _successor, successorDigest: _proof, ...rest } = record;
  return rest;
}
