/**
 * The API's watch hub over a store without push: one poller re-reads every watched lease each
 * interval in batches (getMany: 100 names a request), shared by every stream; stores without
 * getMany are read by bounded gets; a failed batch is read lease by lease when single reads work,
 * and skipped when the store is down. On the manual clock, counted with TrackedStore.
 */
import { describe, expect, it } from "vitest";
import { WatchHub } from "../src/api/watch-hub.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseCorruptError, LeaseStoreError } from "../src/errors.js";
import type { CallOptions, Stored } from "../src/lease.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";

const POLL_MS = 1000;

/** A memory store without push (as DynamoDB and SQLite are), optionally without getMany. */
async function setup(leases: number, options: { batches?: boolean } = {}) {
  const memory = new MemoryStore();
  const names = Array.from({ length: leases }, (_, i) => `hub/${String(i).padStart(5, "0")}`);
  for (const name of names) await memory.put(makeRecord(name, { holder: "a" }), null);
  const store = new TrackedStore(memory, { without: options.batches === false ? ["watch", "getMany"] : ["watch"] });
  const clock = new ManualClock();
  const hub = new WatchHub(store, clock, POLL_MS);
  const seen = new Map<string, Array<string | null>>();
  const subscribe = (name: string) =>
    hub.subscribe(name, (stored) => {
      const list = seen.get(name) ?? [];
      list.push(stored?.record.holder ?? null);
      seen.set(name, list);
    });
  return { memory, store, clock, hub, names, seen, subscribe };
}

async function tick(t: { clock: ManualClock; store: TrackedStore }): Promise<void> {
  await t.clock.advance(POLL_MS);
  await t.store.settle();
}

describe("watch hub: one poller for every watched lease", () => {
  it("re-reads 250 watched leases, each followed by 3 streams, with 3 requests per interval", async () => {
    const t = await setup(250);
    const stops = t.names.flatMap((name) => [t.subscribe(name), t.subscribe(name), t.subscribe(name)]);
    expect(t.hub.size).toBe(250);
    await tick(t);
    expect(t.store.counts).toEqual({ get: 0, put: 0, list: 0, getMany: 3 });
    // A change made elsewhere (another replica's write) reaches the lease's streams at the next interval.
    const current = (await t.memory.get(t.names[7]!)) as Stored;
    await t.memory.put(makeRecord(t.names[7]!, { holder: null }), current.revision);
    await tick(t);
    expect(t.store.counts.getMany).toBe(6);
    expect(t.seen.get(t.names[7]!)).toEqual(["a", "a", "a", null, null, null]);
    for (const stop of stops) stop();
    expect(t.hub.size).toBe(0);
    // Nobody watches: the poller has stopped.
    await tick(t);
    await tick(t);
    expect(t.store.counts.getMany).toBe(6);
    expect(t.clock.pending).toBe(0);
  });

  it("a store without getMany is read by gets, one per watched lease per interval (not per stream)", async () => {
    const t = await setup(30, { batches: false });
    for (const name of t.names) {
      t.subscribe(name);
      t.subscribe(name);
    }
    await tick(t);
    expect(t.store.counts).toEqual({ get: 30, put: 0, list: 0, getMany: 0 });
  });

  it("a batch that fails while single reads work is read lease by lease: a corrupt record costs only its own streams", async () => {
    const t = await setup(5);
    const corrupt = t.names[2]!;
    const failing = new (class extends TrackedStore {
      override get(name: string, options?: CallOptions) {
        if (name !== corrupt) return super.get(name, options);
        this.counts.get++;
        return Promise.reject(new LeaseCorruptError(name, [{ path: "term", message: "bad" }]));
      }
      protected override getManyOf(): Promise<Array<Stored | null>> {
        this.counts.getMany++;
        return Promise.reject(new LeaseCorruptError(corrupt, [{ path: "term", message: "bad" }]));
      }
    })(t.memory, { without: ["watch"] });
    const hub = new WatchHub(failing, t.clock, POLL_MS);
    const seen: string[] = [];
    for (const name of t.names) hub.subscribe(name, () => seen.push(name));
    await t.clock.advance(POLL_MS);
    await failing.settle();
    expect(seen.sort()).toEqual(t.names.filter((n) => n !== corrupt));
    // One batch request, the probe of the first name, then each name once.
    expect(failing.counts).toMatchObject({ getMany: 1, get: 6 });
  });

  it("when the store is down, a round is skipped after one probe and the streams stay subscribed", async () => {
    const t = await setup(150);
    let down = true;
    const outage = new (class extends TrackedStore {
      override get(name: string, options?: CallOptions) {
        if (!down) return super.get(name, options);
        this.counts.get++;
        return Promise.reject(new LeaseStoreError("store down", { ambiguous: false }));
      }
      protected override getManyOf(names: readonly string[], options?: CallOptions) {
        if (down) {
          this.counts.getMany++;
          return Promise.reject(new LeaseStoreError("store down", { ambiguous: false }));
        }
        return super.getManyOf(names, options);
      }
    })(t.memory, { without: ["watch"] });
    const hub = new WatchHub(outage, t.clock, POLL_MS);
    let heard = 0;
    for (const name of t.names) hub.subscribe(name, () => heard++);
    await t.clock.advance(POLL_MS);
    await outage.settle();
    // Two batches failed, one probe each, and no lease-by-lease reads.
    expect(outage.counts).toMatchObject({ getMany: 2, get: 2 });
    expect(heard).toBe(0);
    down = false;
    await t.clock.advance(POLL_MS);
    await outage.settle();
    expect(heard).toBe(150);
    expect(hub.size).toBe(150);
  });
});
