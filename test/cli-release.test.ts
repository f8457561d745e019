/**
 * `leasehold release` against a holder that is still renewing: a renewal by the named holder in
 * the named term between the release's read and its write changes only the revision, so the
 * release goes on from the record the conflict showed; a takeover meanwhile is refused, naming it.
 * The races are made exact by a store that writes the holder's renewal just before the release's
 * compare-and-swap reaches it.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { releaseLease } from "../src/cli/release.js";
import { isReleaseRefusedError } from "../src/errors.js";
import type { CallOptions, LeaseRecord, Revision, Stored } from "../src/lease.js";
import { newWriteId } from "../src/lease.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { rejection } from "./support/rejection.js";

/** Before each of the next `races` releasing writes (holder null), another writer changes the record. */
class RacingStore extends StoreWrapper {
  constructor(
    private races: number,
    private readonly change: (current: Stored) => LeaseRecord,
  ) {
    super(new MemoryStore());
  }

  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    if (next.holder === null && this.races > 0) {
      this.races--;
      const current = (await this.inner.get(next.name))!;
      await this.inner.put(this.change(current), current.revision);
    }
    return this.inner.put(next, expected, options);
  }
}

const renewal = (current: Stored): LeaseRecord => ({
  ...current.record,
  renewedAt: current.record.renewedAt + 1000,
  writeId: newWriteId(),
});

describe("leasehold release racing the holder", () => {
  it("a renewal by the named holder in the named term between read and write: released on the renewed record", async () => {
    const store = new RacingStore(2, renewal);
    const name = uniqueName();
    await store.put(makeRecord(name, { holder: "alice", term: 3 }), null);
    const outcome = await releaseLease(store, name, "alice", 3);
    expect(outcome.released).toBe(true);
    expect(outcome.stored.record).toMatchObject({ holder: null, term: 3 });
    expect(await store.get(name)).toEqual(outcome.stored);
  });

  it("a takeover between read and write is refused, naming the new holder and term; nothing changes", async () => {
    const takeover = (current: Stored): LeaseRecord => ({
      ...current.record,
      holder: "bob",
      term: current.record.term + 1,
      writeId: newWriteId(),
    });
    const store = new RacingStore(1, takeover);
    const name = uniqueName();
    await store.put(makeRecord(name, { holder: "alice", term: 3 }), null);
    const error = await rejection(releaseLease(store, name, "alice", 3));
    expect(isReleaseRefusedError(error)).toBe(true);
    expect((error as Error).message).toContain("is held by bob in term 4, not by alice in term 3; nothing changed");
    expect((await store.get(name))?.record).toMatchObject({ holder: "bob", term: 4 });
  });

  it("a holder renewing before every attempt wins after five attempts: refused, the lease still held", async () => {
    const store = new RacingStore(Number.POSITIVE_INFINITY, renewal);
    const name = uniqueName();
    await store.put(makeRecord(name, { holder: "alice", term: 3 }), null);
    const error = await rejection(releaseLease(store, name, "alice", 3));
    expect(isReleaseRefusedError(error)).toBe(true);
    expect((error as Error).message).toContain("changed 5 times while releasing it");
    expect((await store.get(name))?.record).toMatchObject({ holder: "alice", term: 3 });
  });
});
