/**
 * What the object stores (GCS, S3, Azure Blob) share: a lease lives in the object
 * `<prefix><name>.json`, and listing by prefix yields leases in *name* order although the service
 * lists objects in *key* order. Runtime-neutral.
 */
import { LeaseValidationError } from "../../errors.js";
import { type Listed, type ListOptions, type Stored, validateRecordName } from "../../lease.js";
import { settleUnreadable } from "../../listing.js";

export const OBJECT_SUFFIX = ".json";

/** Printable ASCII without space: object keys stay readable, and prefix order equals byte order. */
export const OBJECT_PREFIX_PATTERN = /^[\x21-\x7e]{0,512}$/;

/**
 * The object key of lease `name` under the store's `prefix`, checked to stay there
 * (`keyUnderPrefix`).
 */
export function objectKey(prefix: string, name: string): string {
  return keyUnderPrefix(prefix, `${prefix}${name}${OBJECT_SUFFIX}`);
}

/**
 * Returns `key` if it names an object under `prefix` wherever it is resolved, else throws a
 * `LeaseValidationError`. An SDK that builds a URL from the key (the Azure SDK does), or a server
 * that maps keys to files (versitygw's POSIX backend), resolves "." and ".." segments, and URL
 * parsers split at "\" as at "/": a key with such a segment can name an object outside the
 * prefix, in another container even. Lease names cannot carry one (NAME_PATTERN); this also
 * holds for a configured prefix, and for any key built here.
 */
export function keyUnderPrefix(prefix: string, key: string): string {
  const moves = key.split(/[/\\]/).some((segment) => segment === "." || segment === "..");
  if (!key.startsWith(prefix) || moves) {
    throw new LeaseValidationError("object key", [
      {
        path: "name",
        message: `the object key ${JSON.stringify(key)} could resolve outside the store's prefix ${JSON.stringify(prefix)} (a "." or ".." segment): choose a prefix without one`,
      },
    ]);
  }
  return key;
}

/** The lease name an object key stands for, or null for a foreign object under the prefix. */
export function leaseNameOfKey(prefix: string, key: string): string | null {
  if (!key.startsWith(prefix) || !key.endsWith(OBJECT_SUFFIX)) return null;
  const name = key.slice(prefix.length, -OBJECT_SUFFIX.length);
  try {
    return validateRecordName(name);
  } catch {
    return null; // a foreign object under the prefix is not a lease
  }
}

/**
 * Re-orders leases listed in object-key order into name order. A lease `p` can be preceded in
 * name order but followed in key order only by a lease `q` that is a proper prefix of `p`
 * followed by "-" or "." (both sort before ".json"'s continuation or equal its start). So `p` is
 * released once the listing has passed `q.json` for every such `q`.
 */
export class NameOrder<T> {
  private pending: Array<{ name: string; releaseAt: string; value: T }> = [];

  /** Adds the entry listed at object key `key`; returns the entries now safe to emit, in name order. */
  add(name: string, key: string, value: T): T[] {
    let releaseAt = key;
    for (let i = 1; i < name.length; i++) {
      const c = name[i];
      if (c === "-" || c === ".") {
        const blocker = `${name.slice(0, i)}${OBJECT_SUFFIX}`;
        if (blocker > releaseAt) releaseAt = blocker;
      }
    }
    const at = this.pending.findIndex((p) => p.name > name);
    this.pending.splice(at === -1 ? this.pending.length : at, 0, { name, releaseAt, value });
    const ready: T[] = [];
    while (this.pending.length > 0 && (this.pending[0]?.releaseAt ?? "") <= key) {
      ready.push(this.pending.shift()!.value);
    }
    return ready;
  }

  drain(): T[] {
    const rest = this.pending.map((p) => p.value);
    this.pending = [];
    return rest;
  }
}

/**
 * `LeaseStore.list` over an object listing. `keys` yields object keys (relative to the bucket or
 * container) in key order, starting at or before the first key a name after `startAfter` can
 * have; `read` fetches one lease (null when it vanished between list and read). Reads start as
 * soon as a key is listed and overlap while `NameOrder` holds entries back.
 */
export async function* listInNameOrder(
  keys: AsyncIterable<string>,
  storePrefix: string,
  prefix: string,
  options: ListOptions,
  read: (name: string) => Promise<Stored | null>,
): AsyncIterable<Listed> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  if (limit <= 0) return;
  const startAfter = options.startAfter ?? "";
  const order = new NameOrder<Promise<Listed | null>>();
  let yielded = 0;
  const emit = async function* (entries: Array<Promise<Listed | null>>) {
    for (const entry of entries) {
      const stored = await entry;
      if (stored === null) continue;
      yield stored;
      if (++yielded >= limit) return;
    }
  };
  for await (const key of keys) {
    const name = leaseNameOfKey(storePrefix, key);
    if (name === null || !name.startsWith(prefix) || name <= startAfter) continue;
    // A record that cannot be read is reported in its place; any other failure ends the listing.
    const pending = settleUnreadable(read(name));
    pending.catch(() => {}); // observed when emitted
    yield* emit(order.add(name, key.slice(storePrefix.length), pending));
    if (yielded >= limit) return;
  }
  yield* emit(order.drain());
}

/**
 * Where a listing may start: every name after `startAfter` has a key at or after
 * `storePrefix + startAfter` (either `startAfter` is a proper prefix of it, or it is greater at the
 * first difference), so a service's "start after"/"start offset" can skip everything before it.
 */
export function listStartKey(storePrefix: string, prefix: string, startAfter: string | undefined): string | undefined {
  return startAfter !== undefined && startAfter > prefix ? storePrefix + startAfter : undefined;
}
