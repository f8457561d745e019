/**
 * `leasehold doctor <store-url>`: does this backend keep the store contract? Runs the contract's
 * safety cases (src/testkit/safety-cases.ts, the very code `npm test` runs against every local
 * server) against the user's own table, bucket or container, on a scratch prefix of its own
 * (`leasehold-doctor/<run id>/`), the races many rounds; measures the store's read and write
 * round trips and the shortest `leaseMs` that leaves a renewal room; prints a pass/fail table
 * (or JSON) and exits 0 only when every case passed.
 *
 * Nothing outside the scratch prefix is read or written; `--prefix` puts it under a prefix of the
 * caller's (`team-a/leasehold-doctor/<run id>/`), so it runs over HTTP with a token scoped to
 * `team-a/`. Leasehold never deletes a lease record (a record's term must outlive its holder: a
 * name written again would restart at term 1, and a fence that kept term 7 would then refuse the
 * new holder, or worse, a deposed one holding a recycled term would pass it), and the API has no
 * delete at all, so the records the run wrote are left released, and the report says where.
 */
import { LeaseValidationError } from "../errors.js";
import {
  type LeaseRecord,
  type LeaseStore,
  MIN_LEASE_MS,
  newWriteId,
  releasedRecord,
  type Stored,
  validatePrefix,
} from "../lease.js";
import { openStore, parseStoreUrl } from "../open-store.js";
import { makeRecord, SAFETY_CASES } from "../testkit/safety-cases.js";
import { StoreWrapper } from "../testkit/store-wrapper.js";
import { type CliIo, EXIT_RUNTIME, formatTable } from "./output.js";

export interface DoctorOptions {
  store: string;
  /** Rounds of each race. */
  rounds: number;
  /** Writers in each round. */
  writers: number;
  json: boolean;
  /** Where the scratch names go: "" or a prefix ending in "/" (default ""). */
  prefix?: string;
}

/** The run's scratch prefix: `<prefix>leasehold-doctor/<UTC time>-<random>/`; 400-style error for a bad prefix. */
export function scratchPrefix(prefix = ""): string {
  const checked = validatePrefix(prefix);
  if (checked !== "" && !checked.endsWith("/")) {
    throw new LeaseValidationError("doctor options", [
      { path: "--prefix", message: `expected "" or a prefix ending in "/" (got ${JSON.stringify(prefix)})` },
    ]);
  }
  return `${checked}leasehold-doctor/${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}-${newWriteId().slice(0, 8)}/`;
}

export interface DoctorReport {
  store: string;
  /** Where the run's records are: every name starts with it. */
  scratch: string;
  cases: Array<{ name: string; ok: boolean; detail: string; ms: number }>;
  /** Round trips in ms, from `samples` sequential calls each; null when they could not be measured. */
  roundTrip: RoundTrip | null;
  /** The shortest leaseMs this store supports with room to spare (see `minimumLeaseMs`); null without round trips. */
  minimumLeaseMs: number | null;
  /** Records left released under `scratch`. */
  leftReleased: number;
  passed: boolean;
}

interface RoundTrip {
  samples: number;
  read: { p50: number; p99: number };
  write: { p50: number; p99: number };
}

const SAMPLES = 20;

/** Runs the doctor's checks against `store` (already open from the URL `options.store`), writing under `scratch`. */
export async function examine(
  inner: LeaseStore,
  options: {
    store: string;
    scratch: string;
    rounds: number;
    writers: number;
    /** Between writes to one lease; default the store's declared minimum write interval (GCS: 1 s). */
    pauseMs?: number;
    /**
     * Opens another client of the same backend, one per racing writer, so the races' writers
     * reach the server on separate connections (src/testkit/safety-cases.ts). Without it they
     * share `inner`.
     */
    openWriter?: () => Promise<LeaseStore>;
  },
): Promise<DoctorReport> {
  const store = new Remembering(inner);
  const { openWriter } = options;
  const limits = inner.limits;
  const pauseMs = options.pauseMs ?? limits?.minWriteIntervalMs ?? 0;
  const pause = pauseMs > 0 ? () => new Promise<void>((resolve) => setTimeout(resolve, pauseMs)) : undefined;
  let seq = 0;
  const cases: DoctorReport["cases"] = [];
  for (const safety of SAFETY_CASES) {
    const started = performance.now();
    try {
      await safety.run({
        store,
        name: (base = "lease") => `${options.scratch}${(seq++).toString(36)}-${base}`,
        rounds: options.rounds,
        writers: options.writers,
        // The leasehold API stamps renewedAt with its own clock (docs/design.md §5).
        ...(parseStoreUrl(options.store).kind === "http" ? { stampsRenewedAt: true } : {}),
        ...(pause ? { pause } : {}),
        // The racers' writes are remembered too, so their records are released at the end.
        ...(openWriter ? { openWriter: async () => new Remembering(await openWriter(), store.latest) } : {}),
      });
      cases.push({ name: safety.name, ok: true, detail: "", ms: performance.now() - started });
    } catch (error) {
      cases.push({ name: safety.name, ok: false, detail: (error as Error).message, ms: performance.now() - started });
    }
  }
  let roundTrip: RoundTrip | null = null;
  try {
    roundTrip = await measure(store, `${options.scratch}round-trip`, pause);
  } catch (error) {
    cases.push({
      name: "round trips of reads and conditional writes",
      ok: false,
      detail: (error as Error).message,
      ms: 0,
    });
  }
  const leftReleased = await releaseAll(store);
  return {
    store: options.store,
    scratch: options.scratch,
    cases,
    roundTrip,
    minimumLeaseMs: roundTrip && minimumLeaseMs(roundTrip.write.p99, limits?.minWriteIntervalMs),
    leftReleased,
    passed: cases.every((c) => c.ok),
  };
}

/**
 * The shortest leaseMs with room for the elector's defaults (renewMs = leaseMs / 3, the call
 * timeout one renewMs, safetyMs = leaseMs / 10): ten slowest write round trips, so a renewal has
 * over three round trips before its timeout and time for a retry inside the window; at least three
 * of the store's minimum write intervals (renewMs = leaseMs / 3 may not come faster); rounded up
 * to 100 ms.
 */
export function minimumLeaseMs(writeP99Ms: number, minWriteIntervalMs: number | undefined): number {
  const needed = Math.max(MIN_LEASE_MS, 10 * writeP99Ms, 3 * (minWriteIntervalMs ?? 0));
  return Math.ceil(needed / 100) * 100;
}

export async function doctorCommand(o: DoctorOptions, io: CliIo): Promise<number> {
  const store = await openStore(o.store, { env: io.env });
  const scratch = scratchPrefix(o.prefix);
  if (!o.json)
    io.say(`checking ${o.store} on scratch names ${scratch}... (${o.rounds} rounds of ${o.writers} writers per race)`);
  const openWriter = writerOpener(o.store, io.env);
  let report: DoctorReport;
  try {
    report = await examine(store, {
      store: o.store,
      scratch,
      rounds: o.rounds,
      writers: o.writers,
      ...(openWriter ? { openWriter } : {}),
    });
  } finally {
    await store.close?.();
  }
  if (o.json) {
    io.out(JSON.stringify(report));
  } else {
    const rows = report.cases.map((c) => [c.ok ? "pass" : "FAIL", c.name, c.ok ? `${Math.round(c.ms)} ms` : c.detail]);
    for (const line of formatTable(["result", "check", "detail"], rows)) io.out(line);
    io.out("");
    if (report.roundTrip) {
      const { read, write, samples } = report.roundTrip;
      io.out(
        `round trip (${samples} sequential calls): read p50 ${fixed(read.p50)} ms, p99 ${fixed(read.p99)} ms; conditional write p50 ${fixed(write.p50)} ms, p99 ${fixed(write.p99)} ms`,
      );
      io.out(
        `shortest safe leaseMs for this store: ${report.minimumLeaseMs} (ten write round trips; renewMs = leaseMs / 3)`,
      );
    }
    io.out(
      `left ${report.leftReleased} released records under "${scratch}": leasehold never deletes a lease record; delete them with your backend's own tools if you wish`,
    );
    io.out(
      report.passed
        ? "all checks passed"
        : `${report.cases.filter((c) => !c.ok).length} checks FAILED: do not use this store for leases`,
    );
  }
  return report.passed ? 0 : EXIT_RUNTIME;
}

/**
 * How the races open each writer's own store: for a store reached over the network, a client of its
 * own (so a connection of its own) from the same URL. Undefined, so writers share one store, for a
 * memory: store (opened twice it is two stores) and an sqlite: file (each open starts a writer thread).
 */
export function writerOpener(
  url: string,
  env: Record<string, string | undefined>,
): (() => Promise<LeaseStore>) | undefined {
  const kind = parseStoreUrl(url).kind;
  return kind === "memory" || kind === "sqlite" ? undefined : () => openStore(url, { env });
}

const fixed = (ms: number) => (ms < 10 ? ms.toFixed(1) : String(Math.round(ms)));

/** Remembers the last revision it saw of every name written, so the run can release them all. */
class Remembering extends StoreWrapper {
  constructor(
    inner: LeaseStore,
    readonly latest = new Map<string, Stored>(),
  ) {
    super(inner);
  }

  override async put(next: LeaseRecord, expected: string | null, options?: { signal?: AbortSignal }): Promise<Stored> {
    try {
      const stored = await super.put(next, expected, options);
      this.latest.set(stored.record.name, stored);
      return stored;
    } catch (error) {
      if (!this.latest.has(next.name)) this.latest.set(next.name, { record: next, revision: "" });
      throw error;
    }
  }
}

/** Releases every record the run wrote (read first: races leave someone else's winner). */
async function releaseAll(store: Remembering): Promise<number> {
  let released = 0;
  for (const name of store.latest.keys()) {
    try {
      const current = await store.inner.get(name);
      if (current === null) continue;
      if (current.record.holder !== null) {
        await store.inner.put(releasedRecord(current.record, current.record.renewedAt), current.revision);
      }
      released++;
    } catch {
      // Left as it is: the report counts only what it released.
    }
  }
  return released;
}

async function measure(store: LeaseStore, name: string, pause: (() => Promise<void>) | undefined): Promise<RoundTrip> {
  const reads: number[] = [];
  const writes: number[] = [];
  let stored = await store.put(makeRecord(name), null);
  for (let i = 0; i < SAMPLES; i++) {
    await pause?.();
    let t = performance.now();
    stored = await store.put(makeRecord(name, { renewedAt: stored.record.renewedAt + 1 }), stored.revision);
    writes.push(performance.now() - t);
    t = performance.now();
    await store.get(name);
    reads.push(performance.now() - t);
  }
  const stats = (values: number[]) => ({ p50: quantile(values, 0.5), p99: quantile(values, 0.99) });
  return { samples: SAMPLES, read: stats(reads), write: stats(writes) };
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
}
