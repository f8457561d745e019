/**
 * `leasehold/lane`: renewals first (docs/design.md §4). Every elector on the system clock shares
 * the process lane (`processLane()`), which holds followers' polls and acquisitions back while the
 * event loop is late, so that leaders' renewals never wait behind them; `openLane` gives an
 * elector a lane of its own, `LoadLane` one with other bounds. An application needs none of this
 * to elect: it is here to tune or measure the lane (`ElectorMetrics` renders its counters).
 */
export {
  type Lane,
  type LaneKind,
  type LaneRelease,
  type LaneStats,
  LoadLane,
  type LoadLaneOptions,
  openLane,
  processLane,
} from "./elector/load-lane.js";
