/**
 * The Prometheus text format (0.0.4) as leasehold's metrics classes write it: a label value
 * escaped, and one metric family (its HELP and TYPE lines, then its samples). Runtime-neutral.
 */

/** A label value, escaped as the text format wants (backslash, double quote, newline). */
export function labelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** One metric family's lines: HELP, TYPE, then `samples` (each `name{labels} value`). */
export function family(name: string, type: "gauge" | "counter", help: string, samples: string[]): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples];
}
