/**
 * The load lane's counters in the Prometheus text format, for `ElectorMetrics` (docs/design.md §4):
 * what followers were admitted, shed (held back by a late loop), queued (held back by the cap on
 * calls in flight) and let through overdue, and how late the loop runs. One series set per lane
 * (electors sharing the process lane share one). Runtime-neutral.
 */
import type { LaneKind, LaneStats } from "../elector/load-lane.js";
import { family } from "./prometheus.js";

const KINDS: readonly LaneKind[] = ["poll", "acquire"];

export function renderLaneMetrics(lanes: readonly LaneStats[]): string[] {
  if (lanes.length === 0) return [];
  const perKind = (name: string, help: string, pick: (s: LaneStats) => Record<LaneKind, number>, scale = 1) =>
    family(
      name,
      "counter",
      help,
      lanes.flatMap((s, lane) => KINDS.map((kind) => ({ labels: { lane, kind }, value: pick(s)[kind] * scale }))),
    );
  const gauge = (name: string, help: string, pick: (s: LaneStats) => number) =>
    family(
      name,
      "gauge",
      help,
      lanes.map((s, lane) => ({ labels: { lane }, value: pick(s) })),
    );
  return [
    ...perKind("leasehold_lane_admitted_total", "Follower calls (polls, acquisitions) admitted.", (s) => s.admitted),
    ...perKind("leasehold_lane_shed_total", "Follower calls held back because the event loop was late.", (s) => s.shed),
    ...perKind(
      "leasehold_lane_queued_total",
      "Follower calls held back by the cap on calls in flight.",
      (s) => s.queued,
    ),
    ...perKind(
      "leasehold_lane_overdue_total",
      "Follower calls let through at their bound while the loop was late.",
      (s) => s.overdue,
    ),
    ...perKind(
      "leasehold_lane_wait_seconds_total",
      "Seconds follower calls waited for admission.",
      (s) => s.waitedMs,
      1 / 1000,
    ),
    ...gauge("leasehold_lane_in_flight", "Follower calls out now.", (s) => s.inFlight),
    ...gauge("leasehold_lane_waiting", "Follower calls waiting for admission now.", (s) => s.waiting),
    ...gauge(
      "leasehold_lane_loop_lateness_seconds",
      "p99 of the event loop's recent timer lateness.",
      (s) => s.latenessMs / 1000,
    ),
    ...gauge("leasehold_lane_loop_late", "1 while the loop counts as late (follower calls are held back).", (s) =>
      s.late ? 1 : 0,
    ),
  ];
}
