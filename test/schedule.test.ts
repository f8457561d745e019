/**
 * Scheduled jobs on the manual clock (src/schedule/): replicas in one process sharing one store,
 * each with its own wall clock (skewed by seconds) over one monotonic clock the test drives. From
 * what the jobs' functions saw and the events, the tests check the promises of docs/schedule.md:
 * no fire runs twice, no two runs overlap, terms only grow, every fire is run or reported missed,
 * a run is stopped at lockAtMostFor, a paused runner does nothing after it wakes, a crashed run is
 * reported missed (or rerun, with onCrash: "rerun"), and a duplicated delivery runs once.
 */
import { Cron } from "croner";
import nodeCron, { type RunCoordinator } from "node-cron";
import { describe, expect, it } from "vitest";
import { HttpStore } from "../src/backends/http/store.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { runCli } from "../src/cli/program.js";
import { type Clock, ManualClock } from "../src/clock.js";
import { isLeaseTermRuleError, isLeaseValidationError, LeaseValidationError } from "../src/errors.js";
import type { LeaseStore } from "../src/lease.js";
import { CronSchedule } from "../src/schedule/cron.js";
import { planFire } from "../src/schedule/fire-plan.js";
import {
  cronerCallback,
  type FireContext,
  leaseholdRunCoordinator,
  runFire,
  type ScheduledJob,
  ScheduleMetrics,
  type ScheduleOptions,
  schedule,
} from "../src/schedule/index.js";
import { checkTermRules } from "../src/term-rules.js";
import { FaultyStore } from "../src/testkit/faulty-store.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";

const START = Date.UTC(2026, 0, 1, 0, 0, 0, 300);
const EVERY_SECOND = "* * * * * *";

/** A replica's wall clock: the shared monotonic clock, its timers, and a wall clock `offsetMs` off. */
function skewed(base: ManualClock, offsetMs: number): Clock {
  return { now: () => base.now(), wallNow: () => base.wallNow() + offsetMs, sleep: (ms, s) => base.sleep(ms, s) };
}

interface RunLine {
  replica: string;
  fire: number;
  term: number;
  rerun: boolean;
  /** Monotonic, on the one clock every replica shares. */
  start: number;
  end: number;
}

type Behaviour = (ctx: FireContext, clock: Clock) => Promise<void>;

const work =
  (ms: number): Behaviour =>
  async (ctx, clock) => {
    await clock.sleep(ms, ctx.signal);
  };

interface Replica {
  id: string;
  job: ScheduledJob;
  store: FaultyStore;
  /** Set when the test crashed it: its run (if any) ends there, its store calls hang from then on. */
  crashedAt?: number;
}

/** Replicas of one job on one store, the one clock, and everything they reported. */
class Cluster {
  readonly clock = new ManualClock({ wallStart: START });
  readonly shared: TrackedStore;
  /** Every replica's own connection, when they do not share one store object (the HTTP store). */
  private readonly connections: TrackedStore[] = [];
  readonly runs: RunLine[] = [];
  readonly missed: Array<{ fire: number; reason: string; by: string }> = [];
  readonly replicas = new Map<string, Replica>();
  behaviour: Behaviour = work(200);

  constructor(
    private readonly base: Partial<ScheduleOptions> = {},
    readonly name = "jobs/report",
    private readonly connect?: () => LeaseStore,
  ) {
    this.shared = new TrackedStore(new MemoryStore());
    this.clock.idle = async () => {
      for (let i = 0; i < 3; i++) {
        await this.shared.settle();
        for (const c of this.connections) await c.settle();
        await new Promise((r) => setTimeout(r, 0));
      }
    };
  }

  start(id: string, offsetMs = 0, options: Partial<ScheduleOptions> = {}): Replica {
    const clock = skewed(this.clock, offsetMs);
    const own = this.connect ? new TrackedStore(this.connect()) : undefined;
    if (own) this.connections.push(own);
    const store = new FaultyStore(own ?? this.shared);
    const replica: Replica = { id, store } as Replica;
    replica.job = schedule({
      store,
      name: this.name,
      cron: EVERY_SECOND,
      identity: id,
      lockAtMostFor: 2000,
      clock,
      ...this.base,
      ...options,
      fn: async (ctx) => {
        const line: RunLine = {
          replica: id,
          fire: ctx.fire.getTime(),
          term: ctx.term,
          rerun: ctx.rerun,
          start: this.clock.now(),
          end: Number.POSITIVE_INFINITY,
        };
        this.runs.push(line);
        await this.behaviour(ctx, clock);
        if (replica.crashedAt === undefined) line.end = this.clock.now();
      },
    });
    replica.job.on("missed", ({ fires, reason }) => {
      for (const f of fires) this.missed.push({ fire: f.getTime(), reason, by: id });
    });
    this.replicas.set(id, replica);
    return replica;
  }

  /** The process is gone: its run ends now (nothing of it runs on), and it never reaches the store again. */
  crash(id: string): void {
    const replica = this.replicas.get(id)!;
    replica.crashedAt = this.clock.now();
    replica.store.hang = true;
    for (const line of this.runs)
      if (line.replica === id && line.end === Number.POSITIVE_INFINITY) line.end = this.clock.now();
  }

  /** Crashes whoever runs next, 100 ms into its run; returns that run. */
  async crashNextRun(): Promise<RunLine> {
    const before = this.runs.length;
    while (this.runs.length === before) await this.clock.advance(50);
    await this.clock.advance(100);
    const victim = this.runs.at(-1)!;
    this.crash(victim.replica);
    return victim;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.replicas.values()].filter((r) => r.crashedAt === undefined).map((r) => r.job.stop()));
    for (const r of this.replicas.values()) r.store.hang = false;
  }

  /** The promises, from the runs and the missed reports. */
  check(options: { from: number; to: number; rerunsAllowed?: boolean }): { ran: number; missed: number } {
    const byStart = [...this.runs].sort((a, b) => a.start - b.start);
    for (let i = 1; i < byStart.length; i++) {
      const prev = byStart[i - 1]!;
      const run = byStart[i]!;
      // No overlap: each run starts after the one before it ended. Terms only grow.
      expect(run.start, `run of ${new Date(run.fire).toISOString()} overlaps the previous one`).toBeGreaterThanOrEqual(
        prev.end,
      );
      expect(run.term).toBeGreaterThan(prev.term);
    }
    const ranFires = this.runs.filter((r) => !(options.rerunsAllowed && r.rerun)).map((r) => r.fire);
    // No fire ran twice (a rerun of a crashed fire is the one exception, and only when asked for).
    expect(new Set(ranFires).size, "a fire ran twice").toBe(ranFires.length);
    const missedFires = new Set(this.missed.map((m) => m.fire));
    // Every fire missed is reported once, by one replica.
    expect(missedFires.size, "a fire was reported missed twice").toBe(this.missed.length);
    const cron = new CronSchedule(EVERY_SECOND);
    let ran = 0;
    let missed = 0;
    for (const fire of cron.between(options.from - 1, options.to)) {
      const wasRun = this.runs.some((r) => r.fire === fire);
      const wasMissed = missedFires.has(fire);
      expect(wasRun || wasMissed, `fire ${new Date(fire).toISOString()} neither ran nor was reported missed`).toBe(
        true,
      );
      if (wasMissed && wasRun) {
        // Only a run that started and whose runner vanished is both.
        expect(this.missed.find((m) => m.fire === fire)?.reason).toBe("crashed");
      }
      if (wasRun) ran++;
      else missed++;
    }
    return { ran, missed };
  }
}

describe("schedule(): replicas with skewed clocks", () => {
  it("three replicas, wall clocks 2.5 s ahead and 3 s behind: each fire of a minute runs once, in order, with growing terms and no overlap", async () => {
    const c = new Cluster();
    c.start("a", 0);
    c.start("fast", 2500);
    c.start("slow", -3000);
    await c.clock.advance(60_000);
    await c.stopAll();
    const first = Math.min(...c.runs.map((r) => r.fire));
    const { ran, missed } = c.check({ from: first, to: START + 55_000 });
    expect(missed).toBe(0);
    // From the first fire the fast replica ran (about 3 s in) on: every one.
    expect(ran).toBeGreaterThanOrEqual(50);
    // The replica whose clock runs ahead runs the fires (early, by its clock), never skipping one.
    expect(new Set(c.runs.map((r) => r.replica))).toEqual(new Set(["fast"]));
  });

  it("a replica crashed mid-run: its fire is reported missed (crashed) once, the others take over after observing its lease, and catch up in order", async () => {
    const c = new Cluster();
    c.start("a", 0);
    c.start("fast", 2500);
    c.start("slow", -3000);
    await c.clock.advance(10_000);
    const victim = await c.crashNextRun();
    await c.clock.advance(20_000);
    await c.stopAll();
    const first = Math.min(...c.runs.map((r) => r.fire));
    c.check({ from: first, to: START + 25_000 });
    expect(c.missed).toEqual([{ fire: victim.fire, reason: "crashed", by: expect.any(String) }]);
    const after = c.runs.filter((r) => r.start > victim.start);
    expect(after.length).toBeGreaterThan(10);
    expect(after.every((r) => r.replica !== victim.replica)).toBe(true);
    // Taken over only once the crashed run's record had stood for its lease (2000 + 200 ms) unchanged.
    expect(after[0]!.start - victim.start).toBeGreaterThanOrEqual(2200);
  });

  it('onCrash: "rerun": the crashed fire runs again under the next term, then the job catches up', async () => {
    const c = new Cluster({ onCrash: "rerun" });
    c.start("a", 0);
    c.start("b", 0);
    await c.clock.advance(5_000);
    const victim = await c.crashNextRun();
    await c.clock.advance(10_000);
    await c.stopAll();
    const rerun = c.runs.find((r) => r.rerun);
    expect(rerun).toMatchObject({ fire: victim.fire, term: victim.term + 1 });
    expect(c.missed).toEqual([]);
    c.check({ from: Math.min(...c.runs.map((r) => r.fire)), to: START + 14_000, rerunsAllowed: true });
  });
});

describe("schedule(): over the HTTP API", () => {
  it("replicas each on their own API connection: each fire once, a crashed run settled once the API counts it free, and no API caller can rewind the job's fire", async () => {
    let api: ReturnType<typeof inProcessApi> | undefined;
    const connect = () => new HttpStore({ baseUrl: api!.url, token: TOKENS.admin, fetch: api!.fetch });
    const c = new Cluster({}, "jobs/over-http", connect);
    api = inProcessApi({ clock: c.clock });
    c.start("a");
    c.start("b", 300);
    await c.clock.advance(5_000);
    const victim = await c.crashNextRun();
    await c.clock.advance(15_000);
    await c.stopAll();
    c.check({ from: Math.min(...c.runs.map((r) => r.fire)), to: START + 18_000 });
    expect(c.missed.filter((m) => m.reason === "crashed").map((m) => m.fire)).toEqual([victim.fire]);
    expect(c.runs.filter((r) => r.start > victim.start).length).toBeGreaterThan(5);
    // The job's fire is protocol state: a token holder's raw write cannot move it back or drop it.
    const store = connect();
    const current = (await store.get("jobs/over-http"))!;
    for (const fire of [{ at: current.record.fire!.at - 1000, done: true }, undefined]) {
      const { fire: _drop, ...rest } = current.record;
      const next = { ...rest, writeId: "w-rewind", ...(fire ? { fire } : {}) };
      const error = await store.put(next, current.revision).catch((e: unknown) => e);
      expect(isLeaseTermRuleError(error), String(error)).toBe(true);
    }
    expect(await store.get("jobs/over-http")).toEqual(current);
  });
});

describe("schedule(): a run's window", () => {
  it("a run that outlives lockAtMostFor is stopped there: its signal aborts at sentAt + lockAtMostFor, and no other run starts before it has returned", async () => {
    const c = new Cluster({ lockAtMostFor: 1500 });
    const aborted: Array<{ at: number; deadline: number; stillLeader: boolean }> = [];
    c.behaviour = async (ctx, clock) => {
      // Would take 5 s; gives up when its signal aborts.
      await clock.sleep(5000, ctx.signal);
      aborted.push({ at: clock.now(), deadline: ctx.deadline, stillLeader: ctx.stillLeader() });
    };
    const overran: number[] = [];
    c.start("a").job.on("overran", ({ fire }) => overran.push(fire.getTime()));
    c.start("b").job.on("overran", ({ fire }) => overran.push(fire.getTime()));
    await c.clock.advance(12_000);
    await c.stopAll();
    expect(aborted.length).toBeGreaterThanOrEqual(4);
    for (const a of aborted.slice(0, -1))
      expect(a).toEqual({ at: a.deadline, deadline: a.deadline, stillLeader: false });
    expect(overran.length).toBeGreaterThanOrEqual(aborted.length - 1);
    // Fires that came due while a run held the job are reported missed (held), not run late.
    expect(c.missed.length).toBeGreaterThan(0);
    expect(new Set(c.missed.map((m) => m.reason))).toEqual(new Set(["held"]));
    c.check({ from: Math.min(...c.runs.map((r) => r.fire)), to: START + 10_000 });
  });

  it("a runner paused past its window does nothing after it wakes: stillLeader() is false before any timer runs, and another replica has the next fire", async () => {
    const c = new Cluster({ lockAtMostFor: 1000 });
    const effects: Array<{ replica: string; term: number; at: number }> = [];
    let pauseNext = true;
    c.behaviour = async (ctx, clock) => {
      await clock.sleep(100);
      if (pauseNext) {
        pauseNext = false;
        // SIGSTOP, a GC pause, a VM migration: 4 s pass and no timer of this process runs.
        c.clock.jump(4000);
      }
      if (!ctx.stillLeader()) return; // the guard every side effect needs
      effects.push({ replica: ctx.fire.toISOString(), term: ctx.term, at: clock.now() });
    };
    c.start("a");
    c.start("b");
    await c.clock.advance(10_000);
    await c.stopAll();
    const paused = c.runs[0]!;
    // The paused run wrote nothing; every later run did, each inside its own window.
    expect(effects.some((e) => e.term === paused.term)).toBe(false);
    expect(effects.length).toBeGreaterThan(3);
    expect(effects.every((e) => e.term > paused.term)).toBe(true);
  });

  it("lockAtLeastFor holds the job after a short run: fires within it of a run's start are reported missed (held), not run", async () => {
    const c = new Cluster({ lockAtLeastFor: 2500, lockAtMostFor: 3000 });
    c.start("a");
    c.start("b", 400);
    await c.clock.advance(20_000);
    await c.stopAll();
    const fires = c.runs.map((r) => r.fire).sort((x, y) => x - y);
    for (let i = 1; i < fires.length; i++) expect(fires[i]! - fires[i - 1]!).toBe(3000);
    expect(c.missed.every((m) => m.reason === "held")).toBe(true);
    c.check({ from: fires[0]!, to: START + 18_000 });
  });
});

describe("schedule(): missed fires", () => {
  const history = async (store: MemoryStore, name: string, fire: number) =>
    store.put(
      {
        name,
        holder: null,
        term: 7,
        leaseMs: 1000,
        acquiredAt: fire,
        renewedAt: fire,
        metadata: {},
        writeId: "w-history",
        fire: { at: fire, done: true },
      },
      null,
    );

  for (const policy of ["skip", "run-latest"] as const) {
    it(`fires no replica was up for: missed: "${policy}"`, async () => {
      // Started 30 s after a fire: later than maxLateMs (10 s) for it.
      const clock = new ManualClock({ wallStart: Date.UTC(2026, 0, 1, 0, 0, 30) });
      const store = new MemoryStore();
      const minute = 60_000;
      const last = Date.UTC(2026, 0, 1) - 10 * minute; // ten fires ago
      await history(store, "jobs/minutely", last);
      const ran: number[] = [];
      const missed: number[] = [];
      const job = schedule({
        store,
        name: "jobs/minutely",
        cron: "* * * * *",
        missed: policy,
        lockAtMostFor: 5000,
        clock,
        fn: (ctx) => {
          ran.push(ctx.fire.getTime());
        },
      });
      job.on("missed", ({ fires, reason }) => {
        expect(reason).toBe("late");
        missed.push(...fires.map((f) => f.getTime()));
      });
      await clock.advance(minute);
      await job.stop();
      const due = Array.from({ length: 10 }, (_, i) => last + (i + 1) * minute);
      if (policy === "skip") {
        expect(missed).toEqual(due);
        expect(ran).toEqual([Date.UTC(2026, 0, 1, 0, 1)]);
      } else {
        expect(missed).toEqual(due.slice(0, -1));
        expect(ran).toEqual([due.at(-1), Date.UTC(2026, 0, 1, 0, 1)]);
      }
      expect((await store.get("jobs/minutely"))?.record).toMatchObject({ term: 8 + (policy === "skip" ? 0 : 1) });
    });
  }

  it("a replica woken late by less than maxLateMs still runs its fire; the record's term is the fencing token downstream", async () => {
    const clock = new ManualClock({ wallStart: START });
    const store = new MemoryStore();
    const terms: number[] = [];
    const job = schedule({
      store,
      name: "jobs/late",
      cron: EVERY_SECOND,
      maxLateMs: 3000,
      lockAtMostFor: 500,
      clock,
      fn: (ctx) => {
        terms.push(ctx.term);
      },
    });
    await clock.advance(1000);
    clock.jump(2500); // a pause between fires
    await clock.advance(2000);
    await job.stop();
    expect(terms).toEqual(terms.map((_, i) => i + 1));
    expect(terms.length).toBeGreaterThanOrEqual(5);
  });
});

describe("runFire(): a platform's fire, delivered more than once", () => {
  const fire = new Date(Date.UTC(2026, 0, 1, 2));

  it("two deliveries of one fire at once, then a late third: it runs once", async () => {
    const store = new MemoryStore();
    const runs: number[] = [];
    const deliver = () =>
      runFire({
        store,
        name: "jobs/nightly",
        fire: fire.toISOString(),
        cron: "0 2 * * *",
        fn: async (ctx) => {
          runs.push(ctx.term);
          await new Promise((r) => setTimeout(r, 5));
          return "done";
        },
      });
    const results = await Promise.all([deliver(), deliver()]);
    expect(results.map((r) => r.status).sort()).toEqual(["ran", "skipped-held"]);
    expect(results.find((r) => r.status === "ran")).toMatchObject({ term: 1, value: "done", fire });
    expect(await deliver()).toEqual({ status: "skipped-done", fire });
    expect(runs).toEqual([1]);
    // The next night's fire runs; the one in between was never skipped.
    const next = await runFire({ store, name: "jobs/nightly", fire: fire.getTime() + 86_400_000, fn: () => 1 });
    expect(next).toMatchObject({ status: "ran", term: 2 });
  });

  it("a delivery whose invocation died mid-run: a retry within its lease skips; after it, the fire is reported missed, or rerun with onCrash", async () => {
    for (const onCrash of ["skip", "rerun"] as const) {
      const clock = new ManualClock({ wallStart: fire.getTime() });
      const store = new MemoryStore();
      const base = { store, name: "jobs/nightly", fire, lockAtMostFor: 60_000, clock, onCrash } as const;
      // The first invocation claims, then is frozen forever (its runtime killed it).
      void runFire({ ...base, fn: () => new Promise<never>(() => undefined) });
      await clock.advance(0);
      expect(await runFire({ ...base, fn: () => "again" })).toEqual({ status: "skipped-held", fire });
      await clock.advance(60_000 + 6000 + 1000 + 1); // lease (plus safety) and the skew bound
      const missed: Date[][] = [];
      const retry = await runFire({ ...base, fn: () => "again", on: { missed: (m) => missed.push(m.fires) } });
      if (onCrash === "skip") {
        expect(retry).toEqual({ status: "skipped-done", fire });
        expect(missed).toEqual([[fire]]);
      } else {
        expect(retry).toMatchObject({ status: "ran", term: 2, value: "again" });
        expect(missed).toEqual([]);
      }
    }
  });

  it("reads the fire where each platform puts it", async () => {
    const { fireFromCloudScheduler, fireFromEventBridge, fireFromScheduledController } = await import(
      "../src/schedule/index.js"
    );
    const iso = "2026-01-01T02:00:00Z";
    expect(fireFromEventBridge({ "detail-type": "Scheduled Event", time: iso })).toEqual(new Date(iso));
    expect(fireFromScheduledController({ scheduledTime: Date.parse(iso), cron: "0 2 * * *" })).toEqual(new Date(iso));
    expect(
      fireFromCloudScheduler(new Request("http://x/", { headers: { "X-CloudScheduler-ScheduleTime": iso } })),
    ).toEqual(new Date(iso));
    expect(fireFromCloudScheduler({ "x-cloudscheduler-scheduletime": iso })).toEqual(new Date(iso));
    for (const bad of [
      () => fireFromEventBridge({}),
      () => fireFromCloudScheduler({}),
      () => fireFromScheduledController({ scheduledTime: "x" }),
    ]) {
      expect(bad).toThrow(LeaseValidationError);
    }
  });
});

describe("adapters", () => {
  it("node-cron's RunCoordinator: one key per fire runs once across coordinators, the run's context is there to ask for, onComplete settles it", async () => {
    const store = new MemoryStore();
    const a = leaseholdRunCoordinator({ store, prefix: "jobs/", identity: "a" });
    const b = leaseholdRunCoordinator({ store, prefix: "jobs/", identity: "b" });
    const slot = new Date(Date.UTC(2026, 0, 1, 2));
    const key = `billing:${slot.toISOString()}`;
    const answers = await Promise.all([a.shouldRun(key, 30_000), b.shouldRun(key, 30_000)]);
    expect(answers.sort()).toEqual([false, true]);
    const winner = answers[0] ? a : b;
    const ctx = (winner === a ? a : b).context("billing", slot) ?? (winner === a ? b : a).context("billing", slot);
    expect(ctx).toMatchObject({ term: 1, fire: slot });
    expect(ctx?.stillLeader()).toBe(true);
    await a.onComplete(key);
    await b.onComplete(key);
    expect((await store.get("jobs/billing"))?.record).toMatchObject({
      holder: null,
      fire: { at: slot.getTime(), done: true },
    });
    // A late replica (its clock behind) asks for the same fire again: no.
    expect(await b.shouldRun(key, 30_000)).toBe(false);
    expect(await a.shouldRun(`billing:${new Date(slot.getTime() + 60_000).toISOString()}`, 30_000)).toBe(true);
    await expect(a.shouldRun("not a key", 1000)).rejects.toThrow(/task name/);
  });

  it("with node-cron 4.6.0 itself: two replicas' tasks (distributed: true, our coordinator) run each second's slot once, and the task reads its term", async () => {
    const store = new MemoryStore();
    const runs: Array<{ who: string; slot: string; term: number | undefined }> = [];
    const tasks = ["a", "b"].map((who) => {
      const coordinator: RunCoordinator = leaseholdRunCoordinator({ store, prefix: "jobs/", identity: who });
      const typed = coordinator as ReturnType<typeof leaseholdRunCoordinator>;
      return nodeCron.schedule(
        "* * * * * *",
        (ctx) => {
          runs.push({ who, slot: ctx.date.toISOString(), term: typed.context("tick", ctx.date)?.term });
        },
        { name: `tick`, distributed: true, runCoordinator: coordinator, distributedLease: 900 },
      );
    });
    // node-cron keeps its own timers on the real clock: let it fire for a few seconds.
    await new Promise((r) => setTimeout(r, 3500));
    await Promise.all(tasks.map((t) => t.destroy()));
    const slots = runs.map((r) => r.slot);
    expect(slots.length).toBeGreaterThanOrEqual(2);
    expect(new Set(slots).size).toBe(slots.length);
    const terms = runs.map((r) => r.term);
    expect(terms).toEqual(terms.map((_, i) => i + 1));
  });

  it("a croner job: the callback claims the fire croner triggered, on one replica", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 0, 1, 2, 0, 0, 4) });
    const store = new MemoryStore();
    const runs: Array<{ who: string; term: number; fire: string }> = [];
    const callbacks = ["a", "b"].map((who) =>
      cronerCallback({ store, name: "jobs/croner", identity: who, clock }, (ctx) => {
        runs.push({ who, term: ctx.term, fire: ctx.fire.toISOString() });
      }),
    );
    const cron = new Cron("0 2 * * *", { paused: true });
    // What croner hands its callback: the job, whose currentRun() is when it triggered (4 ms late).
    const self = Object.assign(Object.create(cron), { currentRun: () => new Date(clock.wallNow()) });
    await Promise.all(callbacks.map((cb) => cb(self)));
    expect(runs).toEqual([{ who: expect.any(String), term: 1, fire: "2026-01-01T02:00:00.000Z" }]);
  });
});

describe("the record's fire", () => {
  const record = (fire?: { at: number; done: boolean }) => ({
    name: "jobs/x",
    holder: null,
    term: 3,
    leaseMs: 1000,
    acquiredAt: 0,
    renewedAt: 0,
    metadata: {},
    writeId: "w",
    ...(fire ? { fire } : {}),
  });

  it("never goes back, is never dropped, and a settled fire is never reopened (the server's rule)", () => {
    const done = record({ at: 2000, done: true });
    expect(checkTermRules(done, record({ at: 1000, done: true }))?.rule).toBe("fire-rewound");
    expect(checkTermRules(done, record())?.rule).toBe("fire-rewound");
    expect(checkTermRules(done, record({ at: 2000, done: false }))?.rule).toBe("fire-reopened");
    expect(checkTermRules(done, record({ at: 3000, done: false }))).toBeUndefined();
    expect(checkTermRules(record({ at: 2000, done: false }), record({ at: 2000, done: false }))).toBeUndefined();
    expect(checkTermRules(record(), record({ at: 1, done: true }))).toBeUndefined();
  });

  it("the plan: held skips, a lagging fire is done, the earliest fire within maxLateMs is claimed, older ones are missed", () => {
    const cron = new CronSchedule(EVERY_SECOND);
    const at = Date.UTC(2026, 0, 1);
    const base = {
      cron,
      given: undefined,
      wokeFor: undefined,
      maxLateMs: 3000,
      missed: "skip",
      onCrash: "skip",
    } as const;
    const r = (fire: { at: number; done: boolean }, holder: string | null = null) => ({ ...record(fire), holder });
    expect(planFire({ ...base, record: r({ at, done: false }, "x"), holding: "held", wall: at + 10_000 })).toEqual({
      kind: "skip",
      why: "held",
    });
    expect(planFire({ ...base, record: r({ at, done: true }), holding: "free", wall: at + 500, wokeFor: at })).toEqual({
      kind: "skip",
      why: "done",
    });
    expect(planFire({ ...base, record: r({ at, done: true }), holding: "free", wall: at + 5_500 })).toEqual({
      kind: "claim",
      at: at + 3000,
      rerun: false,
      missed: [{ fires: [at + 1000, at + 2000], truncated: false, reason: "late" }],
    });
    expect(planFire({ ...base, record: r({ at, done: false }, "x"), holding: "expired", wall: at + 1_200 })).toEqual({
      kind: "claim",
      at: at + 1000,
      rerun: false,
      missed: [{ fires: [at], truncated: false, reason: "crashed" }],
    });
    expect(
      planFire({
        ...base,
        onCrash: "rerun",
        record: r({ at, done: false }, "x"),
        holding: "expired",
        wall: at + 1_200,
      }),
    ).toEqual({ kind: "claim", at, rerun: true, missed: [] });
    // A platform's fire at or before the record's: done; after it: claimed as given.
    expect(planFire({ ...base, record: r({ at, done: true }), holding: "free", wall: at, given: at })).toEqual({
      kind: "skip",
      why: "done",
    });
  });
});

describe("options", () => {
  const store = new MemoryStore();
  const fn = () => undefined;
  const issues = (o: unknown) => {
    try {
      schedule(o as ScheduleOptions);
    } catch (error) {
      if (isLeaseValidationError(error)) return error.issues.map((i) => i.path);
      throw error;
    }
    throw new Error("accepted");
  };

  it("names every bad field before anything starts", () => {
    expect(issues({ store, name: "jobs/x", cron: "61 * * * *", fn })).toEqual(["cron"]);
    expect(issues({ store, name: "jobs/x", cron: "* * * * *", timezone: "Mars/Base", fn })).toEqual(["timezone"]);
    expect(issues({ store, name: "jobs/x", cron: "0 0 30 2 *", fn })).toEqual(["cron"]);
    expect(issues({ store, name: "Jobs X", cron: "* * * * *", fn })).toEqual(["name"]);
    expect(issues({ store, name: "jobs/x", cron: "* * * * *" })).toEqual(["fn"]);
    expect(issues({ store, name: "jobs/x", cron: "* * * * *", fn, lockAtMostFor: 1000, lockAtLeastFor: 2000 })).toEqual(
      ["lockAtLeastFor"],
    );
    expect(issues({ store, name: "jobs/x", cron: "* * * * *", fn, lockAtMostFor: 5 })).toEqual(["lockAtMostFor"]);
    expect(issues({ store, name: "jobs/x", cron: "* * * * *", fn, missed: "later" })).toEqual(["missed"]);
    expect(issues({ store, name: "jobs/x", cron: "* * * * *", fn, lockAtMostfor: 1 })).toEqual(["lockAtMostfor"]);
  });
});

describe("leasehold cron: usage errors", () => {
  const cron = async (...flags: string[]) => {
    const said: string[] = [];
    const io = { env: {}, out: () => undefined, say: (line: string) => said.push(line) };
    const code = await runCli(["cron", "--store", "memory:", "--name", "jobs/x", ...flags, "--", "true"], io);
    return { code, said: said.join("\n") };
  };

  it("refuses a bad schedule, zone or duration before anything runs, naming the flag: exit 2", async () => {
    expect(await cron("--schedule", "61 * * * *")).toMatchObject({
      code: 2,
      said: expect.stringMatching(/--schedule: expected a cron line/),
    });
    expect(await cron("--schedule", "* * * * *", "--tz", "Mars/Base")).toMatchObject({
      code: 2,
      said: expect.stringMatching(/--tz: expected an IANA/),
    });
    // Commander refuses the flag's value itself (its message goes to stderr, naming the flag).
    expect((await cron("--schedule", "* * * * *", "--at-most", "5")).code).toBe(2);
    expect(await cron("--schedule", "* * * * *", "--at-most", "1m", "--at-least", "2m")).toMatchObject({
      code: 2,
      said: expect.stringMatching(/--at-least: expected at most lockAtMostFor/),
    });
    expect(await cron("--schedule", "* * * * *", "--missed", "later")).toMatchObject({ code: 2 });
  });
});

describe("metrics and costs", () => {
  it("renders the events as Prometheus counters, and a fire costs each replica one read and the winner two writes", async () => {
    const c = new Cluster();
    const metrics = new ScheduleMetrics();
    for (const id of ["a", "b", "c"]) metrics.track(c.start(id).job);
    await c.clock.advance(1500);
    c.shared.resetCounts();
    await c.clock.advance(10_000);
    await c.stopAll();
    // Ten fires: three reads each, two writes for the winner, and at most two writes that lost a race.
    expect(c.shared.counts.get).toBeGreaterThanOrEqual(30);
    expect(c.shared.counts.get).toBeLessThanOrEqual(30 + 2 * 10);
    expect(c.shared.written.length).toBeLessThanOrEqual(2 * 11);
    const text = metrics.render();
    expect(text).toMatch(/leasehold_schedule_ran_total\{job="jobs\/report",identity="[abc]",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/leasehold_schedule_skipped_total\{job="jobs\/report",identity="[abc]",why="held"\} [1-9]/);
  });
});
