/**
 * Goodput under overload (issue #22 item 4): one process holding 1,000 and 10,000 leases renewed
 * every second (leaseMs 3 s), each the only candidate of its lease, then a CPU hog on each core
 * (real processes, `support/load.ts`), then the hog stops. Two paths to the store:
 * - `sqlite`: in-process on SQLite (SqliteStore in this process);
 * - `api`: through the API, `leasehold serve` on SQLite in its own process, one HttpStore here.
 * Per variant: renewals on time (acknowledged at most RENEW_MS / 2 after they were due, due being
 * the previous renewal's send + renewMs), renewals done, terms lost (`deposed`), this process's
 * event-loop delay (perf_hooks.monitorEventLoopDelay), the server's CPU (api), and the recovery time:
 * from the hog's end until three seconds in a row with every lease renewed on time and none lost.
 * Renewals done and on time are counted against what was due: n leases × window / renewMs, so a
 * lost lease counts as renewals missed.
 *
 * Modes (BENCH_OVERLOAD_MODES, comma-separated; default both):
 * - `per-lease`: one Elector per lease renewing its own record (`session: false`, the default
 *   before issue 31);
 * - `default`: `new Elector({ store, name, leaseMs, renewMs })` as the README writes it, which
 *   since issue 31 binds every lease to the process session;
 * - `session-bound`: issue #22 item 3, every lease a bound elector of one process session
 *   (`openSession`, one session write per renewal period whatever the number of leases).
 * BENCH_OVERLOAD_PATHS picks the paths (default `sqlite,api`), BENCH_OVERLOAD_SIZES the lease counts.
 */
import type { ChildProcess } from "node:child_process";
import { cpus } from "node:os";
import { HttpStore } from "../src/backends/http/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import type { BoundElector } from "../src/bound/bound-elector.js";
import { openSession } from "../src/bound/session.js";
import { Elector } from "../src/leader/elector.js";
import type { LeaseStore } from "../src/lease.js";
import { startServeProcess } from "../test/support/process-cluster.js";
import { machineLoad, QUICK, sleep, tempDir, within } from "./support/common.js";
import { eventLoopDelay, type Hogs, type LoopDelay, processCpuMs, startCpuHogs } from "./support/load.js";
import type { Table } from "./table.js";

const LEASE_MS = 3000;
const RENEW_MS = 1000;
const ON_TIME_MS = RENEW_MS / 2;
const BEFORE_MS = QUICK ? 3000 : 10_000;
const HOG_MS = QUICK ? 8000 : 30_000;
const RECOVERY_MAX_MS = QUICK ? 15_000 : 40_000;
/** How long the leases may take to be acquired before the measurement starts anyway. */
const ACQUIRE_MS = 60_000;
/** Leases start spread over max(renewMs, this × leases): at most 500 acquisitions a second. */
const START_SPREAD_MS_PER_LEASE = 2;
/** How long stopping the fleet may take before it is reported and left behind. */
const STOP_MS = 30_000;
/** Seconds in a row that must be healthy for the fleet to count as recovered. */
const HEALTHY_RUN = 3;

const list = (name: string, fallback: string) => (process.env[name] ?? fallback).split(",").map((s) => s.trim());
const MODES = list("BENCH_OVERLOAD_MODES", "per-lease,default,session-bound");
const PATHS = list("BENCH_OVERLOAD_PATHS", "sqlite,api") as Path[];
const SIZES = list("BENCH_OVERLOAD_SIZES", QUICK ? "1000" : "1000,10000").map(Number);

type Path = "sqlite" | "api";

/** What a fleet reports as it runs; `dueAt` and times on performance.now(). */
export interface Probe {
  /** A renewal was acknowledged; it was due at `dueAt`. */
  renewed(dueAt: number): void;
  /** A term ended without a release. */
  lost(): void;
  /** A lease was (re)acquired. */
  gained(): void;
  /** A store call failed (any phase of any lease). */
  failed(): void;
}

export interface Fleet {
  stop(): Promise<void>;
}

export interface FleetOptions {
  /** The store a lease uses (one per process: the same instance every time). */
  store: LeaseStore;
  leases: number;
  prefix: string;
  probe: Probe;
}

/** Starts `leases` leases, spread over one renewal period; resolves once all are started. */
export type FleetFactory = (o: FleetOptions) => Promise<Fleet>;

const FLEETS: Record<string, FleetFactory> = {
  "per-lease": perLeaseFleet,
  default: defaultFleet,
  "session-bound": sessionBoundFleet,
};

/** One Elector per lease, each the only candidate, renewing its own record every RENEW_MS. */
async function perLeaseFleet({ store, leases, prefix, probe }: FleetOptions): Promise<Fleet> {
  const electors = await startSpread(
    leases,
    probe,
    (i) =>
      new Elector({
        store,
        name: `${prefix}/${i}`,
        identity: `p-${i}`,
        leaseMs: LEASE_MS,
        renewMs: RENEW_MS,
        session: false,
      }),
  );
  return { stop: () => Promise.all(electors.map((e) => e.stop({ release: false }))).then(() => undefined) };
}

/**
 * The README's `new Elector`, one per lease, nothing else given: since issue 31 every one of them
 * rides on the process session (a bound elector on `<prefix>/_sessions/slot-0`). Counted as the
 * session-bound fleet is (below).
 */
async function defaultFleet({ store, leases, prefix, probe }: FleetOptions): Promise<Fleet> {
  const electors = await startSpread(
    leases,
    probe,
    (i) => new Elector({ store, name: `${prefix}/${i}`, leaseMs: LEASE_MS, renewMs: RENEW_MS }),
  );
  return { stop: () => Promise.all(electors.map((e) => e.stop({ release: false }))).then(() => undefined) };
}

/**
 * After issue #22 item 3: one process session (`openSession`) renewed with one write per RENEW_MS,
 * every lease a `session.elector(...)` bound to it. A bound elector emits `renewed` once per session
 * renewal while it holds its lease, with `lastRenewalSentAt` the session renewal's send: every
 * lease's validity moves with it, so the probe counts a renewal per bound lease held, due at the
 * previous session renewal's send + RENEW_MS, exactly as for the per-lease fleet.
 */
async function sessionBoundFleet({ store, leases, prefix, probe }: FleetOptions): Promise<Fleet> {
  const session = openSession({
    store,
    name: `${prefix}/_sessions/bench`,
    identity: "overload",
    leaseMs: LEASE_MS,
    renewMs: RENEW_MS,
  });
  session.on("error", () => probe.failed());
  await startSpread(leases, probe, (i) => session.elector({ name: `${prefix}/${i}` }));
  return { stop: () => session.close({ release: false }) };
}

/** Wires each candidate to the probe and starts them spread over max(RENEW_MS, 2 ms × leases). */
async function startSpread<E extends Elector | BoundElector>(
  leases: number,
  probe: Probe,
  make: (i: number) => E,
): Promise<E[]> {
  const electors: E[] = [];
  const started = performance.now();
  const spreadMs = Math.max(RENEW_MS, START_SPREAD_MS_PER_LEASE * leases);
  for (let i = 0; i < leases; i++) {
    const e = make(i);
    let previous: number | undefined;
    e.on("elected", () => {
      probe.gained();
      previous = e.current.lastRenewalSentAt;
    });
    e.on("renewed", () => {
      const sentAt = e.current.lastRenewalSentAt ?? Number.NaN;
      if (previous !== undefined) probe.renewed(previous + RENEW_MS);
      previous = sentAt;
    });
    e.on("deposed", () => probe.lost());
    e.on("error", () => probe.failed());
    electors.push(e);
    // Start them spread out, as leases acquired over time would be (a burst of 10,000 acquisitions
    // at once measures the burst): their renewals still fall evenly over the renewal period.
    const ahead = started + (i * spreadMs) / leases - performance.now();
    if (ahead > 4) await sleep(ahead);
    e.start();
  }
  return electors;
}

interface Counts {
  due: number;
  renewed: number;
  onTime: number;
  lost: number;
  gained: number;
  failed: number;
}
const zero = (): Counts => ({ due: 0, renewed: 0, onTime: 0, lost: 0, gained: 0, failed: 0 });

/** Counts per phase, and per second (for the recovery time), on performance.now(). */
class Recorder implements Probe {
  phase: Counts = zero();
  held = 0;
  private readonly seconds = new Map<number, Counts>();
  private second(): Counts {
    const s = Math.floor(performance.now() / 1000);
    const c = this.seconds.get(s) ?? zero();
    this.seconds.set(s, c);
    return c;
  }
  renewed(dueAt: number): void {
    const onTime = performance.now() - dueAt <= ON_TIME_MS ? 1 : 0;
    for (const c of [this.phase, this.second()]) {
      c.renewed++;
      c.onTime += onTime;
    }
  }
  lost(): void {
    this.held--;
    this.phase.lost++;
    this.second().lost++;
  }
  gained(): void {
    this.held++;
    this.phase.gained++;
  }
  failed(): void {
    this.phase.failed++;
  }
  /** Starts counting a new phase; returns the one that ended, with what was due over `ms`. */
  next(leases: number, ms: number): Counts {
    const ended = { ...this.phase, due: Math.round((leases * ms) / RENEW_MS) };
    this.phase = zero();
    return ended;
  }
  /** The first whole second at or after `fromMs` that starts HEALTHY_RUN healthy seconds, as ms after `fromMs`. */
  recoveredAfter(fromMs: number, leases: number): number | undefined {
    const perSecond = (leases * 1000) / RENEW_MS;
    const healthy = (s: number) => {
      const c = this.seconds.get(s);
      return c !== undefined && c.lost === 0 && c.onTime >= 0.99 * perSecond;
    };
    // Whole seconds only: the current one is still being counted.
    const last = Math.floor(performance.now() / 1000) - HEALTHY_RUN;
    for (let s = Math.ceil(fromMs / 1000); s <= last; s++) {
      if (Array.from({ length: HEALTHY_RUN }, (_, k) => healthy(s + k)).every(Boolean)) return s * 1000 - fromMs;
    }
    return undefined;
  }
}

interface Result {
  path: Path;
  mode: string;
  leases: number;
  heldAtStart?: number;
  before?: Counts;
  hog?: Counts;
  after?: Counts;
  loopBefore?: LoopDelay;
  loopHog?: LoopDelay;
  serverCpuHog?: number;
  recoveryMs?: number;
  problem?: string;
}

export async function run(): Promise<Table[]> {
  const results: Result[] = [];
  for (const leases of SIZES) {
    for (const path of PATHS) {
      for (const mode of MODES) results.push(await variant(path, mode, leases));
    }
  }
  return [overloadTable(results)];
}

async function variant(path: Path, mode: string, leases: number): Promise<Result> {
  const result: Result = { path, mode, leases };
  const fleetFactory = FLEETS[mode];
  if (!fleetFactory) return { ...result, problem: `unknown mode ${mode}` };
  const dir = tempDir("overload");
  let server: { url: string; child: ChildProcess; stop: () => Promise<void> } | undefined;
  let store: LeaseStore;
  if (path === "api") {
    // Creation quotas raised past the fleet: the bench measures renewals, not the create bounds.
    server = await startServeProcess(dir.path("api.db"), 1000, {
      LEASEHOLD_CREATES_PER_MINUTE: "100000",
      LEASEHOLD_RECORDS_PER_PREFIX: "100000",
    });
    store = new HttpStore({ baseUrl: server.url });
  } else store = new SqliteStore({ path: dir.path("leases.db") });
  const probe = new Recorder();
  const loop = eventLoopDelay();
  let fleet: Fleet | undefined;
  let hogs: Hogs | undefined;
  const say = (what: string) => console.error(`overload ${path} ${mode} ${leases}: ${what}`);
  try {
    fleet = await fleetFactory({ store, leases, prefix: `overload/${path}/${mode}`, probe });
    const deadline = performance.now() + ACQUIRE_MS;
    while (probe.held < leases && performance.now() < deadline) await sleep(100);
    // Measured either way: leases never acquired count as renewals missed.
    result.heldAtStart = probe.held;
    say(`${probe.held} held; measuring`);
    await sleep(2 * RENEW_MS); // two renewal rounds before measuring
    probe.next(leases, 0);
    loop.take();
    await sleep(BEFORE_MS);
    result.before = probe.next(leases, BEFORE_MS);
    result.loopBefore = loop.take();
    const cpu0 = processCpuMs(server?.child.pid);
    say("hog on");
    hogs = startCpuHogs();
    const hogStart = performance.now();
    await sleep(HOG_MS);
    const hogMs = performance.now() - hogStart;
    await hogs.stop();
    say("hog off");
    const hogEnd = performance.now();
    result.hog = probe.next(leases, hogMs);
    result.loopHog = loop.take();
    if (server) result.serverCpuHog = ((processCpuMs(server.child.pid) - cpu0) / hogMs) * 100;
    while (performance.now() - hogEnd < RECOVERY_MAX_MS) {
      await sleep(1000);
      const recovered = probe.recoveredAfter(hogEnd, leases);
      if (recovered !== undefined) {
        result.recoveryMs = recovered;
        break;
      }
    }
    result.after = probe.next(leases, performance.now() - hogEnd);
    return result;
  } catch (error) {
    result.problem = (error as Error).message;
    return result;
  } finally {
    loop.stop();
    await hogs?.stop();
    // Bounded: a stop() that does not return is reported, and the next variant still runs.
    if (
      fleet &&
      (await within(
        fleet.stop().then(() => true),
        STOP_MS,
      )) === undefined
    ) {
      result.problem = `${result.problem ? `${result.problem}; ` : ""}stop() of the leases did not return within ${STOP_MS / 1000} s`;
    }
    // The whole result as soon as it exists: a long run cut short still leaves its rows.
    say(`done ${JSON.stringify(result)}`);
    await store.close?.();
    await server?.stop();
    dir.remove();
  }
}

function overloadTable(results: Result[]): Table {
  const pct = (c: Counts | undefined, k: "onTime" | "renewed") => (c && c.due > 0 ? (100 * c[k]) / c.due : "-");
  const problems = results.flatMap((r) =>
    r.problem && r.before ? [`${r.path} ${r.mode} ${r.leases}: ${r.problem}`] : [],
  );
  return {
    title: "Goodput under overload: renewals with a CPU hog on each core",
    note:
      `leaseMs ${LEASE_MS}, renewMs ${RENEW_MS}, each lease the only candidate of its own, started at up to 500 a second (held at start: how many were held ${ACQUIRE_MS / 1000} s later at the most, when measuring starts anyway); ${BEFORE_MS / 1000} s ` +
      `without load, then ${HOG_MS / 1000} s with ${cpus().length} busy-looping processes (one per core), then up to ` +
      `${RECOVERY_MAX_MS / 1000} s after. On time: acknowledged at most ${ON_TIME_MS} ms after due (the previous ` +
      `renewal's send + renewMs), as a share of the renewals due (leases × window / renewMs). Terms lost: deposed ` +
      `under the hog and after it. Loop delay: this process's event loop (monitorEventLoopDelay, ms). Recovery: from ` +
      `the hog's end until ${HEALTHY_RUN} seconds in a row with 99 % of renewals on time and none lost. sqlite: ` +
      `SqliteStore in this process; api: \`leasehold serve\` on SQLite in its own process (its creation quotas raised past the fleet), one HttpStore here ` +
      `(server CPU: 100 % = one core). ${machineLoad()} at the end.` +
      (problems.length > 0 ? ` Anomalies: ${problems.join("; ")}.` : ""),
    columns: [
      "path",
      "mode",
      "leases",
      "held at start",
      "on time, no load %",
      "on time, hog %",
      "done, hog %",
      "terms lost",
      "store errors",
      "loop delay p99, no load",
      "loop delay p99, hog",
      "loop delay max, hog",
      "server CPU %, hog",
      "recovery s",
    ],
    rows: results.map((r) =>
      r.before === undefined
        ? [r.path, r.mode, r.leases, `not measured: ${r.problem}`, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"]
        : [
            r.path,
            r.mode,
            r.leases,
            r.heldAtStart ?? "-",
            pct(r.before, "onTime"),
            pct(r.hog, "onTime"),
            pct(r.hog, "renewed"),
            (r.hog?.lost ?? 0) + (r.after?.lost ?? 0),
            (r.hog?.failed ?? 0) + (r.after?.failed ?? 0),
            r.loopBefore?.p99 ?? "-",
            r.loopHog?.p99 ?? "-",
            r.loopHog?.max ?? "-",
            r.serverCpuHog ?? "-",
            r.recoveryMs === undefined ? `> ${RECOVERY_MAX_MS / 1000}` : r.recoveryMs / 1000,
          ],
    ),
  };
}
