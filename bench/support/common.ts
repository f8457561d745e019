/**
 * Small helpers the election benchmarks share: the quick-run switch, sleeping, temp SQLite files,
 * and one `Candidate` shape over both electors, so failover and handover run the same scenario
 * against ours and the client-go-style baseline.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Elector, type ElectorOptions } from "../../src/leader/elector.js";
import { type LeaseRecord, type LeaseStore, newWriteId } from "../../src/lease.js";
import { PollingElector } from "./polling-elector.js";

/** `BENCH_QUICK=1`: a smoke run with few repetitions (numbers are then indicative only). */
export const QUICK = process.env.BENCH_QUICK === "1";

/**
 * The machine's 1-minute load average against its core count, for table notes: timing numbers
 * taken while other processes compete for the cores are late by that competition, not by us.
 */
export function machineLoad(): string {
  return `1-min load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores`;
}

/** A held lease record as a renewal writes it, for the latency benchmarks (`renewedAtOffset` varies the body). */
export function benchRecord(name: string, renewedAtOffset = 0): LeaseRecord {
  const now = Date.now();
  return {
    name,
    holder: "bench",
    term: 1,
    leaseMs: 15_000,
    acquiredAt: now,
    renewedAt: now + renewedAtOffset,
    metadata: { addr: "10.0.0.7:8080" },
    writeId: newWriteId(),
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const randomBetween = (low: number, high: number) => low + Math.random() * (high - low);

/** A fresh folder for SQLite files; `remove()` deletes it. */
export function tempDir(label: string): { path: (file: string) => string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `leasehold-bench-${label}-`));
  return { path: (file) => join(dir, file), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** One candidate of either algorithm, as the scenarios need it. */
export interface Candidate {
  start(): void;
  stop(options: { release: boolean }): Promise<void>;
  /** Resolves (with monotonic ms) the first time this candidate becomes leader. */
  readonly elected: Promise<number>;
  /** Monotonic ms the last successful write (acquire or renewal) was sent. */
  lastWriteSentAt(): number | undefined;
}

export type Algorithm = "ours" | "polling";

export interface CandidateSettings {
  store: LeaseStore;
  name: string;
  identity: string;
  leaseMs: number;
  /** Ours: its renewMs. The polling elector renews every retryMs, as client-go does. */
  renewMs?: number;
  retryMs?: number;
  extra?: Partial<ElectorOptions>;
}

/** client-go's default ratio RenewDeadline / LeaseDuration = 10 s / 15 s. */
export const RENEW_DEADLINE_RATIO = 10 / 15;

/** Our default retry period (ElectorOptions.retryMs: leaseMs / 7.5), used for both algorithms. */
export const defaultRetryMs = (leaseMs: number) => Math.max(1, Math.floor(leaseMs / 7.5));

export function candidate(algorithm: Algorithm, s: CandidateSettings): Candidate {
  const retryMs = s.retryMs ?? defaultRetryMs(s.leaseMs);
  let resolveElected: (at: number) => void = () => undefined;
  const elected = new Promise<number>((resolve) => {
    resolveElected = resolve;
  });
  if (algorithm === "ours") {
    const elector = new Elector({
      store: s.store,
      name: s.name,
      identity: s.identity,
      leaseMs: s.leaseMs,
      retryMs,
      ...(s.renewMs === undefined ? {} : { renewMs: s.renewMs }),
      ...s.extra,
    });
    elector.on("elected", () => resolveElected(performance.now()));
    return {
      start: () => elector.start(),
      stop: (o) => elector.stop(o),
      elected,
      lastWriteSentAt: () => elector.current.lastRenewalSentAt,
    };
  }
  const polling = new PollingElector({
    store: s.store,
    name: s.name,
    identity: s.identity,
    leaseMs: s.leaseMs,
    retryMs,
    renewDeadlineMs: Math.round(s.leaseMs * RENEW_DEADLINE_RATIO),
  });
  polling.events.elected = () => resolveElected(performance.now());
  return {
    start: () => polling.start(),
    stop: (o) => polling.stop(o),
    elected,
    lastWriteSentAt: () => polling.lastWriteSentAt,
  };
}

/** Resolves `p`, or `undefined` after `ms`. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
