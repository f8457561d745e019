/**
 * Reading many leases at once (the store contract's optional `getMany`, docs/design.md §2): with
 * the store's own batch read where it has one, else with `get`s, at most `concurrency` in flight,
 * so a caller that re-reads thousands of leases (the API's WatchHub) never opens thousands of
 * requests at once. Runtime-neutral.
 */
import type { CallOptions, LeaseStore, Stored } from "./lease.js";
import { validateRecordName } from "./lease.js";

/** `get`s in flight at once for a store without `getMany`. */
export const DEFAULT_READ_CONCURRENCY = 16;

/** Names per `getMany` request a caller should send: DynamoDB's BatchGetItem takes at most 100 keys. */
export const READ_BATCH = 100;

/**
 * The records of `names` in the order given (`null` where none exists), by the store's `getMany`
 * or by bounded parallel `get`s. Every name is checked before any read.
 */
export async function readMany(
  store: LeaseStore,
  names: readonly string[],
  options: CallOptions & { concurrency?: number } = {},
): Promise<Array<Stored | null>> {
  for (const name of names) validateRecordName(name);
  const call: CallOptions = options.signal ? { signal: options.signal } : {};
  if (store.getMany) return store.getMany(names, call);
  const out = new Array<Stored | null>(names.length);
  await eachBounded(names.length, options.concurrency ?? DEFAULT_READ_CONCURRENCY, async (i) => {
    out[i] = await store.get(names[i]!, call);
  });
  return out;
}

/**
 * Runs `task(0) ... task(count - 1)` with at most `width` running at once; rejects with the first
 * failure (the tasks already started run to their end).
 */
export async function eachBounded(count: number, width: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, count)) }, worker));
}
