/**
 * Prometheus text exposition for one API instance: request counts, CAS conflicts, store call
 * latency histograms and failures. Kept in memory (per instance, reset on restart), which is
 * what Prometheus scraping expects.
 */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

type Labels = Record<string, string>;

function key(labels: Labels): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`)
    .join(",");
}

class Counter {
  readonly values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [k, v] of this.values) lines.push(`${this.name}${k ? `{${k}}` : ""} ${v}`);
    return lines;
  }
}

class Histogram {
  private readonly series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  observe(labels: Labels, seconds: number): void {
    const k = key(labels);
    let s = this.series.get(k);
    if (!s) {
      s = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }
  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [k, s] of this.series) {
      const sep = k ? `${k},` : "";
      for (const [i, b] of BUCKETS.entries()) lines.push(`${this.name}_bucket{${sep}le="${b}"} ${s.counts[i]}`);
      lines.push(`${this.name}_bucket{${sep}le="+Inf"} ${s.count}`);
      lines.push(`${this.name}_sum${k ? `{${k}}` : ""} ${s.sum}`);
      lines.push(`${this.name}_count${k ? `{${k}}` : ""} ${s.count}`);
    }
    return lines;
  }
}

/** A value read when scraped (what is open now), not counted. */
class Gauge {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => number,
  ) {}
  render(): string[] {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`, `${this.name} ${this.read()}`];
  }
}

export class ApiMetrics {
  private readonly gauges: Gauge[] = [];

  /** Adds a gauge read at each scrape (open watch streams, watched leases). */
  gauge(name: string, help: string, read: () => number): void {
    this.gauges.push(new Gauge(name, help, read));
  }

  readonly requests = new Counter("leasehold_http_requests_total", "HTTP requests by route, method and status.");
  readonly conflicts = new Counter("leasehold_cas_conflicts_total", "Compare-and-swap writes that lost a race.");
  readonly storeErrors = new Counter("leasehold_store_errors_total", "Store calls that failed, by op and ambiguity.");
  readonly storeLatency = new Histogram("leasehold_store_call_duration_seconds", "Store call latency by op.");
  readonly storeTimeouts = new Counter(
    "leasehold_store_timeouts_total",
    "Store calls abandoned at a deadline, by op and by whose (store: LEASEHOLD_STORE_TIMEOUT_MS; request: the client's).",
  );
  readonly watchers = new Counter("leasehold_watch_streams_total", "Watch streams opened.");
  readonly refused = new Counter(
    "leasehold_admission_refused_total",
    "Requests refused 503 by admission (renewals first), by bound (inFlight, lateMs) and lane.",
  );

  render(): string {
    return `${[
      this.requests,
      this.conflicts,
      this.storeErrors,
      this.storeLatency,
      this.storeTimeouts,
      this.watchers,
      this.refused,
      ...this.gauges,
    ]
      .flatMap((m) => m.render())
      .join("\n")}\n`;
  }
}
