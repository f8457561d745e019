/**
 * Prometheus text exposition for one API instance: request counts, CAS conflicts, store call
 * latency histograms and failures. Kept in memory (per instance, reset on restart), which is
 * what Prometheus scraping expects. Written in the exposition format by src/metrics/prometheus.ts.
 */
import { exposition, family, labelSet } from "../metrics/prometheus.js";

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

type Labels = Record<string, string>;

class Counter {
  /** By label set, rendered (`labelSet`): one series per distinct set. */
  readonly values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const k = labelSet(labels);
    const series = this.values.get(k);
    if (series) series.value += by;
    else this.values.set(k, { labels, value: by });
  }
  render(): string[] {
    return family(this.name, "counter", this.help, this.values.values());
  }
}

class Histogram {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  observe(labels: Labels, seconds: number): void {
    const k = labelSet(labels);
    let s = this.series.get(k);
    if (!s) {
      s = { labels, counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }
  render(): string[] {
    return family(
      this.name,
      "histogram",
      this.help,
      [...this.series.values()].flatMap(({ labels, counts, sum, count }) => [
        ...BUCKETS.map((b, i) => ({ suffix: "_bucket", labels: { ...labels, le: String(b) }, value: counts[i]! })),
        { suffix: "_bucket", labels: { ...labels, le: "+Inf" }, value: count },
        { suffix: "_sum", labels, value: sum },
        { suffix: "_count", labels, value: count },
      ]),
    );
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
    return family(this.name, "gauge", this.help, [{ value: this.read() }]);
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
    return exposition(
      [
        this.requests,
        this.conflicts,
        this.storeErrors,
        this.storeLatency,
        this.storeTimeouts,
        this.watchers,
        this.refused,
        ...this.gauges,
      ].flatMap((m) => m.render()),
    );
  }
}
