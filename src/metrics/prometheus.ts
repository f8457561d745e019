/**
 * The Prometheus text exposition format (0.0.4), written in one place: a metric family is its
 * `# HELP` and `# TYPE` lines, then one line per sample, and every label value is escaped the same
 * way. Every renderer of leasehold's metrics writes through it: electors (./elector.ts), their
 * lanes (./lane.ts), sharded electors (src/sharding/metrics.ts) and the API (src/api/metrics.ts).
 * Runtime-neutral.
 */

export type Labels = Readonly<Record<string, string | number>>;

export type MetricType = "counter" | "gauge" | "histogram";

/** One line of a family: its labels, its value, and a name suffix (a histogram's `_bucket`, `_sum`, `_count`). */
export interface Sample {
  labels?: Labels;
  value: number | string;
  suffix?: string;
}

/** A label value as the format needs it: backslash, double quote and newline escaped. */
export function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** `{a="x",b="y"}`, or "" without labels. */
export function labelSet(labels: Labels = {}): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(String(v))}"`);
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

/** One metric family's lines: HELP, TYPE, then each sample. */
export function family(name: string, type: MetricType, help: string, samples: Iterable<Sample>): string[] {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const s of samples) lines.push(`${name}${s.suffix ?? ""}${labelSet(s.labels)} ${s.value}`);
  return lines;
}

/** A whole exposition: the families' lines, newline-terminated. */
export function exposition(lines: readonly string[]): string {
  return `${lines.join("\n")}\n`;
}

/**
 * Adds `s` to `series` and starts its listeners (`listen`); returns the function that stops them
 * and drops `s` from what `render` shows. Every per-object metrics class (electors, sharded
 * electors, scheduled jobs) tracks this way, so none forgets half of the undoing.
 */
export function trackSeries<S>(series: Set<S>, s: S, listen: () => ReadonlyArray<() => void>): () => void {
  series.add(s);
  const offs = listen();
  return () => {
    for (const off of offs) off();
    series.delete(s);
  };
}
