/**
 * An Elector on an object store (S3, Azure Blob) whose requests pass through the fault proxy: what
 * a renewal costs on the wire, and whether the elector keeps its lease through faults that leave
 * the lease intact (lost answers after the write applied, 5xx before it, S3's 409, slow answers)
 * and gives it up in time when the store stops answering. Runs with the store's own client (one
 * attempt per request); the manual-clock cases settle real I/O between steps (TrackedStore).
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { Elector, type ElectorOptions } from "../../src/leader/elector.js";
import type { LeaseStore } from "../../src/lease.js";
import { uniqueName } from "../../src/testkit/store-contract.js";
import { TrackedStore } from "../../src/testkit/tracked-store.js";
import type { ObjectStoreProxy, PutFault } from "./object-store-proxy.js";

export interface ObjectStoreFaultOptions {
  proxy: () => ObjectStoreProxy;
  /** A store whose requests go through the proxy (its own client, one attempt per request). */
  store: (options?: { timeoutMs?: number }) => LeaseStore & { close(): Promise<void> };
  /** A store that talks to the server directly, to check what was really written. */
  truth: () => LeaseStore & { close(): Promise<void> };
  /** S3 only: the proxy can answer 409 ConditionalRequestConflict. */
  conditionalConflict?: boolean;
}

interface Run {
  elector: Elector;
  events: string[];
  name: string;
}

function electorOn(store: LeaseStore, options: Partial<ElectorOptions>): Run {
  const name = uniqueName("elect");
  const elector = new Elector({ store, name, identity: "a", jitter: 0, ...options });
  const events: string[] = [];
  elector.on("elected", (e) => events.push(`elected ${e.term}`));
  elector.on("deposed", (e) => events.push(`deposed ${e.reason}`));
  return { elector, events, name };
}

/** Waits (real time) until `check` holds, failing with `what` after `ms`. */
async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function describeObjectStoreElectorFaults(backend: string, o: ObjectStoreFaultOptions): void {
  describe(`elector through a fault proxy: ${backend}`, () => {
    const timing = { leaseMs: 1000, renewMs: 300, retryMs: 100, safetyMs: 100 };

    it("ten renewals are ten PUTs on the wire and no other request", async () => {
      const proxy = o.proxy();
      const store = o.store();
      const tracked = new TrackedStore(store);
      const clock = new ManualClock({ idle: () => tracked.settle() });
      const { elector, events } = electorOn(tracked, { ...timing, clock });
      try {
        elector.start();
        await clock.advance(0);
        expect(events).toEqual(["elected 1"]);
        proxy.resetCounts();
        await clock.advance(timing.renewMs * 10);
        expect(proxy.seen).toEqual(Array(10).fill("put"));
      } finally {
        await elector.stop({ release: false });
        await store.close();
      }
    });

    const keeps: Array<[string, PutFault[]]> = [
      ["an answer lost after the renewal applied", ["reset-after-apply"]],
      ["a 500 after the renewal applied", ["500-after-apply"]],
      ["a 503 before anything applied", ["503"]],
      ["two lost answers in a row", ["reset-after-apply", "reset-after-apply"]],
    ];
    if (o.conditionalConflict)
      keeps.push(["409 ConditionalRequestConflict (nothing applied)", ["conditional-conflict"]]);

    it.each(keeps)("keeps its lease through %s, at the same term", async (_label, faults) => {
      const proxy = o.proxy();
      const store = o.store();
      const tracked = new TrackedStore(store);
      const clock = new ManualClock({ idle: () => tracked.settle() });
      const { elector, events, name } = electorOn(tracked, { ...timing, clock });
      const truth = o.truth();
      try {
        elector.start();
        await clock.advance(0);
        proxy.failNextPut(...faults);
        proxy.resetCounts();
        await clock.advance(timing.leaseMs * 3);
        expect(proxy.queuedFaults).toBe(0);
        expect(events).toEqual(["elected 1"]);
        expect(elector.current).toMatchObject({ isLeader: true, term: 1 });
        const held = await truth.get(name);
        expect(held?.record).toMatchObject({ holder: "a", term: 1 });
        // Each fault costs at most one extra PUT and one GET (the conflict's read), never more.
        expect(proxy.count("get")).toBeLessThanOrEqual(faults.length);
        expect(proxy.count("list")).toBe(0);
      } finally {
        await elector.stop({ release: false });
        await Promise.all([store.close(), truth.close()]);
      }
    });

    it("keeps its lease when a renewal's answer arrives after the call timed out (real clock)", async () => {
      const proxy = o.proxy();
      const store = o.store();
      const { elector, events, name } = electorOn(store, {
        leaseMs: 6000,
        renewMs: 500,
        retryMs: 400,
        safetyMs: 600,
        callTimeoutMs: 250,
      });
      let renewals = 0;
      elector.on("renewed", () => renewals++);
      const truth = o.truth();
      try {
        elector.start();
        await until("election", () => events.includes("elected 1"));
        proxy.failNextPut({ delayMs: 1000 });
        const before = renewals;
        // The slow renewal, then at least two more: the timed-out write was resolved, not lost.
        await until("three more renewals", () => proxy.queuedFaults === 0 && renewals >= before + 3);
        expect(events).toEqual(["elected 1"]);
        expect((await truth.get(name))?.record).toMatchObject({ holder: "a", term: 1 });
      } finally {
        await elector.stop({ release: false });
        await Promise.all([store.close(), truth.close()]);
      }
    });

    it("steps down when renewals hang, and nobody else's record appears (real clock)", async () => {
      const proxy = o.proxy();
      const store = o.store();
      const { elector, events, name } = electorOn(store, {
        leaseMs: 1500,
        renewMs: 400,
        retryMs: 200,
        safetyMs: 200,
        callTimeoutMs: 300,
      });
      const truth = o.truth();
      try {
        elector.start();
        await until("election", () => events.includes("elected 1"));
        const lastWritten = await truth.get(name);
        proxy.failNextPut(...Array<PutFault>(100).fill("hang"));
        await until("deposed", () => events.some((e) => e.startsWith("deposed")));
        expect(events).toEqual(["elected 1", "deposed expired"]);
        expect(elector.current.isLeader).toBe(false);
        // Nothing hung was forwarded: the record is still the last renewal that got through.
        expect((await truth.get(name))?.record.holder).toBe("a");
        expect((await truth.get(name))?.record.term).toBe(lastWritten?.record.term);
      } finally {
        await elector.stop({ release: false });
        // Drop the hang faults left over, so later tests start clean.
        proxy.clearFaults();
        proxy.releaseHung();
        await Promise.all([store.close(), truth.close()]);
      }
    });
  });
}
