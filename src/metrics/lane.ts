/**
 * The load lane's counters in the Prometheus text format, for `ElectorMetrics` (docs/design.md §4):
 * what followers were admitted, shed (held back by a late loop), queued (held back by the cap on
 * calls in flight) and let through overdue, and how late the loop runs. One series set per lane
 * (electors sharing the process lane share one). Runtime-neutral.
 */
import type { LaneKind, LaneStats } from "../elector/load-lane.js";
import { family } from "./prometheus.js";

const KINDS: readonly LaneKind[] = ["poll", "acquire"];

/** Counters per lane and kind of call: name, help, what to read (ms are shown in seconds). */
const PER_KIND: ReadonlyArray<[string, string, (s: LaneStats) => Record<LaneKind, number>, number?]> = [
  ["leasehold_lane_admitted_total", "Follower calls (polls, acquisitions) admitted.", (s) => s.admitted],
  ["leasehold_lane_shed_total", "Follower calls held back because the event loop was late.", (s) => s.shed],
  ["leasehold_lane_queued_total", "Follower calls held back by the cap on calls in flight.", (s) => s.queued],
  [
    "leasehold_lane_overdue_total",
    "Follower calls let through at their bound while the loop was late.",
    (s) => s.overdue,
  ],
  ["leasehold_lane_wait_seconds_total", "Seconds follower calls waited for admission.", (s) => s.waitedMs, 1 / 1000],
];

/** Gauges per lane: name, help, what to read. */
const GAUGES: ReadonlyArray<[string, string, (s: LaneStats) => number]> = [
  ["leasehold_lane_in_flight", "Follower calls out now.", (s) => s.inFlight],
  ["leasehold_lane_waiting", "Follower calls waiting for admission now.", (s) => s.waiting],
  [
    "leasehold_lane_loop_lateness_seconds",
    "p99 of the event loop's recent timer lateness.",
    (s) => s.latenessMs / 1000,
  ],
  [
    "leasehold_lane_loop_late",
    "1 while the loop counts as late (follower calls are held back).",
    (s) => (s.late ? 1 : 0),
  ],
];

export function renderLaneMetrics(lanes: readonly LaneStats[]): string[] {
  if (lanes.length === 0) return [];
  return [
    ...PER_KIND.flatMap(([name, help, pick, scale = 1]) =>
      family(
        name,
        "counter",
        help,
        lanes.flatMap((s, lane) => KINDS.map((kind) => ({ labels: { lane, kind }, value: pick(s)[kind] * scale }))),
      ),
    ),
    ...GAUGES.flatMap(([name, help, pick]) =>
      family(
        name,
        "gauge",
        help,
        lanes.map((s, lane) => ({ labels: { lane }, value: pick(s) })),
      ),
    ),
  ];
}
