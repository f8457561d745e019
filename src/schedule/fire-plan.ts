/**
 * Which fire a replica claims when it looks at the job's record (docs/schedule.md, "Which fire
 * runs"): a pure function of the record, how this replica judges its holder, its wall clock and
 * the cron line, so every entry (the scheduler, a serverless trigger, node-cron's coordinator)
 * decides by one rule and the rule is tested on its own. Runtime-neutral.
 *
 * - A live run holds the job: skip, never wait.
 * - The record's `fire` is the latest fire claimed or settled; nothing at or before it runs
 *   again (a lagging clock, a restart or a duplicated delivery finds it done).
 * - A fire left unfinished by a runner that is gone is reported missed (`crashed`), or claimed
 *   again under the next term with `onCrash: "rerun"` (at least once, fenced by the new term).
 * - The scheduler claims the *earliest* fire after the record's that is due by its clock and at
 *   most `maxLateMs` late: a replica whose clock runs ahead then runs the next fire early rather
 *   than skipping the ones its peers would still run on time, and one that took over after a gap
 *   catches up in order. Older fires are missed (`late`); with `missed: "run-latest"` the latest of
 *   them runs once when nothing newer is due.
 * - A platform's own fire time (a serverless trigger) is claimed as given when it is after the
 *   record's; with a cron line, the fires skipped in between are reported missed.
 */
import type { LeaseRecord } from "../lease.js";
import { type CronSchedule, MAX_LISTED_FIRES } from "./cron.js";

/** How this replica sees the job's holder right now. */
export type Holding =
  /** Nobody holds the job. */
  | "free"
  /** This replica's own run, still under way. */
  | "mine"
  /** Another runner's, not yet expired by this replica's rules (observed time, or stamps). */
  | "held"
  /** Another runner's, expired: its runner is gone or past its window. */
  | "expired";

/** Why fires did not run. */
export type MissReason =
  /** Started, but its runner vanished (crashed, paused past its window, cut off) before finishing. */
  | "crashed"
  /** No replica started it within `maxLateMs` of its time (all down, or all busy). */
  | "late"
  /** It came due while a run held the job, or within `lockAtLeastFor` of a run's start. */
  | "held";

export interface Missed {
  /** The fires, ascending (wall-clock ms); at most MAX_LISTED_FIRES of them. */
  fires: number[];
  /** More fires were missed than are listed. */
  truncated: boolean;
  reason: MissReason;
}

export type FirePlan =
  /** The job is held by a live run (`held`), or the fire is already claimed or settled (`done`). */
  | { kind: "skip"; why: "held" | "done" }
  /** Nothing is due (a scheduler's own check between fires). */
  | { kind: "idle" }
  /** Write the next term with this fire; `missed` are settled by the same write. */
  | { kind: "claim"; at: number; rerun: boolean; missed: Missed[] }
  /** Nothing to run, but fires to report: move the record's fire to `at` (done), reporting `missed`. */
  | { kind: "settle"; at: number; missed: Missed[] };

export interface PlanInput {
  record: LeaseRecord | undefined;
  holding: Holding;
  /** This replica's wall clock (ms). */
  wall: number;
  /** The job's cron line; without one (a bare platform trigger) fires in between cannot be named. */
  cron: CronSchedule | undefined;
  /** A platform's fire time; `undefined` for the scheduler, which picks the fire itself. */
  given: number | undefined;
  /** The scheduler's fire that this look was for (when its timer fired), for the skip events. */
  wokeFor: number | undefined;
  maxLateMs: number;
  missed: "skip" | "run-latest";
  onCrash: "skip" | "rerun";
}

/** The fires of `cron` in (`after`, `upto`], listed up to MAX_LISTED_FIRES. */
export function listFires(cron: CronSchedule, after: number, upto: number): { fires: number[]; truncated: boolean } {
  const fires = cron.between(after, upto, MAX_LISTED_FIRES);
  const last = fires.at(-1);
  const more = last !== undefined && fires.length === MAX_LISTED_FIRES && (cron.next(last) ?? Infinity) <= upto;
  return { fires, truncated: more };
}

export function planFire(p: PlanInput): FirePlan {
  if (p.holding === "held" || p.holding === "mine") return { kind: "skip", why: "held" };
  const last = p.record?.fire;
  const missed: Missed[] = [];
  // A fire claimed but never settled, whose runner is gone (the record is free or expired).
  if (last && !last.done) {
    if (p.onCrash === "rerun") return { kind: "claim", at: last.at, rerun: true, missed };
    missed.push({ fires: [last.at], truncated: false, reason: "crashed" });
  }
  const after = last?.at;
  if (p.given !== undefined) return planGiven(p, p.given, after, missed);
  if (after === undefined || !p.cron) {
    // A job without history: its first fire is the one this replica woke for.
    if (p.wokeFor === undefined) return { kind: "idle" };
    if (p.wall - p.wokeFor <= p.maxLateMs || p.missed === "run-latest") {
      return { kind: "claim", at: p.wokeFor, rerun: false, missed };
    }
    missed.push({ fires: [p.wokeFor], truncated: false, reason: "late" });
    return { kind: "settle", at: p.wokeFor, missed };
  }
  const lateBefore = p.wall - p.maxLateMs;
  const stale = after < lateBefore ? listFires(p.cron, after, lateBefore) : { fires: [], truncated: false };
  const fresh = p.cron.between(Math.max(after, lateBefore), p.wall, 1);
  const target = fresh[0];
  if (target !== undefined) {
    if (stale.fires.length > 0) missed.push({ ...stale, reason: "late" });
    return { kind: "claim", at: target, rerun: false, missed };
  }
  if (stale.fires.length > 0) {
    const latest = stale.truncated ? (p.cron.latest(lateBefore) ?? after) : stale.fires.at(-1)!;
    if (p.missed === "run-latest") {
      const before = stale.fires.filter((f) => f < latest);
      if (before.length > 0) missed.push({ fires: before, truncated: stale.truncated, reason: "late" });
      return { kind: "claim", at: latest, rerun: false, missed };
    }
    missed.push({ ...stale, reason: "late" });
    return { kind: "settle", at: latest, missed };
  }
  // Nothing due: report a crashed fire now (once, by the write), or there is nothing to do.
  if (missed.length > 0) return { kind: "settle", at: after, missed };
  return p.wokeFor === undefined ? { kind: "idle" } : { kind: "skip", why: "done" };
}

/** A platform's fire: run it unless the record is already at or past it. */
function planGiven(p: PlanInput, given: number, after: number | undefined, missed: Missed[]): FirePlan {
  if (after !== undefined && given <= after) {
    return missed.length > 0 ? { kind: "settle", at: after, missed } : { kind: "skip", why: "done" };
  }
  if (after !== undefined && p.cron) {
    const skipped = listFires(p.cron, after, given - 1);
    if (skipped.fires.length > 0) missed.push({ ...skipped, reason: "late" });
  }
  return { kind: "claim", at: given, rerun: false, missed };
}
