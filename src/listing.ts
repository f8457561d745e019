/**
 * What a store's `list` yields (docs/design.md §2): a record it could read, or, in that record's
 * place in name order, a record it holds but cannot read (`Unreadable`: its name and the store's
 * `LeaseCorruptError`), so one bad record never fails the rest of a listing. Callers that must
 * have every record of what they list (a sharded group's members and buckets, a reshard) take
 * `readable(listing)`, which throws the unreadable record's error where the old contract did.
 * Runtime-neutral; imports only the record's and the errors' types, so every module may use it.
 */
import { isLeaseCorruptError, LeaseCorruptError } from "./errors.js";
import type { LeaseRecord, Revision, Stored } from "./record.js";

/** A record the store holds under `name` but cannot read: never skipped silently, never overwritten. */
export interface Unreadable {
  name: string;
  /** Why: the store's error, naming each field that is not what leasehold writes. */
  unreadable: LeaseCorruptError;
  /** The record's revision, when the store could read one (what `release --force` replaces). */
  revision?: Revision;
}

/** One entry of a listing, in name order. */
export type Listed = Stored | Unreadable;

export const isUnreadable = (entry: Listed): entry is Unreadable => "unreadable" in entry;

/** The name an entry is listed under. */
export const listedName = (entry: Listed): string => (isUnreadable(entry) ? entry.name : entry.record.name);

/** The entry a store yields for a record it could not read: `error` names it and why. */
export function unreadable(error: LeaseCorruptError): Unreadable {
  return error.revision === undefined
    ? { name: error.lease, unreadable: error }
    : { name: error.lease, unreadable: error, revision: error.revision };
}

/** `read()`'s record, or the entry for it when it is unreadable (`LeaseCorruptError`); other errors are thrown. */
export function orUnreadable(read: () => Stored): Listed {
  try {
    return read();
  } catch (error) {
    if (isLeaseCorruptError(error)) return unreadable(error);
    throw error;
  }
}

/** As `orUnreadable`, for a read that resolves later. */
export function settleUnreadable(read: Promise<Stored | null>): Promise<Listed | null> {
  return read.catch((error: unknown) => {
    if (isLeaseCorruptError(error)) return unreadable(error);
    throw error;
  });
}

/**
 * `parse()`'s record at `revision`. A `LeaseCorruptError` it throws is thrown again carrying
 * `revision`, when the store could read the revision but not the record: what an operator's
 * `release --force` replaces.
 */
export function storedAt(revision: Revision, parse: () => LeaseRecord): Stored {
  try {
    return { record: parse(), revision };
  } catch (error) {
    if (!isLeaseCorruptError(error) || error.revision !== undefined) throw error;
    throw new LeaseCorruptError(error.lease, error.issues, { cause: error.cause, revision });
  }
}

/** A listing's records, for a caller that needs all of them: an unreadable one throws its error. */
export async function* readable(listing: AsyncIterable<Listed>): AsyncIterable<Stored> {
  for await (const entry of listing) {
    if (isUnreadable(entry)) throw entry.unreadable;
    yield entry;
  }
}

/**
 * The listing of a store that reads its rows by name range (the SQL stores): pages of at most
 * `pageSize` rows after `startAfter`, at most `limit` in all, each row yielded as its record or,
 * unreadable, in its place. `page(after, size)` reads the next rows in name order.
 */
export async function* listByPages<Row extends { name: string }>(
  options: { startAfter?: string; limit?: number },
  pageSize: number,
  page: (after: string, size: number) => Row[] | Promise<Row[]>,
  toStored: (row: Row) => Stored,
): AsyncIterable<Listed> {
  let after = options.startAfter ?? "";
  let left = options.limit ?? Number.POSITIVE_INFINITY;
  while (left > 0) {
    const size = Math.min(pageSize, left);
    const rows = await page(after, size);
    for (const row of rows) yield orUnreadable(() => toStored(row));
    if (rows.length < size) return;
    left -= rows.length;
    after = rows[rows.length - 1]?.name ?? after;
  }
}
