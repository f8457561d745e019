/** Adds up scenario results and renders them as the Markdown tables `npm run chaos` prints. */
import { printTable } from "../../bench/table.js";
import type { ScenarioResult } from "./scenario.js";
import type { ShardedScenarioResult } from "./sharded-scenario.js";

export interface ChaosTotals {
  scenarios: number;
  faults: Map<string, number>;
  elections: number;
  fencedAccepted: number;
  fencedRejected: number;
  staleWrites: number;
  violations: number;
  failedSeeds: string[];
  virtualMs: number;
}

export function emptyTotals(): ChaosTotals {
  return {
    scenarios: 0,
    faults: new Map(),
    elections: 0,
    fencedAccepted: 0,
    fencedRejected: 0,
    staleWrites: 0,
    violations: 0,
    failedSeeds: [],
    virtualMs: 0,
  };
}

export function addResult(totals: ChaosTotals, r: ScenarioResult): void {
  totals.scenarios++;
  for (const [kind, n] of Object.entries(r.stats.faults)) totals.faults.set(kind, (totals.faults.get(kind) ?? 0) + n);
  totals.elections += r.stats.elections;
  totals.fencedAccepted += r.stats.fencedAccepted;
  totals.fencedRejected += r.stats.fencedRejected;
  totals.staleWrites += r.stats.staleWrites;
  totals.violations += r.violations.length;
  totals.virtualMs += r.stats.virtualMs;
  if (r.violations.length > 0) totals.failedSeeds.push(`${r.backend}:${r.seed}`);
}

export function renderTotals(byBackend: Map<string, ChaosTotals>, wallMs: number): string {
  const backends = [...byBackend.keys()];
  const column = (f: (t: ChaosTotals) => string | number) => backends.map((b) => f(byBackend.get(b)!));
  const kinds = [...new Set(backends.flatMap((b) => [...byBackend.get(b)!.faults.keys()]))].sort();
  const rows: Array<Array<string | number>> = [
    ["scenarios", ...column((t) => t.scenarios)],
    ["virtual time (s)", ...column((t) => Math.round(t.virtualMs / 1000))],
    ...kinds.map((k) => [`faults: ${k}`, ...column((t) => t.faults.get(k) ?? 0)]),
    ["faults: total", ...column((t) => [...t.faults.values()].reduce((a, b) => a + b, 0))],
    ["leadership changes (elections)", ...column((t) => t.elections)],
    ["fenced writes accepted", ...column((t) => t.fencedAccepted)],
    ["fenced writes rejected", ...column((t) => t.fencedRejected)],
    ["writes by leaders past their safe window", ...column((t) => t.staleWrites)],
    ["violations", ...column((t) => t.violations)],
    ["failing seeds", ...column((t) => t.failedSeeds.join(" ") || "none")],
  ];
  return printTable({
    title: "leasehold chaos run",
    note: `Seeded scenarios on the manual clock; ${Math.round(wallMs / 100) / 10} s of real time.`,
    columns: ["", ...backends],
    rows,
  });
}

/** Totals of sharded scenarios (sharded-scenario.ts). */
export interface ShardedTotals {
  scenarios: number;
  faults: Map<string, number>;
  assignments: number;
  handoffs: number;
  takeovers: number;
  fences: number;
  reshards: number;
  fencedAccepted: number;
  fencedRejected: number;
  staleWrites: number;
  unownedQuietMs: number;
  violations: number;
  failedSeeds: string[];
  virtualMs: number;
}

export function emptyShardedTotals(): ShardedTotals {
  return {
    scenarios: 0,
    faults: new Map(),
    assignments: 0,
    handoffs: 0,
    takeovers: 0,
    fences: 0,
    reshards: 0,
    fencedAccepted: 0,
    fencedRejected: 0,
    staleWrites: 0,
    unownedQuietMs: 0,
    violations: 0,
    failedSeeds: [],
    virtualMs: 0,
  };
}

export function addShardedResult(totals: ShardedTotals, r: ShardedScenarioResult): void {
  totals.scenarios++;
  for (const [kind, n] of Object.entries(r.stats.faults)) totals.faults.set(kind, (totals.faults.get(kind) ?? 0) + n);
  totals.assignments += r.stats.assignments;
  totals.handoffs += r.stats.handoffs;
  totals.takeovers += r.stats.takeovers;
  totals.fences += r.stats.fences;
  totals.reshards += r.stats.reshards;
  totals.fencedAccepted += r.stats.fencedAccepted;
  totals.fencedRejected += r.stats.fencedRejected;
  totals.staleWrites += r.stats.staleWrites;
  totals.unownedQuietMs += r.stats.unownedQuietMs;
  totals.violations += r.violations.length;
  totals.virtualMs += r.stats.virtualMs;
  if (r.violations.length > 0) totals.failedSeeds.push(`${r.backend}:${r.seed}`);
}

export function renderShardedTotals(byBackend: Map<string, ShardedTotals>, wallMs: number): string {
  const backends = [...byBackend.keys()];
  const column = (f: (t: ShardedTotals) => string | number) => backends.map((b) => f(byBackend.get(b)!));
  const kinds = [...new Set(backends.flatMap((b) => [...byBackend.get(b)!.faults.keys()]))].sort();
  const rows: Array<Array<string | number>> = [
    ["scenarios", ...column((t) => t.scenarios)],
    ["virtual time (s)", ...column((t) => Math.round(t.virtualMs / 1000))],
    ...kinds.map((k) => [`faults: ${k}`, ...column((t) => t.faults.get(k) ?? 0)]),
    ["buckets taken up (tenures)", ...column((t) => t.assignments)],
    ["hand-offs on request", ...column((t) => t.handoffs)],
    ["forced takeovers (after a fence)", ...column((t) => t.takeovers)],
    ["expired sessions fenced", ...column((t) => t.fences)],
    ["bucket count changes", ...column((t) => t.reshards)],
    ["fenced writes accepted", ...column((t) => t.fencedAccepted)],
    ["fenced writes rejected", ...column((t) => t.fencedRejected)],
    ["writes by members past their session window", ...column((t) => t.staleWrites)],
    ["bucket-ms unowned once balanced at the end", ...column((t) => Math.round(t.unownedQuietMs))],
    ["violations", ...column((t) => t.violations)],
    ["failing seeds", ...column((t) => t.failedSeeds.join(" ") || "none")],
  ];
  return printTable({
    title: "leasehold sharded chaos run",
    note: `Seeded sharded scenarios on the manual clock; ${Math.round(wallMs / 100) / 10} s of real time.`,
    columns: ["", ...backends],
    rows,
  });
}
