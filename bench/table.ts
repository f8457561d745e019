/** Shared shape and printing for benchmark tables, plus small statistics helpers. */
export interface Table {
  title: string;
  /** One line under the title: what was measured, against what, and how. */
  note?: string;
  columns: string[];
  rows: Array<Array<string | number>>;
}

export interface BenchModule {
  run(): Promise<Table[]>;
}

export function printTable(t: Table): string {
  const head = `| ${t.columns.join(" | ")} |`;
  const rule = `| ${t.columns.map(() => "---").join(" | ")} |`;
  const body = t.rows.map((r) => `| ${r.map((c) => (typeof c === "number" ? formatNumber(c) : c)).join(" | ")} |`);
  return [`## ${t.title}`, "", ...(t.note ? [t.note, ""] : []), head, rule, ...body, ""].join("\n");
}

function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n)) return String(n);
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3);
}

export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export const median = (values: number[]) => quantile(values, 0.5);

/** Times `fn` `n` times after `warmup` runs; returns per-call milliseconds. */
export async function timeCalls(
  n: number,
  fn: (i: number) => Promise<unknown>,
  warmup = Math.min(20, n),
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn(-1 - i);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    out.push(performance.now() - t0);
  }
  return out;
}
