/**
 * Simulated sharded groups for bench/sharding.bench.ts: replicas on one manual clock (simulated
 * time, so minutes of membership changes run in seconds) over one memory store, each through its
 * own counting wrapper and crash gate. Two kinds of replica behind one interface:
 * - `sharded`: one `ShardedElector` (one session, buckets assigned by the planner);
 * - `knative`: knative/pkg's scheme, one independent `Elector` per bucket per replica, every replica
 *   campaigning for every bucket.
 */

import { MemoryStore } from "../../src/backends/memory/store.js";
import type { Clock } from "../../src/clock.js";
import { Elector } from "../../src/leader/elector.js";
import type { CallOptions, LeaseRecord, LeaseStore, Listed, ListOptions, Revision, Stored } from "../../src/lease.js";
import { ShardedElector } from "../../src/sharding/sharded-elector.js";
import { SimClock } from "./sim-clock.js";

export type Kind = "sharded" | "knative";

export interface OpCounts {
  put: number;
  get: number;
  list: number;
}

const never = <T>() => new Promise<T>(() => undefined);

/** A replica's process: once crashed, its timers never fire and its store calls never answer. */
class Gate {
  crashed = false;
}

class GatedClock implements Clock {
  constructor(
    private readonly inner: SimClock,
    private readonly gate: Gate,
  ) {}
  now(): number {
    return this.inner.now();
  }
  wallNow(): number {
    return this.inner.wallNow();
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.gate.crashed) return never();
    await this.inner.sleep(ms, signal);
    if (this.gate.crashed) return never();
  }
}

class CountingGatedStore implements LeaseStore {
  readonly counts: OpCounts = { put: 0, get: 0, list: 0 };
  constructor(
    private readonly inner: MemoryStore,
    private readonly gate: Gate,
  ) {}
  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    this.counts.get++;
    return this.pass(this.inner.get(name, options));
  }
  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    this.counts.put++;
    return this.pass(this.inner.put(next, expected, options));
  }
  async *list(prefix: string, options?: ListOptions): AsyncIterable<Listed> {
    this.counts.list++;
    const out: Listed[] = [];
    for await (const s of this.inner.list(prefix, options)) out.push(s);
    yield* await this.pass(Promise.resolve(out));
  }
  private async pass<T>(p: Promise<T>): Promise<T> {
    if (this.gate.crashed) return never();
    const value = await p;
    if (this.gate.crashed) return never();
    return value;
  }
}

export interface Replica {
  id: string;
  counts: OpCounts;
  /** Buckets this replica works on now (inside its safe window). */
  owned(): number[];
  /** Leaves gracefully (hands its buckets over). */
  leave(): Promise<void>;
  /** Stops dead: no release, no more timers or answers. */
  crash(): void;
}

export interface SimSettings {
  buckets: number;
  leaseMs: number;
}

export class SimGroup {
  readonly clock = new SimClock();
  readonly store = new MemoryStore();
  readonly replicas: Replica[] = [];
  private seq = 0;

  constructor(
    readonly kind: Kind,
    readonly settings: SimSettings,
  ) {}

  add(): Replica {
    const id = `r${this.seq++}`;
    const gate = new Gate();
    const store = new CountingGatedStore(this.store, gate);
    const clock = new GatedClock(this.clock, gate);
    const replica =
      this.kind === "sharded" ? sharded(id, store, clock, this.settings) : knative(id, store, clock, this.settings);
    const r: Replica = {
      ...replica,
      crash: () => {
        gate.crashed = true;
        replica.crash();
      },
    };
    this.replicas.push(r);
    return r;
  }

  remove(r: Replica): void {
    this.replicas.splice(this.replicas.indexOf(r), 1);
  }

  /** bucket -> replicas working on it now. */
  owners(): Array<string[]> {
    const out: string[][] = Array.from({ length: this.settings.buckets }, () => []);
    for (const r of this.replicas) for (const b of r.owned()) out[b]?.push(r.id);
    return out;
  }

  /** Every bucket owned by exactly one replica, and loads within one of each other. */
  balanced(): boolean {
    if (this.replicas.length === 0) return false;
    if (this.owners().some((o) => o.length !== 1)) return false;
    const loads = this.replicas.map((r) => r.owned().length);
    return Math.max(...loads) - Math.min(...loads) <= 1;
  }
}

function sharded(
  id: string,
  store: LeaseStore,
  clock: Clock,
  s: SimSettings,
): Omit<Replica, "crash"> & { crash(): void } {
  const elector = new ShardedElector({
    store,
    group: "bench",
    buckets: s.buckets,
    identity: id,
    leaseMs: s.leaseMs,
    clock,
    random: Math.random,
  });
  // The work: return as soon as the bucket must be given up (an application that stops promptly).
  elector.on("assigned", ({ bucket, term, signal }) => {
    elector.trackWork(
      bucket,
      term,
      new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })),
    );
  });
  elector.start();
  return {
    id,
    counts: (store as CountingGatedStore).counts,
    owned: () => {
      const state = elector.current;
      return state.session === undefined ? [] : state.held.map((h) => h.bucket);
    },
    leave: () => elector.stop({ handOff: true }),
    crash: () => undefined,
  };
}

function knative(
  id: string,
  store: LeaseStore,
  clock: Clock,
  s: SimSettings,
): Omit<Replica, "crash"> & { crash(): void } {
  const electors = Array.from(
    { length: s.buckets },
    (_, b) => new Elector({ store, name: `bench/knative/${b}`, identity: id, leaseMs: s.leaseMs, clock }),
  );
  for (const e of electors) e.start();
  return {
    id,
    counts: (store as CountingGatedStore).counts,
    owned: () => electors.flatMap((e, b) => (e.current.isLeader ? [b] : [])),
    leave: async () => {
      await Promise.all(electors.map((e) => e.stop({ release: true })));
    },
    crash: () => undefined,
  };
}
