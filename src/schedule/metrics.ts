/**
 * Prometheus metrics for scheduled jobs: the events every scheduler user watches (fires run,
 * skipped because held or done, missed by reason, runs that overran their window, store errors).
 * It only listens to the jobs' events, so it adds no store calls. Runtime-neutral: `render()`
 * returns the text; serve it however the process exposes metrics.
 */
import type { Listener } from "../elector/events.js";
import { exposition, family, type Labels, trackSeries } from "../metrics/prometheus.js";
import type { ScheduleEvents } from "./fire-job.js";

/** What is tracked: a `ScheduledJob`, or anything with a name, an identity and its events. */
export interface TrackedJob {
  readonly name: string;
  readonly identity: string;
  on<K extends keyof ScheduleEvents>(type: K, listener: Listener<ScheduleEvents[K]>): () => void;
}

interface Series {
  job: TrackedJob;
  ran: { ok: number; error: number };
  skippedHeld: number;
  skippedDone: number;
  missed: Map<string, number>;
  overran: number;
  errors: Map<string, number>;
  lastFire: number | undefined;
}

const labels = (j: TrackedJob): Labels => ({ job: j.name, identity: j.identity });

export class ScheduleMetrics {
  private readonly series = new Set<Series>();

  /** Starts counting `job`'s events; returns the function that stops. */
  track(job: TrackedJob): () => void {
    const s: Series = {
      job,
      ran: { ok: 0, error: 0 },
      skippedHeld: 0,
      skippedDone: 0,
      missed: new Map(),
      overran: 0,
      errors: new Map(),
      lastFire: undefined,
    };
    return trackSeries(this.series, s, () => [
      job.on("ran", ({ fire, error }) => {
        s.ran[error === undefined ? "ok" : "error"]++;
        s.lastFire = Math.max(s.lastFire ?? 0, fire.getTime());
      }),
      job.on("skipped-held", () => s.skippedHeld++),
      job.on("skipped-done", () => s.skippedDone++),
      job.on("missed", ({ fires, reason }) => s.missed.set(reason, (s.missed.get(reason) ?? 0) + fires.length)),
      job.on("overran", () => s.overran++),
      job.on("error", ({ during }) => s.errors.set(during, (s.errors.get(during) ?? 0) + 1)),
    ]);
  }

  render(): string {
    const all = [...this.series];
    return exposition([
      ...family(
        "leasehold_schedule_ran_total",
        "counter",
        "Runs this replica ended, by outcome (error: the job threw).",
        all.flatMap((s) =>
          (["ok", "error"] as const).map((outcome) => ({
            labels: { ...labels(s.job), outcome },
            value: s.ran[outcome],
          })),
        ),
      ),
      ...family(
        "leasehold_schedule_skipped_total",
        "counter",
        "Fires this replica woke for and did not run: held (a live run holds the job) or done (claimed elsewhere).",
        all.flatMap((s) => [
          { labels: { ...labels(s.job), why: "held" }, value: s.skippedHeld },
          { labels: { ...labels(s.job), why: "done" }, value: s.skippedDone },
        ]),
      ),
      ...family(
        "leasehold_schedule_missed_total",
        "counter",
        "Fires the job did not run, counted by the replica that settled them, by reason (crashed, late, held).",
        all.flatMap((s) => [...s.missed].map(([reason, n]) => ({ labels: { ...labels(s.job), reason }, value: n }))),
      ),
      ...family(
        "leasehold_schedule_overran_total",
        "counter",
        "Runs still going when their window (lockAtMostFor) closed.",
        all.map((s) => ({ labels: labels(s.job), value: s.overran })),
      ),
      ...family(
        "leasehold_schedule_store_errors_total",
        "counter",
        "Store calls that failed, by what the job was doing.",
        all.flatMap((s) => [...s.errors].map(([during, n]) => ({ labels: { ...labels(s.job), during }, value: n }))),
      ),
      ...family(
        "leasehold_schedule_last_run_fire_seconds",
        "gauge",
        "The fire (epoch seconds) of the latest run this replica ended.",
        all
          .filter((s) => s.lastFire !== undefined)
          .map((s) => ({ labels: labels(s.job), value: (s.lastFire ?? 0) / 1000 })),
      ),
    ]);
  }
}
