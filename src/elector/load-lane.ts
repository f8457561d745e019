/**
 * Renewals first (docs/design.md §4): the lane decides when a follower's store calls may go out.
 * A leader's renewal never asks it, so it never waits behind a poll, a takeover or another lease's
 * follower. Under load the lane holds the followers back instead:
 *
 * - The loop is *late* when the p99 of its recent timer lateness (`lateness.ts`) exceeds `lateMs`.
 * - On time, a call is admitted at once (while fewer than `maxInFlight` follower calls are out).
 * - Late, a **poll** waits until the loop is on time again, or until a jittered instant in
 *   [`maxPollDelayMs` / 2, `maxPollDelayMs`]: a poll skipped or delayed costs only early notice of
 *   a release, never safety (observed time keeps counting from the revision already seen).
 * - Late, an **acquisition** waits until the loop is on time, or a jittered instant in
 *   [`maxAcquireDelayMs` / 2, `maxAcquireDelayMs`]; takeovers are spread, not bunched.
 * - At most `maxInFlight` follower calls are out process-wide; acquisitions queue ahead of polls.
 *   Polls never exceed it. An acquisition that has waited its full `maxAcquireDelayMs` goes out
 *   even over it, so the lane delays a takeover by at most `maxAcquireDelayMs`, whatever the load.
 *
 * Every admission returns a release function to call once the call has settled (`.finally`): it
 * frees the call's place among those in flight. Runtime-neutral.
 */
import { z } from "zod";
import { type Clock, systemClock } from "../clock.js";
import { LeaseValidationError } from "../errors.js";
import { zodIssues } from "../lease.js";
import { type Lane, type LaneKind, type LaneRelease, openLane } from "./lane.js";
import { LatenessSampler } from "./lateness.js";
import { ms } from "./options.js";

export type { Lane, LaneKind, LaneRelease } from "./lane.js";
export { openLane } from "./lane.js";

type PerKind = Record<LaneKind, number>;

export interface LaneStats {
  /** Calls admitted. */
  admitted: PerKind;
  /** Calls held back because the loop was late (a poll held back is a poll shed). */
  shed: PerKind;
  /** Calls held back because `maxInFlight` follower calls were out. */
  queued: PerKind;
  /** Calls let through at their bound while the loop was still late. */
  overdue: PerKind;
  /** Milliseconds calls spent waiting, summed. */
  waitedMs: PerKind;
  /** Follower calls out now. */
  inFlight: number;
  /** Calls waiting now. */
  waiting: number;
  /** The p99 of the event loop's recent lateness, ms (0 while nothing asks). */
  latenessMs: number;
  /** The loop counts as late now. */
  late: boolean;
}

/** A lane that can report what it did (every `LoadLane`); metrics render it. */
export interface MeasuredLane extends Lane {
  stats(): LaneStats;
}

export function isMeasuredLane(lane: Lane): lane is MeasuredLane {
  return typeof (lane as Partial<MeasuredLane>).stats === "function";
}

const optionsSchema = z.strictObject(
  {
    maxInFlight: z
      .number({ error: "expected a whole number of calls" })
      .int({ error: "expected a whole number of calls" })
      .min(1, { error: "expected at least 1" })
      .max(100_000, { error: "expected at most 100000" })
      .default(32),
    lateMs: ms("the lateness bound").positive({ error: "expected more than 0 ms" }).default(100),
    maxPollDelayMs: ms("the longest a poll waits").default(2000),
    maxAcquireDelayMs: ms("the longest an acquisition waits").default(1000),
    sampleMs: ms("the sampling interval").min(1, { error: "expected at least 1 ms" }).default(100),
    windowMs: ms("the lateness window").positive({ error: "expected more than 0 ms" }).default(3000),
    idleMs: ms("the idle time before sampling stops").default(30_000),
    clock: z
      .custom<Clock>((c) => typeof c === "object" && c !== null && typeof (c as Clock).now === "function", {
        error: "expected a Clock (an object with now, wallNow and sleep)",
      })
      .optional(),
    random: z
      .custom<() => number>((r) => typeof r === "function", { error: "expected a function returning [0, 1)" })
      .optional(),
  },
  { error: "expected an options object" },
);

export type LoadLaneOptions = z.input<typeof optionsSchema>;

interface Waiter {
  kind: LaneKind;
  since: number;
  /** Held back by a late loop; ready from here whatever the loop. */
  releaseAt: number;
  /** From here an acquisition goes out even over `maxInFlight`. */
  deadline: number;
  shed: boolean;
  queued: boolean;
  resolve: (release: LaneRelease) => void;
  /** Cancels its timers once it is admitted or given up. */
  timers: AbortController;
}

const zero = (): PerKind => ({ poll: 0, acquire: 0 });
const noop: LaneRelease = () => undefined;

export class LoadLane implements MeasuredLane {
  readonly maxInFlight: number;
  readonly lateMs: number;
  readonly maxPollDelayMs: number;
  readonly maxAcquireDelayMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly lateness: LatenessSampler;
  /** Held back by a late loop, in arrival order. */
  private readonly held = new Set<Waiter>();
  /** Free to go once a place among the calls in flight is free: acquisitions first, each in arrival order. */
  private readonly ready: Record<LaneKind, Waiter[]> = { acquire: [], poll: [] };
  private inFlight = 0;
  private readonly counts = { admitted: zero(), shed: zero(), queued: zero(), overdue: zero(), waitedMs: zero() };

  constructor(options: LoadLaneOptions = {}) {
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) throw new LeaseValidationError("lane options", zodIssues(parsed.error));
    const o = parsed.data;
    this.maxInFlight = o.maxInFlight;
    this.lateMs = o.lateMs;
    this.maxPollDelayMs = o.maxPollDelayMs;
    this.maxAcquireDelayMs = o.maxAcquireDelayMs;
    this.clock = o.clock ?? systemClock;
    this.random = o.random ?? Math.random;
    this.lateness = new LatenessSampler({
      clock: this.clock,
      sampleMs: o.sampleMs,
      windowMs: o.windowMs,
      idleMs: o.idleMs,
    });
    this.lateness.onSample = () => {
      if (!this.late) for (const w of this.held) this.makeReady(w);
      this.pump();
    };
  }

  /** The loop counts as late now. */
  get late(): boolean {
    return this.lateness.latenessMs > this.lateMs;
  }

  admit(kind: LaneKind, signal?: AbortSignal): Promise<LaneRelease> {
    if (signal?.aborted) return Promise.resolve(noop);
    this.lateness.touch();
    const since = this.clock.now();
    const bound = kind === "poll" ? this.maxPollDelayMs : this.maxAcquireDelayMs;
    return new Promise<LaneRelease>((resolve) => {
      const w: Waiter = {
        kind,
        since,
        releaseAt: since + bound * (0.5 + 0.5 * this.random()),
        deadline: since + bound,
        shed: this.late,
        queued: false,
        resolve,
        timers: new AbortController(),
      };
      if (w.shed) {
        this.held.add(w);
        void this.at(w, w.releaseAt, () => this.makeReady(w));
      } else {
        this.pushReady(w);
      }
      this.pump();
      if (w.timers.signal.aborted) return; // admitted at once
      if (kind === "acquire") void this.at(w, w.deadline, () => this.overdue(w));
      if (!signal) return;
      const giveUp = () => this.giveUp(w);
      signal.addEventListener("abort", giveUp, { once: true });
      // A long-lived signal (an elector's whole campaign) must not collect one listener per call.
      w.timers.signal.addEventListener("abort", () => signal.removeEventListener("abort", giveUp), { once: true });
    });
  }

  stats(): LaneStats {
    const copy = (p: PerKind): PerKind => ({ ...p });
    return {
      admitted: copy(this.counts.admitted),
      shed: copy(this.counts.shed),
      queued: copy(this.counts.queued),
      overdue: copy(this.counts.overdue),
      waitedMs: copy(this.counts.waitedMs),
      inFlight: this.inFlight,
      waiting: this.held.size + this.ready.acquire.length + this.ready.poll.length,
      latenessMs: this.lateness.latenessMs,
      late: this.late,
    };
  }

  private async at(w: Waiter, at: number, then: () => void): Promise<void> {
    await this.clock.sleep(at - this.clock.now(), w.timers.signal);
    if (!w.timers.signal.aborted) then();
  }

  private makeReady(w: Waiter): void {
    if (!this.held.delete(w)) return;
    this.pushReady(w);
    this.pump();
  }

  /** An acquisition that has waited its whole bound goes out, over `maxInFlight` if need be. */
  private overdue(w: Waiter): void {
    const queue = this.ready[w.kind];
    const i = queue.indexOf(w);
    if (i < 0) return;
    queue.splice(i, 1);
    this.grant(w);
  }

  private giveUp(w: Waiter): void {
    if (w.timers.signal.aborted) return;
    this.held.delete(w);
    const queue = this.ready[w.kind];
    const i = queue.indexOf(w);
    if (i >= 0) queue.splice(i, 1);
    w.timers.abort();
    w.resolve(noop);
  }

  /** Admits what is ready while places are free: acquisitions first. */
  private pump(): void {
    while (this.inFlight < this.maxInFlight) {
      const w = this.ready.acquire.shift() ?? this.ready.poll.shift();
      if (!w) return;
      this.grant(w);
    }
  }

  /** Queues `w` for a place; it counts as queued when the places free now go to others first. */
  private pushReady(w: Waiter): void {
    const ahead = this.ready.acquire.length + (w.kind === "poll" ? this.ready.poll.length : 0);
    w.queued = this.inFlight + ahead >= this.maxInFlight;
    this.ready[w.kind].push(w);
  }

  private grant(w: Waiter): void {
    w.timers.abort();
    const c = this.counts;
    c.admitted[w.kind]++;
    if (w.shed) c.shed[w.kind]++;
    if (w.queued) c.queued[w.kind]++;
    if (w.shed && this.late) c.overdue[w.kind]++;
    c.waitedMs[w.kind] += this.clock.now() - w.since;
    this.inFlight++;
    let released = false;
    w.resolve(() => {
      if (released) return;
      released = true;
      this.inFlight--;
      this.pump();
    });
  }
}

let shared: LoadLane | undefined;

/** A candidate's lane when it is given none: the process's on the system clock, `openLane` on another. */
export function defaultLane(clock: Clock): Lane {
  return clock === systemClock ? processLane() : openLane;
}

/** The process's lane, shared by every elector on the system clock that is not given its own. */
export function processLane(): LoadLane {
  shared ??= new LoadLane();
  return shared;
}
