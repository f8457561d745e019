/**
 * In-process store: a Map and a counter. For tests, demos and a single process that elects
 * among its own workers. Not durable, not shared between processes.
 */

import { LeaseConflictError } from "../../errors.js";
import type { CallOptions, LeaseRecord, LeaseStore, Listed, ListOptions, Revision, Stored } from "../../lease.js";
import { validatePrefix, validateRecord, validateRecordName } from "../../lease.js";
import { parseRevision } from "../revision.js";

interface Entry {
  record: LeaseRecord;
  rev: number;
}

export class MemoryStore implements LeaseStore {
  private readonly entries = new Map<string, Entry>();
  private readonly watchers = new Map<string, Set<() => void>>();

  async get(name: string, _options?: CallOptions): Promise<Stored | null> {
    validateRecordName(name);
    const entry = this.entries.get(name);
    return entry ? toStored(entry) : null;
  }

  async put(next: LeaseRecord, expected: Revision | null, _options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    const wanted = expected === null ? null : parseRevision(expected);
    const entry = this.entries.get(record.name);
    if (wanted === null ? entry !== undefined : entry?.rev !== wanted) {
      throw new LeaseConflictError(record.name, entry ? toStored(entry) : null);
    }
    const written: Entry = { record: structuredClone(record), rev: (entry?.rev ?? 0) + 1 };
    this.entries.set(record.name, written);
    for (const notify of this.watchers.get(record.name) ?? []) notify();
    return toStored(written);
  }

  async getMany(names: readonly string[], _options?: CallOptions): Promise<Array<Stored | null>> {
    for (const name of names) validateRecordName(name);
    return names.map((name) => {
      const entry = this.entries.get(name);
      return entry ? toStored(entry) : null;
    });
  }

  checkRevision(revision: Revision): void {
    parseRevision(revision);
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Listed> {
    validatePrefix(prefix);
    const names = [...this.entries.keys()]
      .filter((n) => n.startsWith(prefix) && (options.startAfter === undefined || n > options.startAfter))
      .sort();
    let count = 0;
    for (const name of names) {
      if (options.limit !== undefined && count++ >= options.limit) return;
      const entry = this.entries.get(name);
      if (entry) yield toStored(entry);
    }
  }

  async *watch(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    validateRecordName(name);
    let changed = true;
    let wake: (() => void) | undefined;
    const notify = () => {
      changed = true;
      wake?.();
    };
    const set = this.watchers.get(name) ?? new Set();
    this.watchers.set(name, set);
    set.add(notify);
    signal.addEventListener("abort", notify, { once: true });
    try {
      while (!signal.aborted) {
        if (changed) {
          changed = false;
          yield await this.get(name);
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      set.delete(notify);
      signal.removeEventListener("abort", notify);
    }
  }
}

function toStored(entry: Entry): Stored {
  return { record: structuredClone(entry.record), revision: String(entry.rev) };
}
