/** Adds up scenario results and renders them as the Markdown tables `npm run chaos` prints. */
import { printTable } from "../../bench/table.js";
import type { ScenarioStats } from "./scenario.js";
import type { ShardedScenarioStats } from "./sharded-scenario.js";

/** What every scenario result carries, single-lease or sharded. */
interface Result<S> {
  seed: number;
  backend: string;
  /** Which candidates competed (single-lease scenarios). */
  mode?: string;
  violations: string[];
  stats: S & { faults: Record<string, number> };
}

type NumericStats<S> = { [K in keyof S as S[K] extends number ? K : never]: number };

/** Scenario counts, faults by kind, every numeric stat summed, violations and the seeds that had any. */
export type Totals<S> = NumericStats<S> & {
  scenarios: number;
  faults: Map<string, number>;
  violations: number;
  failedSeeds: string[];
};
export type ChaosTotals = Totals<ScenarioStats>;
export type ShardedTotals = Totals<ShardedScenarioStats>;

export function emptyTotals<S>(): Totals<S> {
  return { scenarios: 0, faults: new Map(), violations: 0, failedSeeds: [] } as unknown as Totals<S>;
}

export function addResult<S>(totals: Totals<S>, r: Result<S>): void {
  totals.scenarios++;
  const sums = totals as unknown as Record<string, number>;
  for (const [key, value] of Object.entries(r.stats as object)) {
    if (typeof value === "number") sums[key] = (sums[key] ?? 0) + value;
  }
  for (const [kind, n] of Object.entries(r.stats.faults)) totals.faults.set(kind, (totals.faults.get(kind) ?? 0) + n);
  totals.violations += r.violations.length;
  if (r.violations.length > 0) totals.failedSeeds.push(`${r.mode ? `${r.mode}/` : ""}${r.backend}:${r.seed}`);
}

type Row<S> = [label: string, value: (t: Totals<S>) => number];

/** One column per backend (or mode and backend): scenarios, virtual time, faults by kind, then `rows`, violations, failing seeds. */
function render<S>(title: string, note: string, byBackend: Map<string, Totals<S>>, rows: Array<Row<S>>): string {
  const backends = [...byBackend.keys()];
  const column = (f: (t: Totals<S>) => string | number) => backends.map((b) => f(byBackend.get(b)!));
  const kinds = [...new Set(backends.flatMap((b) => [...byBackend.get(b)!.faults.keys()]))].sort();
  const virtualMs = (t: Totals<S>) => (t as unknown as Record<string, number>).virtualMs ?? 0;
  return printTable({
    title,
    note,
    columns: ["", ...backends],
    rows: [
      ["scenarios", ...column((t) => t.scenarios)],
      ["virtual time (s)", ...column((t) => Math.round(virtualMs(t) / 1000))],
      ...kinds.map((k) => [`faults: ${k}`, ...column((t) => t.faults.get(k) ?? 0)]),
      ...rows.map(([label, value]) => [label, ...column(value)]),
      ["violations", ...column((t) => t.violations)],
      ["failing seeds", ...column((t) => t.failedSeeds.join(" ") || "none")],
    ],
  });
}

const realTime = (wallMs: number) => `${Math.round(wallMs / 100) / 10} s of real time`;

export function renderTotals(byBackend: Map<string, ChaosTotals>, wallMs: number): string {
  return render<ScenarioStats>(
    "leasehold chaos run",
    `Seeded scenarios on the manual clock, one column per mode and backend; ${realTime(wallMs)}.`,
    byBackend,
    [
      ["faults: total", (t) => [...t.faults.values()].reduce((a, b) => a + b, 0)],
      ["leadership changes (elections)", (t) => t.elections],
      ["elections by session-bound candidates", (t) => t.boundElections],
      ["successors registered", (t) => t.registrations],
      ["hand-overs written (graceful stops)", (t) => t.handovers],
      ["elections of a handed-over term", (t) => t.handoverElections],
      ["expired sessions fenced", (t) => t.sessionFences],
      ["fenced writes accepted", (t) => t.fencedAccepted],
      ["fenced writes rejected", (t) => t.fencedRejected],
      ["writes by leaders past their safe window", (t) => t.staleWrites],
      ["writes the API's holding rules refused (409)", (t) => t.apiRefusals],
    ],
  );
}

export function renderShardedTotals(byBackend: Map<string, ShardedTotals>, wallMs: number): string {
  return render<ShardedScenarioStats>(
    "leasehold sharded chaos run",
    `Seeded sharded scenarios on the manual clock; ${realTime(wallMs)}.`,
    byBackend,
    [
      ["buckets taken up (tenures)", (t) => t.assignments],
      ["hand-offs on request", (t) => t.handoffs],
      ["forced takeovers (after a fence)", (t) => t.takeovers],
      ["expired sessions fenced", (t) => t.fences],
      ["bucket count changes", (t) => t.reshards],
      ["fenced writes accepted", (t) => t.fencedAccepted],
      ["fenced writes rejected", (t) => t.fencedRejected],
      ["writes by members past their session window", (t) => t.staleWrites],
      ["bucket-ms unowned once balanced at the end", (t) => Math.round(t.unownedQuietMs)],
    ],
  );
}
