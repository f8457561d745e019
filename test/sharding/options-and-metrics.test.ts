/**
 * Bad input is refused before anything joins a group, with the field named; the metrics follow a
 * member's events without store calls.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { ManualClock } from "../../src/clock.js";
import { LeaseValidationError } from "../../src/errors.js";
import { ShardedElectorMetrics } from "../../src/sharding/metrics.js";
import { runSharded } from "../../src/sharding/run-sharded.js";
import { ShardedElector, type ShardedElectorOptions } from "../../src/sharding/sharded-elector.js";
import { Group, TIMING } from "./group-harness.js";

function refused(options: Record<string, unknown>): LeaseValidationError {
  try {
    new ShardedElector({ store: new MemoryStore(), group: "g", buckets: 4, ...options } as ShardedElectorOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseValidationError);
    return error as LeaseValidationError;
  }
  throw new Error("accepted");
}

describe("sharded elector options", () => {
  it("names each bad field and what was expected", () => {
    expect(refused({ buckets: 0 }).issues).toEqual([
      { path: "buckets", message: "expected a whole number from 1 to 4096, got 0" },
    ]);
    expect(refused({ group: "Billing!" }).issues[0]?.path).toBe("group");
    expect(refused({ identity: "pod/a" }).issues[0]).toMatchObject({ path: "identity" });
    expect(refused({ leaseMs: 1000, renewMs: 950 }).issues[0]).toMatchObject({ path: "renewMs" });
    expect(refused({ leaseMS: 1000 }).issues[0]).toMatchObject({ path: "leaseMS", message: "unknown field" });
    expect(refused({ handoffBatch: 0 }).issues[0]).toMatchObject({ path: "handoffBatch" });
    // runSharded's own options, refused by the class with where they go rather than ignored.
    expect(refused({ signal: new AbortController().signal }).issues[0]).toMatchObject({
      path: "signal",
      message: expect.stringContaining("pass it to runSharded(options, fn)"),
    });
    const noList = { get: async () => null, put: async () => undefined };
    expect(refused({ store: noList }).issues[0]).toMatchObject({
      path: "store",
      message: expect.stringContaining("list"),
    });
  });

  it("runSharded checks its own arguments before joining", async () => {
    const store = new MemoryStore();
    await expect(runSharded({ store, group: "g", buckets: 2 }, "nope" as never)).rejects.toThrow(
      /fn: expected a function/,
    );
    await expect(
      runSharded({ store, group: "g", buckets: 2, signal: {} as AbortSignal }, () => undefined),
    ).rejects.toThrow(/signal: expected an AbortSignal/);
    expect(await store.get("g/_config")).toBeNull();
  });

  it("a member whose outer signal is already aborted never joins", async () => {
    const store = new MemoryStore();
    const stop = new AbortController();
    stop.abort();
    await runSharded({ store, group: "g", buckets: 2, clock: new ManualClock(), signal: stop.signal }, () => undefined);
    expect(await store.get("g/_config")).toBeNull();
  });
});

describe("ShardedElectorMetrics", () => {
  it("renders held buckets, unowned buckets seen, hand-offs and forced takeovers", async () => {
    const g = new Group(4);
    const metrics = new ShardedElectorMetrics();
    const a = g.join("a");
    metrics.track(a.elector);
    await g.until(() => g.balanced(["a"]), 1000);
    const b = g.join("b");
    metrics.track(b.elector);
    await g.until(() => g.balanced(["a", "b"]), TIMING.settleMs + 10 * TIMING.leaseMs);
    b.process.crash();
    await g.until(() => g.balanced(["a"]), 4 * TIMING.leaseMs);
    const text = metrics.render();
    expect(text).toContain('leasehold_sharded_buckets_held{group="g",identity="a"} 4');
    expect(text).toContain('leasehold_sharded_buckets{group="g",identity="a"} 4');
    expect(text).toContain('leasehold_sharded_handoffs_total{group="g",identity="a"} 2');
    expect(text).toContain('leasehold_sharded_forced_takeovers_total{group="g",identity="a"} 2');
    expect(text).toContain('leasehold_sharded_fenced_total{group="g",identity="a"} 1');
    expect(text).toContain('leasehold_sharded_assigned_total{group="g",identity="b",kind="handoff"} 2');
    expect(text).toContain('leasehold_sharded_unowned_buckets{group="g",identity="a"} 0');
    expect(text).toMatch(/leasehold_sharded_revoked_total\{group="g",identity="a",reason="handoff"\} 2/);
  });
});

describe("a corrupt config record", () => {
  it("is reported and never overwritten; nothing is taken", async () => {
    const store = new MemoryStore();
    const clock = new ManualClock();
    await store.put(
      {
        name: "g/_config",
        holder: null,
        term: 0,
        leaseMs: 1000,
        acquiredAt: 0,
        renewedAt: 0,
        metadata: { buckets: "lots" },
        writeId: "w1",
      },
      null,
    );
    const elector = new ShardedElector({ store, group: "g", buckets: 4, identity: "a", clock, ...TIMING });
    const errors: string[] = [];
    elector.on("error", ({ error, during }) => errors.push(`${during}: ${(error as Error).name}`));
    elector.start();
    await clock.advance(2000);
    expect(errors[0]).toBe("config: LeaseCorruptError");
    expect(elector.current.held).toEqual([]);
    expect((await store.get("g/_config"))?.record.writeId).toBe("w1");
    await elector.stop();
  });
});
