/**
 * A sharded group on the manual clock for the scenario tests: each member is a simulated process
 * (test/chaos/process.ts: its timers and store answers pass a gate, so a crash or a pause stops it
 * for real) running `runSharded` against one shared store through a fault-free chaos network.
 *
 * After every timer the harness checks, on true time:
 * - no bucket has two members inside their safe windows at once (a member is inside for a bucket
 *   while it works on it and its session window is open by the clock);
 * - each bucket's terms only grow, one member per term;
 * - every write keeps the record's term rules (src/term-rules.ts), which the HTTP API enforces, so
 *   a member over `HttpStore` would never be refused.
 */

import { MemoryStore } from "../../src/backends/memory/store.js";
import { ManualClock } from "../../src/clock.js";
import type { CallOptions, LeaseRecord, LeaseStore, Listed, ListOptions, Revision, Stored } from "../../src/lease.js";
import { runSharded } from "../../src/sharding/run-sharded.js";
import type { AssignedKind, ShardedElector, ShardedElectorOptions } from "../../src/sharding/sharded-elector.js";
import { checkTermRules } from "../../src/term-rules.js";
import { ChaosStore, Network, NO_FAULTS } from "../chaos/chaos-store.js";
import { Prng } from "../chaos/prng.js";
import { SimProcess } from "../chaos/process.js";

export const TIMING = {
  leaseMs: 1000,
  renewMs: 300,
  retryMs: 100,
  safetyMs: 100,
  jitter: 0,
  settleMs: 1000,
  pollMs: 300,
  graceMs: 200,
} as const;

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface Member {
  id: string;
  process: SimProcess;
  elector: ShardedElector;
  leave: AbortController;
  /** Resolves when runSharded returned (after leaving). */
  done: Promise<void>;
  /** Buckets whose fn is running, with its term. */
  working: Map<number, number>;
}

export interface Assignment {
  at: number;
  member: string;
  bucket: number;
  /** The bucket count the tenure runs under. */
  buckets: number;
  term: number;
  kind: AssignedKind;
}

export class Group {
  readonly clock: ManualClock;
  readonly store: LeaseStore;
  readonly network: Network;
  readonly members = new Map<string, Member>();
  readonly violations: string[] = [];
  readonly assignments: Assignment[] = [];
  readonly revocations: Array<{ at: number; member: string; bucket: number; term: number; reason: string }> = [];
  readonly errors: string[] = [];
  private readonly lastTerm = new Map<number, { term: number; member: string }>();

  constructor(
    /** The count the group starts with (the tests change it with reshard and update this). */
    public buckets: number,
    readonly options: Partial<ShardedElectorOptions> = {},
    inner: LeaseStore = new MemoryStore(),
  ) {
    this.store = new TermRulesStore(inner, this.violations);
    this.clock = new ManualClock({
      idle: async () => {
        await immediate();
        await immediate();
        this.check();
      },
    });
    this.network = new Network(this.clock, new Prng(1), NO_FAULTS);
  }

  /** Starts a member; `label` tells apart two processes with one identity (a restart). */
  join(id: string, options: Partial<ShardedElectorOptions> = {}, label = id): Member {
    const process = new SimProcess(label, this.clock, 0, async () => {
      await immediate();
      await immediate();
    });
    const leave = new AbortController();
    const working = new Map<number, number>();
    let elector: ShardedElector | undefined;
    const done = runSharded(
      {
        store: new ChaosStore(this.store, this.network, process),
        group: "g",
        buckets: this.buckets,
        identity: id,
        clock: process.clock,
        ...TIMING,
        ...this.options,
        ...options,
        signal: leave.signal,
        onElector: (e) => {
          elector = e;
          e.on("assigned", ({ bucket, buckets, term, kind }) => {
            this.assignments.push({ at: this.clock.now(), member: label, bucket, buckets, term, kind });
            const last = this.lastTerm.get(bucket);
            if (last && term <= last.term) {
              this.violations.push(`bucket ${bucket}: ${id} got term ${term} after ${last.member} had ${last.term}`);
            }
            this.lastTerm.set(bucket, { term, member: id });
          });
          e.on("revoked", ({ bucket, term, reason }) =>
            this.revocations.push({ at: this.clock.now(), member: label, bucket, term, reason }),
          );
          e.on("error", ({ during, error }) => this.errors.push(`${id} ${during}: ${String(error)}`));
        },
      },
      async ({ bucket, term, signal }) => {
        working.set(bucket, term);
        await new Promise<void>((resolve) => {
          if (signal.aborted) resolve();
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        working.delete(bucket);
      },
    );
    const member: Member = { id, process, elector: elector!, leave, done, working };
    this.members.set(label, member);
    return member;
  }

  /** Buckets each member is inside its safe window for, now (no side effects). */
  inside(member: Member): number[] {
    if (member.process.current === "crashed" && !member.elector) return [];
    const state = member.elector.current;
    if (state.session === undefined) return [];
    return state.held.map((h) => h.bucket);
  }

  /** bucket -> members inside their safe window for it. */
  owners(): Map<number, string[]> {
    const out = new Map<number, string[]>();
    for (const [label, m] of this.members) {
      for (const b of this.inside(m)) out.set(b, [...(out.get(b) ?? []), label]);
    }
    return out;
  }

  /** How many buckets each listed member works on (inside its window). */
  loads(ids: string[]): number[] {
    return ids.map((label) => this.inside(this.members.get(label)!).length);
  }

  /** Every bucket owned by exactly one of `ids`, with loads within one of each other. */
  balanced(ids: string[]): boolean {
    const owners = this.owners();
    for (let b = 0; b < this.buckets; b++) {
      const o = owners.get(b) ?? [];
      if (o.length !== 1 || !ids.includes(o[0]!)) return false;
    }
    const loads = this.loads(ids);
    return Math.max(...loads) - Math.min(...loads) <= 1;
  }

  /** Advances in `step` ms slices until `done()` or `maxMs` passed; returns the time it held. */
  async until(done: () => boolean, maxMs: number, step = 10): Promise<number> {
    const end = this.clock.now() + maxMs;
    while (!done()) {
      if (this.clock.now() >= end) throw new Error(`not reached within ${maxMs} ms (at ${this.clock.now()})`);
      await this.clock.advance(step);
    }
    return this.clock.now();
  }

  /** Runs until `p` settles, moving time in `step` ms slices (at most `maxMs`). */
  async settle<T>(p: Promise<T>, maxMs: number, step = 10): Promise<T> {
    let result: { value: T } | undefined;
    let failure: { error: unknown } | undefined;
    p.then(
      (value) => {
        result = { value };
      },
      (error: unknown) => {
        failure = { error };
      },
    );
    await this.until(() => result !== undefined || failure !== undefined, maxMs, step);
    if (failure) throw failure.error;
    return result!.value;
  }

  private check(): void {
    for (const [bucket, ids] of this.owners()) {
      if (ids.length > 1) {
        this.violations.push(`bucket ${bucket} has ${ids.join(" and ")} inside their windows at ${this.clock.now()}`);
      }
    }
  }
}

/** Checks each write against the record it replaces (the one at the expected revision). */
class TermRulesStore implements LeaseStore {
  constructor(
    private readonly inner: LeaseStore,
    private readonly violations: string[],
  ) {}

  get(name: string, options?: CallOptions): Promise<Stored | null> {
    return this.inner.get(name, options);
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const current = await this.inner.get(next.name);
    if ((current?.revision ?? null) === expected) {
      const broken = checkTermRules(current?.record ?? null, next);
      if (broken) this.violations.push(`${next.name}: ${broken.rule}: ${broken.message}`);
    }
    return this.inner.put(next, expected, options);
  }

  list(prefix: string, options?: ListOptions): AsyncIterable<Listed> {
    return this.inner.list!(prefix, options);
  }
}
