/**
 * Prometheus metrics for electors, the four every user of a leader-election library ends up
 * asking for (docs/design.md §7): is this candidate leader, how often leadership changed hands,
 * how many renewals failed, and how long since the last successful renewal. It only listens to
 * the elector's events, so it adds no store calls. Runtime-neutral: render() returns the text,
 * serve it however your process exposes metrics.
 */
import { type Clock, systemClock } from "../clock.js";
import type { Lane } from "../elector/lane.js";
import { isMeasuredLane, type MeasuredLane } from "../elector/load-lane.js";
import type { Candidate } from "../elector/types.js";
import { renderLaneMetrics } from "./lane.js";
import { exposition, family, type Labels, trackSeries } from "./prometheus.js";

/** What is tracked: an `Elector`, or a lease bound to a process session (`session.elector`). */
export type TrackedElector = Pick<Candidate, "name" | "identity" | "on" | "current"> & { readonly lane?: Lane };

interface Series {
  elector: TrackedElector;
  transitions: number;
  renewals: number;
  renewFailures: number;
  errors: Map<string, number>;
  /** Monotonic time of the last successful renewal or acquisition. */
  lastSuccessAt: number | undefined;
}

const labels = (e: TrackedElector): Labels => ({ lease: e.name, identity: e.identity });

export class ElectorMetrics {
  private readonly series = new Set<Series>();

  constructor(private readonly clock: Clock = systemClock) {}

  /** Starts counting `elector`'s events; returns the function that stops. */
  track(elector: TrackedElector): () => void {
    const s: Series = {
      elector,
      transitions: 0,
      renewals: 0,
      renewFailures: 0,
      errors: new Map(),
      lastSuccessAt: undefined,
    };
    return trackSeries(this.series, s, () => [
      elector.on("elected", () => {
        s.transitions++;
        s.lastSuccessAt = elector.current.lastRenewalSentAt;
      }),
      elector.on("renewed", () => {
        s.renewals++;
        s.lastSuccessAt = elector.current.lastRenewalSentAt;
      }),
      elector.on("error", ({ during }) => {
        if (during === "renew") s.renewFailures++;
        s.errors.set(during, (s.errors.get(during) ?? 0) + 1);
      }),
    ]);
  }

  render(): string {
    const all = [...this.series];
    const each = (value: (s: Series) => number | string) =>
      all.map((s) => ({ labels: labels(s.elector), value: value(s) }));
    // The lanes the tracked electors ask (usually the one process lane): renewals first, shown.
    const lanes = new Set<MeasuredLane>();
    for (const s of all) if (s.elector.lane && isMeasuredLane(s.elector.lane)) lanes.add(s.elector.lane);
    return exposition([
      ...family(
        "leasehold_elector_is_leader",
        "gauge",
        "1 while this candidate is inside its safe window as leader.",
        each((s) => (s.elector.current.isLeader ? 1 : 0)),
      ),
      ...family(
        "leasehold_elector_term",
        "gauge",
        "Term (fencing token) held or last observed.",
        each((s) => s.elector.current.term),
      ),
      ...family(
        "leasehold_elector_leadership_transitions_total",
        "counter",
        "Times this candidate became leader.",
        each((s) => s.transitions),
      ),
      ...family(
        "leasehold_elector_renewals_total",
        "counter",
        "Successful renewals.",
        each((s) => s.renewals),
      ),
      ...family(
        "leasehold_elector_renew_failures_total",
        "counter",
        "Renewals that failed or whose outcome was unknown.",
        each((s) => s.renewFailures),
      ),
      ...family(
        "leasehold_elector_store_errors_total",
        "counter",
        "Store calls that failed, by what the elector was doing.",
        all.flatMap((s) =>
          [...s.errors].map(([during, n]) => ({ labels: { ...labels(s.elector), during }, value: n })),
        ),
      ),
      ...family(
        "leasehold_elector_seconds_since_last_renewal",
        "gauge",
        "Seconds since the last successful renewal was sent, while leader.",
        all
          .filter((s) => s.elector.current.isLeader && s.lastSuccessAt !== undefined)
          .map((s) => ({
            labels: labels(s.elector),
            value: ((this.clock.now() - (s.lastSuccessAt ?? 0)) / 1000).toFixed(3),
          })),
      ),
      ...renderLaneMetrics([...lanes].map((l) => l.stats())),
    ]);
  }
}
