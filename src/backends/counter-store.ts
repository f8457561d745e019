/**
 * What the stores whose revision counts writes (SQLite, PostgreSQL, DynamoDB) do alike, so it is
 * written once: every argument is checked before any I/O and in the same order (a bad name, record
 * or revision is the caller's error, never a store failure), and `getMany` reads each name once, in
 * batches the backend sizes, answering in the order asked. Each store supplies only its reads and
 * its conditional write. Runtime-neutral.
 */
import type { CallOptions, LeaseRecord, Revision, Stored } from "../lease.js";
import { validateRecord, validateRecordName } from "../lease.js";
import { parseRevision } from "./revision.js";

export abstract class CounterStore {
  /** Names per `readBatch` (the backend's request limit). */
  protected abstract readonly readBatchSize: number;

  /** The record of `name` (already checked), or null. */
  protected abstract read(name: string, options: CallOptions | undefined): Promise<Stored | null> | Stored | null;

  /** Adds to `found` the records of `names` (checked, no repeats) that exist. */
  protected abstract readBatch(
    names: string[],
    found: Map<string, Stored>,
    options: CallOptions | undefined,
  ): Promise<void> | void;

  /**
   * Writes `record` (checked) at revision `previous + 1` if the lease is still at `previous` (null:
   * only if absent), else throws `LeaseConflictError` with the record found.
   */
  protected abstract write(
    record: LeaseRecord,
    previous: number | null,
    options: CallOptions | undefined,
  ): Promise<Stored>;

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateRecordName(name);
    return this.read(name, options);
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    // Parsed before the write: a bad revision is the caller's error, not a store failure.
    const previous = expected === null ? null : parseRevision(expected);
    return this.write(record, previous, options);
  }

  /** As strong as `get`: every name is checked first, then read once, however often it is asked. */
  async getMany(names: readonly string[], options?: CallOptions): Promise<Array<Stored | null>> {
    for (const name of names) validateRecordName(name);
    const found = new Map<string, Stored>();
    const unique = [...new Set(names)];
    for (let i = 0; i < unique.length; i += this.readBatchSize) {
      await this.readBatch(unique.slice(i, i + this.readBatchSize), found, options);
    }
    return names.map((name) => found.get(name) ?? null);
  }

  checkRevision(revision: Revision): void {
    parseRevision(revision);
  }
}
