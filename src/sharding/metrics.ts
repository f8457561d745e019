/**
 * Prometheus metrics for sharded electors, in the style of `ElectorMetrics`: it only listens to the
 * elector's events and reads its clock-checked state, so it adds no store calls. Runtime-neutral:
 * `render()` returns the text; serve it however your process exposes metrics.
 */
import { exposition, family, type Labels, trackSeries } from "../metrics/prometheus.js";
import type { ShardedElector } from "./sharded-elector.js";

interface Series {
  elector: ShardedElector;
  unowned: number;
  assigned: Map<string, number>;
  revoked: Map<string, number>;
  handoffs: number;
  forcedTakeovers: number;
  fenced: number;
  errors: Map<string, number>;
}

const labels = (e: ShardedElector): Labels => ({ group: e.group, identity: e.identity });
const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

export class ShardedElectorMetrics {
  private readonly series = new Set<Series>();

  /** Starts counting `elector`'s events; returns the function that stops. */
  track(elector: ShardedElector): () => void {
    const s: Series = {
      elector,
      unowned: 0,
      assigned: new Map(),
      revoked: new Map(),
      handoffs: 0,
      forcedTakeovers: 0,
      fenced: 0,
      errors: new Map(),
    };
    return trackSeries(this.series, s, () => [
      elector.on("observed", ({ unowned }) => {
        s.unowned = unowned;
      }),
      elector.on("assigned", ({ kind }) => bump(s.assigned, kind)),
      elector.on("revoked", ({ reason }) => bump(s.revoked, reason)),
      elector.on("handoff", () => {
        s.handoffs++;
      }),
      elector.on("takeover", () => {
        s.forcedTakeovers++;
      }),
      elector.on("fenced", () => {
        s.fenced++;
      }),
      elector.on("error", ({ during }) => bump(s.errors, during)),
    ]);
  }

  render(): string {
    const all = [...this.series];
    return exposition([
      ...PER_MEMBER.flatMap(([name, type, help, value]) =>
        family(
          name,
          type,
          help,
          all.map((s) => ({ labels: labels(s.elector), value: value(s) })),
        ),
      ),
      ...BY_KEY.flatMap(([name, help, key, counts]) =>
        family(
          name,
          "counter",
          help,
          all.flatMap((s) =>
            [...counts(s)].map(([k, n]) => ({ labels: { ...labels(s.elector), [key]: k }, value: n })),
          ),
        ),
      ),
    ]);
  }
}

/** One series per member: name, type, help, what to read. */
const PER_MEMBER: ReadonlyArray<[string, "gauge" | "counter", string, (s: Series) => number]> = [
  [
    "leasehold_sharded_session_valid",
    "gauge",
    "1 while this member's session is inside its safe window.",
    (s) => (s.elector.current.session === undefined ? 0 : 1),
  ],
  ["leasehold_sharded_buckets", "gauge", "The group's bucket count.", (s) => s.elector.current.buckets ?? 0],
  [
    "leasehold_sharded_buckets_held",
    "gauge",
    "Buckets this member is working on now.",
    (s) => s.elector.current.held.length,
  ],
  [
    "leasehold_sharded_unowned_buckets",
    "gauge",
    "Buckets nobody was working on at this member's last look (free, expired, moving, or waiting for a re-shard).",
    (s) => s.unowned,
  ],
  ["leasehold_sharded_members", "gauge", "Live members in this member's view.", (s) => s.elector.current.view.length],
  [
    "leasehold_sharded_handoffs_total",
    "counter",
    "Buckets this member handed to another on request.",
    (s) => s.handoffs,
  ],
  [
    "leasehold_sharded_forced_takeovers_total",
    "counter",
    "Buckets this member took from a member whose session had expired.",
    (s) => s.forcedTakeovers,
  ],
  ["leasehold_sharded_fenced_total", "counter", "Expired member sessions this member ended.", (s) => s.fenced],
];

/** Counters per member and label value: name, help, label, the counts. */
const BY_KEY: ReadonlyArray<[string, string, string, (s: Series) => Map<string, number>]> = [
  ["leasehold_sharded_assigned_total", "Buckets this member began working on, by how.", "kind", (s) => s.assigned],
  ["leasehold_sharded_revoked_total", "Buckets this member stopped working on, by why.", "reason", (s) => s.revoked],
  ["leasehold_sharded_store_errors_total", "Store calls that failed, by what for.", "during", (s) => s.errors],
];
