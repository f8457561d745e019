/**
 * A third-party store built against a second copy of leasehold (another version in its own
 * node_modules, a bundled copy): its errors are that copy's classes, which `instanceof` against
 * ours does not recognise. The library and its published contract suites match errors by the
 * `is…` guards (which read `name`), so such a store passes the store, elector and sharded
 * contracts exactly as a built-in one does.
 *
 * The second copy is src/errors.ts itself, copied to a fresh directory and imported from there:
 * a separate module instance with its own classes, as a duplicated install would load.
 */
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import * as ours from "../src/errors.js";
import type { CallOptions, LeaseRecord, Revision, Stored } from "../src/lease.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract } from "../src/testkit/store-contract.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-second-copy-"));
copyFileSync(join(import.meta.dirname, "../src/errors.ts"), join(dir, "errors.ts"));
const theirs = (await import(pathToFileURL(join(dir, "errors.ts")).href)) as typeof ours;

/** Re-raises what the inner store throws as the second copy's error of the same kind. */
function foreign(error: unknown): unknown {
  if (ours.isLeaseConflictError(error)) return new theirs.LeaseConflictError(error.lease, error.current);
  if (ours.isLeaseValidationError(error)) return new theirs.LeaseValidationError("lease record", error.issues);
  if (ours.isLeaseStoreError(error)) return new theirs.LeaseStoreError(error.message, { ambiguous: error.ambiguous });
  return error;
}

/** A store whose every error is the second copy's. */
class ThirdPartyStore extends StoreWrapper {
  override get(name: string, options?: CallOptions): Promise<Stored | null> {
    return this.inner.get(name, options).catch((e: unknown) => Promise.reject(foreign(e)));
  }
  override put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    return this.inner.put(next, expected, options).catch((e: unknown) => Promise.reject(foreign(e)));
  }
}

const create = async () => ({ store: new ThirdPartyStore(new MemoryStore()) });

describe("a store built against a second copy of leasehold", () => {
  it("throws errors that instanceof does not recognise and the guards do", async () => {
    const store = new ThirdPartyStore(new MemoryStore());
    const name = "second-copy/a";
    const first = await store.put({ ...record(name), holder: "a" }, null);
    const error = await store.put(record(name), null).catch((e: unknown) => e);
    expect(error instanceof ours.LeaseConflictError).toBe(false);
    expect(ours.isLeaseConflictError(error)).toBe(true);
    expect((error as ours.LeaseConflictError).current).toEqual(first);
  });
});

describeStoreContract("second copy of leasehold's errors", {
  create,
  conflictCarriesCurrent: true,
  cannotHoldUnreadable: "it wraps a memory store, which keeps only records it validated",
});
describeElectorContract("second copy of leasehold's errors", create);
describeShardedContract("second copy of leasehold's errors", create);

function record(name: string): LeaseRecord {
  return { name, holder: "b", term: 1, leaseMs: 1000, acquiredAt: 0, renewedAt: 0, metadata: {}, writeId: "w" };
}
