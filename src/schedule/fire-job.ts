/**
 * One scheduled job's record, as one replica sees and writes it (docs/schedule.md): the engine
 * under `schedule()`, `runFire()` and the node-cron and croner adapters. It decides nothing about
 * *which* fire runs (./fire-plan.ts does); it reads, judges the holder, and writes:
 *
 * - **Judge** a held record by observed time (docs/design.md §3): expired once its revision has
 *   stayed the same for its `leaseMs` on this clock since this replica first read it; or, when
 *   `maxSkewMs` is set, at once when its own stamps say so (`renewedAt + leaseMs + maxSkewMs`).
 * - **Claim** a fire: one compare-and-swap writing the next term, this replica as holder and
 *   `fire: { at, done: false }`, through the one write path (`CasWriter`: an ambiguous write is
 *   settled by its `writeId`). The run's window is `sentAt + lockAtMostFor` on the monotonic
 *   clock; a watchdog aborts the run's signal there, and `stillLeader()` reads the clock.
 * - **Finish** a run: one compare-and-swap on the claim's revision releasing the job (term kept)
 *   with `fire: { at, done: true }`, where `at` also covers the fires that came due while the run
 *   held the job (and within `lockAtLeastFor` of its start): those are reported missed, `held`.
 *   Fires already due when the run began are not covered (without `lockAtLeastFor`): they run
 *   next, in order.
 * - **Settle** fires without running them (late ones, a crashed one): the same release write.
 *
 * Every fire that does not run is reported (`missed`) by the replica whose write settled it, so
 * exactly once. Store cost per fire: each replica one read; the winner two writes (claim, finish);
 * a replica that races for the same fire one conditional write that fails (plus one read on a
 * store whose conflicts do not carry the current record). Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter, type WriteOutcome } from "../elector/cas.js";
import { Emitter, type Listener } from "../elector/events.js";
import { LeadershipLostError } from "../errors.js";
import { type LeaseRecord, newWriteId, type Stored } from "../lease.js";
import type { CronSchedule } from "./cron.js";
import { type FirePlan, type Holding, listFires, type Missed, type MissReason, planFire } from "./fire-plan.js";
import type { ResolvedJob } from "./options.js";

/** What a run's function is given. */
export interface FireContext {
  /** The fire this run is for: its scheduled instant (the same on every replica). */
  fire: Date;
  /** The fencing token of this run: pass it to every system the run writes to. */
  term: number;
  /** Aborts when the run's window closes (`lockAtMostFor` after the claim was sent) or the job stops. */
  signal: AbortSignal;
  /**
   * True while the run's window is open, read from the monotonic clock at the moment of asking:
   * call it right before each side effect. A process paused past its window sees `false` on waking.
   */
  stillLeader(): boolean;
  /** Throws `LeadershipLostError` unless `stillLeader()`. */
  assertLeader(): void;
  /** True when this run repeats a fire whose earlier runner vanished (`onCrash: "rerun"`). */
  rerun: boolean;
  /** The monotonic instant (the job clock's `now()`) at which the window closes. */
  deadline: number;
}

export interface ScheduleEvents {
  /** A run of this replica ended (its function returned or threw; `overran`: after its window closed). */
  ran: { fire: Date; term: number; durationMs: number; overran: boolean; error?: unknown };
  /** This replica's fire was not run here: a live run holds the job. */
  "skipped-held": { fire: Date; holder: string | null; term: number };
  /** This replica's fire was not run here: it is already claimed or settled (`last`: the record's fire). */
  "skipped-done": { fire: Date; last: Date };
  /** Fires the job did not run, reported once, by the replica whose write settled them. */
  missed: { fires: Date[]; truncated: boolean; reason: MissReason };
  /** A run of this replica was still going when its window closed: its signal aborted. */
  overran: { fire: Date; term: number };
  /** A store call failed; the fire may be taken by another replica, or by a later look of this one. */
  error: { error: unknown; during: "read" | "claim" | "finish" | "settle" };
}

/** What one look at the record came to. */
export type Attempt =
  | { kind: "claimed"; run: Run }
  | { kind: "skipped"; why: "held" | "done"; stored: Stored | null }
  | { kind: "settled" }
  | { kind: "idle"; stored: Stored | null }
  | { kind: "failed"; error: unknown };

export interface LookOptions {
  /** A platform's fire time; without it the plan picks the fire (the scheduler). */
  given?: number;
  /** The scheduler's fire this look is for, when its timer fired. */
  wokeFor?: number;
  maxLateMs: number;
  missed: "skip" | "run-latest";
  /** Asked right before a claim is written: false (a stop began) leaves the fire to the others. */
  mayClaim?: () => boolean;
}

/** Finish writes tried at most this many times, this far apart, before the run counts as crashed. */
const FINISH_ATTEMPTS = 3;
const FINISH_RETRY_MS = 500;

/** A claimed fire, from its claim to its finish. */
export class Run {
  readonly context: FireContext;
  /** Monotonic: when the claim was sent, and when the window closes. */
  readonly sentAt: number;
  readonly until: number;
  overran = false;
  private readonly controller = new AbortController();
  private readonly watchdog = new AbortController();

  constructor(
    readonly stored: Stored,
    readonly fire: number,
    readonly rerun: boolean,
    /** The claimer's wall clock when it wrote the claim. */
    readonly claimWall: number,
    sentAt: number,
    lockAtMostFor: number,
    private readonly clock: Clock,
    onOverran: (run: Run) => void,
  ) {
    this.sentAt = sentAt;
    this.until = sentAt + lockAtMostFor;
    const term = stored.record.term;
    const signal = this.controller.signal;
    const stillLeader = () => !signal.aborted && this.clock.now() < this.until;
    this.context = {
      fire: new Date(fire),
      term,
      signal,
      stillLeader,
      assertLeader: () => {
        if (!stillLeader()) throw new LeadershipLostError(term, this.overran ? "expired" : "stopping");
      },
      rerun,
      deadline: this.until,
    };
    void this.clock.sleep(this.until - this.clock.now(), this.watchdog.signal).then(() => {
      if (this.watchdog.signal.aborted) return;
      this.overran = true;
      this.controller.abort(new LeadershipLostError(term, "expired"));
      onOverran(this);
    });
  }

  get term(): number {
    return this.stored.record.term;
  }

  /** The job is stopping: the run's signal aborts now (the run still ends by itself). */
  stop(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new LeadershipLostError(this.term, "stopping"));
  }

  /** The run's function has returned: the watchdog has nothing left to guard. */
  ended(): void {
    this.watchdog.abort();
  }
}

export class FireJob {
  private readonly events = new Emitter<ScheduleEvents>();
  private readonly writer: CasWriter;
  /** The record's revision as first read by this replica, and when (monotonic): observed time. */
  private known: { revision: string; at: number } | undefined;
  private active: Run | undefined;

  constructor(
    readonly s: ResolvedJob,
    readonly cron: CronSchedule | undefined,
  ) {
    this.writer = new CasWriter({ store: s.store, name: s.name, clock: s.clock, callTimeoutMs: s.callTimeoutMs });
  }

  on<K extends keyof ScheduleEvents>(type: K, listener: Listener<ScheduleEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /** This replica's run under way, if any (one at a time). */
  get running(): Run | undefined {
    return this.active;
  }

  /**
   * When this replica may count `stored` (held by someone else) expired: the monotonic instant,
   * `-Infinity` when its stamps already say so (with `maxSkewMs`), `Infinity` when never read.
   */
  takeoverAt(stored: Stored): number {
    const r = stored.record;
    const skew = this.s.maxSkewMs;
    if (skew !== undefined && r.renewedAt + r.leaseMs + skew < this.s.clock.wallNow()) return -Infinity;
    if (this.known?.revision === stored.revision) return this.known.at + r.leaseMs;
    return Infinity;
  }

  /** One look: read, plan, then claim, settle or skip. Never throws: a failed store call is an `error` event. */
  async look(o: LookOptions): Promise<Attempt> {
    let stored: Stored | null;
    try {
      stored = await this.writer.read();
    } catch (error) {
      this.events.emit("error", { error, during: "read" });
      return { kind: "failed", error };
    }
    this.observe(stored);
    const plan = planFire({
      record: stored?.record,
      holding: this.holding(stored),
      wall: this.s.clock.wallNow(),
      cron: this.cron,
      given: o.given,
      wokeFor: o.wokeFor,
      maxLateMs: o.maxLateMs,
      missed: o.missed,
      onCrash: this.s.onCrash,
    });
    const fire = o.given ?? o.wokeFor;
    switch (plan.kind) {
      case "skip":
        if (fire !== undefined) this.skipped(fire, plan.why, stored);
        return { kind: "skipped", why: plan.why, stored };
      case "idle":
        return { kind: "idle", stored };
      case "settle":
        return this.settle(stored, plan);
      case "claim":
        if (o.mayClaim && !o.mayClaim()) return { kind: "idle", stored };
        return this.claim(stored, plan, fire);
    }
  }

  /**
   * Runs `fn` for `run`, then finishes it. A claim whose window had already closed when its write
   * came back (a store slower than `lockAtMostFor`) does not call `fn`: the fire ends unrun.
   */
  async execute<T>(
    run: Run,
    fn: (context: FireContext) => Promise<T> | T,
  ): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
    let result: { ok: true; value: T } | { ok: false; error: unknown };
    if (!run.context.stillLeader()) {
      result = { ok: false, error: new LeadershipLostError(run.term, "expired") };
    } else {
      try {
        result = { ok: true, value: await fn(run.context) };
      } catch (error) {
        result = { ok: false, error };
      }
    }
    await this.finish(run, result.ok ? undefined : result.error);
    return result;
  }

  /**
   * Ends `run` (its function returned, or threw `error`): releases the job with the fire done,
   * covering the fires that came due while it held the job. A finish that cannot be written is
   * retried a few times; after that the run counts as crashed for the other replicas.
   */
  async finish(run: Run, error?: unknown): Promise<void> {
    run.ended();
    const durationMs = Math.max(0, this.s.clock.now() - run.sentAt);
    const wall = this.s.clock.wallNow();
    const { at, skipped } = this.covered(run, wall);
    const next: LeaseRecord = {
      ...run.stored.record,
      holder: null,
      renewedAt: wall,
      writeId: newWriteId(),
      fire: { at, done: true },
    };
    let outcome: Exclude<WriteOutcome, { kind: "unknown" }> | undefined;
    for (let attempt = 1; attempt <= FINISH_ATTEMPTS && !outcome; attempt++) {
      try {
        outcome = await this.writer.writeSettled(next, run.stored.revision);
      } catch (failure) {
        this.events.emit("error", { error: failure, during: "finish" });
        if (attempt < FINISH_ATTEMPTS) await this.s.clock.sleep(FINISH_RETRY_MS);
      }
    }
    if (outcome?.kind === "applied") {
      this.observe(outcome.stored);
      for (const m of skipped) this.missed(m.fires, m.truncated, m.reason);
    } else if (outcome?.kind === "lost") {
      this.observe(outcome.current);
    } else {
      this.writer.forget();
    }
    if (this.active === run) this.active = undefined;
    this.events.emit("ran", {
      fire: new Date(run.fire),
      term: run.term,
      durationMs,
      overran: run.overran,
      ...(error === undefined ? {} : { error }),
    });
  }

  /**
   * The fires `run`'s finish settles without running them: those that came due while it held the
   * job (by this clock) and within `lockAtLeastFor` of its start, `held`; with `lockAtLeastFor`,
   * also those already due when it started, `late`. Without it, fires already due when the run
   * began (a catch-up after a takeover, or a clock ahead of its peers') are not cut short: the
   * record stays at the run's fire, and they run next, in order, while within `maxLateMs`.
   */
  private covered(run: Run, wall: number): { at: number; skipped: Missed[] } {
    const none = { at: run.fire, skipped: [] };
    const until = Math.max(wall, run.claimWall + this.s.lockAtLeastFor);
    if (!this.cron || until <= run.fire) return none;
    const list = listFires(this.cron, run.fire, until);
    const first = list.fires[0];
    if (first === undefined || (this.s.lockAtLeastFor === 0 && first <= run.claimWall)) return none;
    const at = list.truncated ? (this.cron.latest(until) ?? run.fire) : list.fires.at(-1)!;
    const late = list.fires.filter((f) => f <= run.claimWall);
    const held = list.fires.filter((f) => f > run.claimWall);
    const skipped: Missed[] = [];
    if (late.length > 0) skipped.push({ fires: late, truncated: false, reason: "late" });
    if (held.length > 0) skipped.push({ fires: held, truncated: list.truncated, reason: "held" });
    return { at, skipped };
  }

  private holding(stored: Stored | null): Holding {
    const r = stored?.record;
    if (!stored || !r || r.holder === null) return "free";
    if (this.active?.stored.revision === stored.revision) return "mine";
    return this.s.clock.now() >= this.takeoverAt(stored) ? "expired" : "held";
  }

  /** A record read, pushed or found in a conflict: a new revision starts its observed time now. */
  private observe(stored: Stored | null | undefined): void {
    if (stored === undefined) return;
    if (stored === null) this.known = undefined;
    else if (this.known?.revision !== stored.revision)
      this.known = { revision: stored.revision, at: this.s.clock.now() };
  }

  private async claim(
    stored: Stored | null,
    plan: Extract<FirePlan, { kind: "claim" }>,
    fire: number | undefined,
  ): Promise<Attempt> {
    const wall = this.s.clock.wallNow();
    const next: LeaseRecord = {
      name: this.s.name,
      holder: this.s.identity,
      term: (stored?.record.term ?? 0) + 1,
      leaseMs: this.s.leaseMs,
      acquiredAt: wall,
      renewedAt: wall,
      metadata: this.s.metadata,
      writeId: newWriteId(),
      fire: { at: plan.at, done: false },
    };
    let outcome: Exclude<WriteOutcome, { kind: "unknown" }>;
    try {
      outcome = await this.writer.writeSettled(next, stored?.revision ?? null);
    } catch (error) {
      // Unknown even after a read: if it landed, the record shows a run nobody does, which the
      // replicas count as crashed once its lease has run out by their clocks.
      this.writer.forget();
      this.events.emit("error", { error, during: "claim" });
      return { kind: "failed", error };
    }
    if (outcome.kind === "lost") {
      // Another replica's write came first: it claimed or settled the fire.
      this.observe(outcome.current);
      const current = outcome.current ?? null;
      const why = current?.record.holder ? "held" : "done";
      if (fire !== undefined && current) this.skipped(fire, why, current);
      return { kind: "skipped", why, stored: current };
    }
    for (const m of plan.missed) this.missed(m.fires, m.truncated, m.reason);
    const run = new Run(
      outcome.stored,
      plan.at,
      plan.rerun,
      wall,
      outcome.sentAt,
      this.s.lockAtMostFor,
      this.s.clock,
      (r) => this.events.emit("overran", { fire: new Date(r.fire), term: r.term }),
    );
    this.active = run;
    this.observe(outcome.stored);
    return { kind: "claimed", run };
  }

  private async settle(stored: Stored | null, plan: Extract<FirePlan, { kind: "settle" }>): Promise<Attempt> {
    const wall = this.s.clock.wallNow();
    const fire = { at: plan.at, done: true };
    const r = stored?.record;
    const next: LeaseRecord = r
      ? { ...r, holder: null, renewedAt: wall, writeId: newWriteId(), fire }
      : {
          name: this.s.name,
          holder: null,
          term: 0,
          leaseMs: this.s.leaseMs,
          acquiredAt: wall,
          renewedAt: wall,
          metadata: this.s.metadata,
          writeId: newWriteId(),
          fire,
        };
    try {
      const outcome = await this.writer.writeSettled(next, stored?.revision ?? null);
      if (outcome.kind === "lost") {
        this.observe(outcome.current);
        return { kind: "idle", stored: outcome.current ?? null };
      }
      this.observe(outcome.stored);
    } catch (error) {
      this.writer.forget();
      this.events.emit("error", { error, during: "settle" });
      return { kind: "failed", error };
    }
    for (const m of plan.missed) this.missed(m.fires, m.truncated, m.reason);
    return { kind: "settled" };
  }

  private skipped(fire: number, why: "held" | "done", stored: Stored | null): void {
    const r = stored?.record;
    if (why === "held") {
      this.events.emit("skipped-held", { fire: new Date(fire), holder: r?.holder ?? null, term: r?.term ?? 0 });
    } else {
      this.events.emit("skipped-done", { fire: new Date(fire), last: new Date(r?.fire?.at ?? fire) });
    }
  }

  private missed(fires: number[], truncated: boolean, reason: MissReason): void {
    this.events.emit("missed", { fires: fires.map((f) => new Date(f)), truncated, reason });
  }
}
