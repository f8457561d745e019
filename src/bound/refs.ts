/**
 * How a bound lease names its session and its registered successor, in the record's reserved
 * metadata (docs/design.md §4 "Bound leases"): `leasehold.session` = `<session name>@<term>`,
 * `leasehold.next` = `<session name>@<term> <holder>`. Session names follow the lease-name rule
 * (no `@`, no space), so both parse without escaping. Runtime-neutral.
 */
import { callerMetadata, type LeaseRecord, NEXT_KEY, SESSION_KEY } from "../lease.js";

/** A session tenure: the session record's name and the term it held. */
export interface SessionRef {
  name: string;
  term: number;
}

/** A candidate waiting for a bound lease: its holder identity and the session it would hold it under. */
export interface Successor {
  holder: string;
  session: SessionRef;
}

export const formatRef = (ref: SessionRef): string => `${ref.name}@${ref.term}`;

export function parseRef(value: string | undefined): SessionRef | undefined {
  if (value === undefined) return undefined;
  const at = value.lastIndexOf("@");
  const term = Number(value.slice(at + 1));
  if (at <= 0 || !Number.isSafeInteger(term) || term < 1) return undefined;
  return { name: value.slice(0, at), term };
}

export const sameRef = (a: SessionRef | undefined, b: SessionRef | undefined): boolean =>
  a !== undefined && b !== undefined && a.name === b.name && a.term === b.term;

/** The session a bound lease record names; `undefined` for a plain (self-renewing) record. */
export const sessionOf = (record: LeaseRecord): SessionRef | undefined => parseRef(record.metadata[SESSION_KEY]);

/** The successor registered in a bound lease record, if any. */
export const successorOf = (record: LeaseRecord): Successor | undefined => parseSuccessor(record.metadata[NEXT_KEY]);

/** A `leasehold.next` value (`<session name>@<term> <holder>`), or undefined when it is not one. */
export function parseSuccessor(value: string | undefined): Successor | undefined {
  if (value === undefined) return undefined;
  const space = value.indexOf(" ");
  const session = parseRef(value.slice(0, space));
  return space > 0 && session ? { holder: value.slice(space + 1), session } : undefined;
}

/** A bound lease's metadata: the caller's keys, the session, and (optionally) a successor. */
export function boundMetadata(
  caller: Record<string, string>,
  session: SessionRef,
  next?: Successor,
): Record<string, string> {
  const m: Record<string, string> = { ...callerMetadata(caller), [SESSION_KEY]: formatRef(session) };
  if (next) m[NEXT_KEY] = `${formatRef(next.session)} ${next.holder}`;
  return m;
}
