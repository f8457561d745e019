/**
 * Prometheus metrics for sharded electors, in the style of `ElectorMetrics`: it only listens to the
 * elector's events and reads its clock-checked state, so it adds no store calls. Runtime-neutral:
 * `render()` returns the text; serve it however your process exposes metrics.
 */

import { family, labelValue } from "../metrics-text.js";
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

const labels = (e: ShardedElector, extra = "") =>
  `{group="${labelValue(e.group)}",identity="${labelValue(e.identity)}"${extra}}`;
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
    this.series.add(s);
    const offs = [
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
    ];
    return () => {
      for (const off of offs) off();
      this.series.delete(s);
    };
  }

  render(): string {
    const lines: string[] = [];
    const all = [...this.series];
    const metric = (...parts: Parameters<typeof family>) => lines.push(...family(...parts));
    const gauge = (name: string, help: string, value: (s: Series) => number) =>
      metric(
        name,
        "gauge",
        help,
        all.map((s) => `${name}${labels(s.elector)} ${value(s)}`),
      );
    const byKey = (name: string, help: string, key: string, map: (s: Series) => Map<string, number>) =>
      metric(
        name,
        "counter",
        help,
        all.flatMap((s) =>
          [...map(s)].map(([k, n]) => `${name}${labels(s.elector, `,${key}="${labelValue(k)}"`)} ${n}`),
        ),
      );
    const counter = (name: string, help: string, value: (s: Series) => number) =>
      metric(
        name,
        "counter",
        help,
        all.map((s) => `${name}${labels(s.elector)} ${value(s)}`),
      );
    gauge("leasehold_sharded_session_valid", "1 while this member's session is inside its safe window.", (s) =>
      s.elector.current.session === undefined ? 0 : 1,
    );
    gauge("leasehold_sharded_buckets", "The group's bucket count.", (s) => s.elector.current.buckets ?? 0);
    gauge(
      "leasehold_sharded_buckets_held",
      "Buckets this member is working on now.",
      (s) => s.elector.current.held.length,
    );
    gauge(
      "leasehold_sharded_unowned_buckets",
      "Buckets nobody was working on at this member's last look (free, expired, moving, or waiting for a re-shard).",
      (s) => s.unowned,
    );
    gauge("leasehold_sharded_members", "Live members in this member's view.", (s) => s.elector.current.view.length);
    byKey(
      "leasehold_sharded_assigned_total",
      "Buckets this member began working on, by how.",
      "kind",
      (s) => s.assigned,
    );
    byKey(
      "leasehold_sharded_revoked_total",
      "Buckets this member stopped working on, by why.",
      "reason",
      (s) => s.revoked,
    );
    counter("leasehold_sharded_handoffs_total", "Buckets this member handed to another on request.", (s) => s.handoffs);
    counter(
      "leasehold_sharded_forced_takeovers_total",
      "Buckets this member took from a member whose session had expired.",
      (s) => s.forcedTakeovers,
    );
    counter("leasehold_sharded_fenced_total", "Expired member sessions this member ended.", (s) => s.fenced);
    byKey("leasehold_sharded_store_errors_total", "Store calls that failed, by what for.", "during", (s) => s.errors);
    return `${lines.join("\n")}\n`;
  }
}
