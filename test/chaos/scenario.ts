/**
 * One seeded chaos scenario on the manual clock: 2-5 candidates compete for one lease through a
 * faulty network (chaos-store.ts) while some are paused past their lease, crashed without a
 * release, stopped gracefully and restarted; every candidate's wall clock is skewed within
 * maxSkewMs and its monotonic clock may run fast or slow within the drift bound safetyMs covers
 * (`driftBound`). Leaders write to a fenced resource while they believe they lead, paused or not.
 * Afterwards the checker (checker.ts) judges the trace. Everything derives from `seed`.
 *
 * Three modes (docs/design.md §4 "Bound leases"):
 * - plain: every candidate is a `runAsLeader` Elector that renews the lease itself;
 * - bound: every candidate process opens a session (`openSession`, record
 *   `chaos/_sessions/c<slot>`, reused by a restart in that slot) and runs `session.elector` through
 *   `runLeader`: followers register as successors, fence expired sessions, and a graceful stop
 *   hands the lease over (or releases it) and then closes the session;
 * - default: every candidate is `runAsLeader` as the README writes it, which binds the lease to
 *   the process session (src/bound/process-sessions.ts: slots `chaos/_sessions/slot-N` claimed by
 *   each process, given up when found taken, reused after a restart);
 * - mixed: each slot draws plain, bound or default from the seed. A plain Elector never takes over a record
 *   bound to a session (by design), so only safety is asserted there, not liveness.
 * "plain" is an Elector renewing its own record (`session: false`).
 */

import { HttpStore } from "../../src/backends/http/store.js";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { openSession } from "../../src/bound/session.js";
import { ManualClock } from "../../src/clock.js";
import type { Elector } from "../../src/leader/elector.js";
import { type LeaderContext, type LeaderElector, runAsLeader, runLeader } from "../../src/leader/run-as-leader.js";
import type { LeaseStore } from "../../src/lease.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";
import { SIM_API_URL, SimServer } from "./api-world.js";
import { type AppliedPut, ChaosStore, type FaultProfile, Network } from "./chaos-store.js";
import { checkTrace, type Election, SafeWindowTracker } from "./checker.js";
import { FencedResource } from "./fenced-resource.js";
import { Prng } from "./prng.js";
import { type MonotonicFaults, SimProcess } from "./process.js";

export type Backend = "memory" | "sqlite";

/** Which candidates compete: plain Electors, session-bound electors, or some of each (see the header). */
export type Mode = "plain" | "bound" | "default" | "mixed";
export const MODES: readonly Mode[] = ["plain", "bound", "default", "mixed"];

/** One candidate process's kind. */
type Kind = "plain" | "bound" | "default";

export interface ScenarioOptions {
  /** Which candidates compete (default "plain"). */
  mode?: Mode;
  /** Record a human-readable timeline (for replays). */
  verbose?: boolean;
  /**
   * Wall-clock skew between candidates as a multiple of maxSkewMs. The default (0.5 either way, so
   * at most 1x between any two) stays inside the bound; above 1 breaks the stated assumption, which
   * the checker must notice (see chaos.test.ts).
   */
  skewFactor?: number;
  /**
   * Monotonic clock rate drift as a multiple of `driftBound` (default 1: at most the bound, so
   * safety must hold). Above 1 breaks the assumption safetyMs is sized for (see chaos.test.ts).
   */
  driftFactor?: number;
  /** Replace the fenced resource's rule with "accept everything" (checker self-test). */
  unfenced?: boolean;
  /**
   * Candidates reach the store only through the HTTP API (api-world.ts): HttpStores over the
   * chaos network to the API's app on a server with its own skewed wall clock, whose holding
   * rules judge every write. Followers poll (no push).
   */
  api?: boolean;
}

export interface ScenarioStats {
  /** Injected faults by kind (network and process). */
  faults: Record<string, number>;
  elections: number;
  /** Elections won by session-bound candidates. */
  boundElections: number;
  /** Lease writes by one candidate naming another as holder at term + 1 (a graceful stop handing over). */
  handovers: number;
  /** Elections of a term the store applied from another candidate's write (a successor leading after a hand-over). */
  handoverElections: number;
  /** Lease writes by a candidate registering itself as successor. */
  registrations: number;
  /** Session records released (holder null) by another candidate than their owner: an expired session fenced. */
  sessionFences: number;
  fencedAccepted: number;
  fencedRejected: number;
  /** Fenced writes sent by a candidate that believed it led but was past its safe window. */
  staleWrites: number;
  electorErrors: number;
  /** With `api`: writes the server's holding rules refused (409). */
  apiRefusals: number;
  virtualMs: number;
}

export interface ScenarioResult {
  seed: number;
  backend: Backend;
  mode: Mode;
  summary: string;
  violations: string[];
  stats: ScenarioStats;
  timeline: string[];
}

interface Timing {
  leaseMs: number;
  renewMs: number;
  retryMs: number;
  safetyMs: number;
  maxSkewMs: number;
  jitter: number;
  writeEveryMs: number;
}

/**
 * The largest monotonic clock rate drift |d| that `safetyMs` covers, each clock running at
 * (1 + d) times true time with |d| <= bound.
 *
 * A leader that sent its last successful write at true time s is safe until its own clock has
 * advanced by (leaseMs - safetyMs): true time s + (leaseMs - safetyMs) / (1 + d_leader). A follower
 * first sees that write's revision at some true time o >= s (it cannot see it before it was sent)
 * and takes over once its own clock has advanced by leaseMs: true time o + leaseMs / (1 + d_follower).
 * The worst case is o = s, the leader slow (d_leader = -d) and the follower fast (d_follower = +d).
 * The windows cannot overlap when
 *
 *     (leaseMs - safetyMs) / (1 - d) <= leaseMs / (1 + d)
 *     <=> (leaseMs - safetyMs)(1 + d) <= leaseMs (1 - d)
 *     <=> d <= safetyMs / (2 leaseMs - safetyMs)
 *
 * (1/19, about 5.3 %, for the default safetyMs = leaseMs / 10). Wall clocks do not drift (their
 * offset stays within maxSkewMs), so the wall-clock shortcut for stale records waits at least
 * leaseMs of true time after the send; that is safe when (leaseMs - safetyMs) / (1 - d) <= leaseMs,
 * i.e. d <= safetyMs / leaseMs, which the bound above already implies. The bound is tight in the
 * harness: at 1.05x it, a few seeds in a few hundred overlap.
 */
export function driftBound(leaseMs: number, safetyMs: number): number {
  return safetyMs / (2 * leaseMs - safetyMs);
}

/** What the harness reads of a candidate of either kind. */
type Candidate = LeaderElector & Pick<Elector, "current" | "signal">;

interface Instance {
  label: string;
  identity: string;
  kind: Kind;
  process: SimProcess;
  elector: Candidate | undefined;
  stop: AbortController;
  stopping: boolean;
}

interface Action {
  at: number;
  seq: number;
  run: () => Promise<void> | void;
}

const LEASE = "chaos/lease";
const SESSIONS = "chaos/_sessions/";

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));

function drawTiming(rng: Prng): Timing {
  const leaseMs = rng.pick([500, 1000, 2000]);
  const renewMs = Math.round(leaseMs * rng.between(0.2, 0.45));
  return {
    leaseMs,
    renewMs,
    retryMs: Math.max(1, Math.round(leaseMs * rng.between(0.05, 0.2))),
    safetyMs: Math.round(leaseMs / 10),
    maxSkewMs: Math.round(leaseMs * rng.pick([0, 0.1, 0.5])),
    jitter: rng.pick([0, 0.2]),
    writeEveryMs: Math.max(1, Math.round(renewMs * rng.between(0.2, 0.6))),
  };
}

export function drawProfile(rng: Prng, t: Pick<Timing, "leaseMs">, backend: Backend): FaultProfile {
  const some = (max: number) => (rng.chance(0.6) ? rng.between(0, max) : 0);
  return {
    baseLatencyMs: rng.between(0, t.leaseMs * 0.02),
    tailP: some(0.1),
    tailMs: [t.leaseMs * 0.05, t.leaseMs * 0.8],
    lostRequestP: some(0.03),
    failBeforeP: some(0.05),
    ambiguousBeforeP: some(0.05),
    failAfterP: some(0.05),
    lostResponseP: some(0.03),
    reorderP: some(0.06),
    maxHoldMs: t.leaseMs * 1.5,
    getFailP: some(0.05),
    getHangP: some(0.02),
    watch: backend === "memory" && rng.chance(0.5),
  };
}

export async function runScenario(
  seed: number,
  backend: Backend,
  options: ScenarioOptions = {},
): Promise<ScenarioResult> {
  const rng = new Prng(seed);
  const t = drawTiming(rng);
  const profile = drawProfile(rng, t, backend);
  const mode = options.mode ?? "plain";
  const slots = rng.int(2, 5);
  const durationMs = t.leaseMs * rng.int(10, 25);
  const timeline: string[] = [];
  const violations: string[] = [];

  const tracker = new SafeWindowTracker();
  const instances: Instance[] = [];
  const clock: ManualClock = new ManualClock({ idle: () => settle() });
  const settle = async () => {
    await immediate();
    await immediate();
    // The server's own asynchronous steps (digests) are not the clock's: let every request it is
    // serving finish before time moves on, so a seed replays exactly.
    while (server?.busy) {
      await server.idle();
      await immediate();
      await immediate();
    }
    for (const i of instances) tracker.sample(i.label, clock.now(), belief(i));
  };
  const log = (line: string) => {
    if (options.verbose) timeline.push(`${String(Math.round(clock.now() * 100) / 100).padStart(8)} ${line}`);
  };

  const inner: LeaseStore = backend === "memory" ? new MemoryStore() : new SqliteStore({ path: ":memory:" });
  const network = new Network(clock, rng.fork(), profile);
  let server: SimServer | undefined;
  const resource = new FencedResource();
  if (options.unfenced) resource.land = unfencedLand(resource);
  const elections: Election[] = [];
  let staleWrites = 0;
  let electorErrors = 0;
  let generation = 0;

  const skew = options.skewFactor ?? 0.5;
  const wallOffsets = Array.from({ length: slots }, () => Math.round(rng.between(-skew, skew) * t.maxSkewMs));
  for (const offset of wallOffsets) if (offset !== 0) network.count("wall-skew");
  // One oscillator per slot (a machine): a restarted candidate keeps its slot's rate and origin.
  // Half the drifting clocks sit exactly at the bound (fast or slow), where safety is tightest.
  const clockRng = rng.fork();
  const maxDrift = (options.driftFactor ?? 1) * driftBound(t.leaseMs, t.safetyMs);
  const drifting = clockRng.chance(0.8);
  const monotonic: MonotonicFaults[] = Array.from({ length: slots }, () => ({
    driftRate: drifting ? maxDrift * (clockRng.chance(0.5) ? clockRng.pick([-1, 1]) : clockRng.between(-1, 1)) : 0,
    originMs: clockRng.int(0, 100) * t.leaseMs,
  }));
  for (const m of monotonic) if (m.driftRate !== 0) network.count("clock-drift");
  if (options.api) {
    // Drawn only with the API, so the other seeds' draws stay as they were.
    const offset = Math.round(rng.fork().between(-skew, skew) * t.maxSkewMs);
    if (offset !== 0) network.count("wall-skew");
    server = new SimServer(inner, network, clock, offset, settle, t.maxSkewMs);
    log(`the API serves with its wall clock offset ${offset} ms`);
  }
  // Drawn only in mixed mode, so a plain or bound seed's other draws stay as they were.
  const kindRng = mode === "mixed" ? rng.fork() : undefined;
  const kinds: Kind[] = Array.from({ length: slots }, () =>
    mode === "mixed" ? kindRng!.pick<Kind>(["plain", "bound", "default"]) : mode,
  );
  if (options.verbose) {
    // Each write that changes a record's holder, term or successor (renewals left out).
    const last = new Map<string, string>();
    network.onApply = (w) => {
      const what = `term ${w.term} holder ${w.holder}${w.successor ? ` successor ${w.successor}` : ""}`;
      if (last.get(w.name) === what) return;
      last.set(w.name, what);
      log(`store applies ${w.name} ${what} (from ${w.sender})`);
    };
  }

  function belief(i: Instance): { term: number; until: number } | undefined {
    const e = i.elector;
    if (!e) return undefined;
    const state = e.current;
    const signal = e.signal;
    if (!state.isLeader || !signal || signal.aborted || state.leaderUntil === undefined) return undefined;
    // leaderUntil is on the candidate's own clock; the checker judges on true time.
    return { term: state.term, until: i.process.clock.toTrue(state.leaderUntil) };
  }

  function spawn(slot: number): Instance {
    const identity = `c${slot}`;
    const label = `${identity}#${generation++}`;
    const kind = kinds[slot] ?? "plain";
    const process = new SimProcess(label, clock, wallOffsets[slot] ?? 0, settle, monotonic[slot]);
    const instance: Instance = {
      label,
      identity,
      kind,
      process,
      elector: undefined,
      stop: new AbortController(),
      stopping: false,
    };
    instances.push(instance);
    const random = rng.fork();
    const store: LeaseStore = server
      ? new StoreWrapper(
          new HttpStore({
            baseUrl: SIM_API_URL,
            fetch: server.fetchFor(process),
            instance: `chaos-instance-${label.replace("#", "-")}`,
            timeoutMs: t.leaseMs,
          }),
          { without: ["watch"] },
        )
      : new ChaosStore(inner, network, process);
    log(
      `${label} starts ${kind} (wall offset ${wallOffsets[slot]} ms, monotonic rate ${process.clock.rate}, origin ${process.clock.originMs})`,
    );
    const timing = {
      identity,
      leaseMs: t.leaseMs,
      renewMs: t.renewMs,
      retryMs: t.retryMs,
      safetyMs: t.safetyMs,
      maxSkewMs: t.maxSkewMs,
      jitter: t.jitter,
      clock: process.clock,
      random: () => random.next(),
    };
    const watch = (elector: Candidate) => {
      instance.elector = elector;
      elector.on("elected", ({ term }) => {
        elections.push({ candidate: label, identity, term, at: clock.now() });
        const until = elector.current.leaderUntil;
        const trueUntil = until === undefined ? undefined : process.clock.toTrue(until);
        log(`${label} elected term ${term} until ${until} on its clock (${trueUntil} true)`);
      });
      elector.on("deposed", ({ term, reason }) => log(`${label} deposed term ${term}: ${reason}`));
      elector.on("error", ({ during, error }) => {
        electorErrors++;
        log(`${label} error during ${during}: ${(error as Error).message}`);
      });
    };
    // A leader's work: write with its fencing token every so often, checking only its signal,
    // as an application would. A paused leader wakes with the signal not yet aborted and writes.
    const work = async ({ term, signal }: LeaderContext) => {
      while (!signal.aborted) {
        await process.clock.sleep(t.writeEveryMs, signal);
        if (signal.aborted) return;
        const sentAt = clock.now();
        const until = instance.elector?.current.leaderUntil;
        if (until === undefined || process.clock.now() >= until) staleWrites++;
        void network.travel().then(() => {
          const accepted = resource.land(label, term, sentAt, clock.now());
          if (!accepted) log(`resource rejects term ${term} from ${label} (sent at ${sentAt})`);
        });
      }
    };
    const failed = (error: unknown) =>
      violations.push(`harness: ${label} ${kind === "bound" ? "runLeader" : "runAsLeader"} failed: ${String(error)}`);
    if (kind !== "bound") {
      const session = kind === "default"; // plain: the Elector that renews its own record
      runAsLeader(
        { ...timing, store, name: LEASE, session, signal: instance.stop.signal, onElector: watch },
        work,
      ).catch(failed);
      return instance;
    }
    // One session per process, its record named by the slot (a restart reuses it). A graceful
    // stop stops the elector (hand-over or release) and then closes the session; a crash freezes both.
    const session = openSession({ ...timing, store, name: `${SESSIONS}${identity}` });
    session.on("established", ({ term }) => log(`${label} session ${term} established`));
    session.on("lost", ({ term, reason }) => log(`${label} session ${term} lost: ${reason}`));
    session.on("error", ({ during, error }) => {
      electorErrors++;
      log(`${label} session error during ${during}: ${(error as Error).message}`);
    });
    const elector = session.elector({ name: LEASE });
    watch(elector);
    runLeader(elector, work, { signal: instance.stop.signal })
      .then(() => session.close())
      .then(() => log(`${label} session closed`))
      .catch(failed);
    return instance;
  }

  // ---- the schedule of process faults ----
  const actions: Action[] = [];
  let seq = 0;
  const at = (when: number, run: Action["run"]) => actions.push({ at: when, seq: seq++, run });
  const current: Array<Instance | undefined> = new Array(slots).fill(undefined);

  const live = () =>
    current.filter((i): i is Instance => i !== undefined && i.process.current !== "crashed" && !i.stopping);
  /** The current leader when `preferLeader` and there is one (the interesting victim), else anyone. */
  const victim = (preferLeader: boolean): Instance | undefined => {
    const candidates = live();
    const leaders = candidates.filter((i) => i.elector?.current.isLeader);
    const pool = preferLeader && leaders.length > 0 ? leaders : candidates;
    return pool.length > 0 ? rng.pick(pool) : undefined;
  };
  const restartLater = (slot: number) => {
    if (!rng.chance(0.6)) return;
    at(clock.now() + rng.between(0, 2 * t.leaseMs), () => {
      if (!current[slot] || current[slot].process.current === "crashed" || current[slot].stopping) {
        network.count("restart");
        current[slot] = spawn(slot);
      }
    });
  };
  const slotOf = (i: Instance) => current.indexOf(i);

  for (let slot = 0; slot < slots; slot++) {
    at(rng.chance(0.5) ? 0 : rng.between(0, t.leaseMs), () => {
      current[slot] = spawn(slot);
    });
  }
  for (let n = rng.int(0, 4); n > 0; n--) {
    const preferLeader = rng.chance(0.75);
    const forMs = t.leaseMs * rng.between(0.5, 3);
    at(rng.between(0, durationMs * 0.8), () => {
      const target = victim(preferLeader);
      if (target?.process.current !== "running") return;
      network.count("pause");
      log(`${target.label} paused for ${Math.round(forMs)} ms (backlog replays on resume)`);
      target.process.pause();
      at(clock.now() + forMs, async () => {
        log(`${target.label} resumes with ${target.process.backlog} late wake-ups`);
        await target.process.resume();
      });
    });
  }
  for (let n = rng.int(0, 2); n > 0; n--) {
    const preferLeader = rng.chance(0.6);
    at(rng.between(0, durationMs * 0.8), () => {
      const target = victim(preferLeader);
      if (!target) return;
      network.count("crash");
      log(`${target.label} crashes (no release)`);
      target.process.crash();
      restartLater(slotOf(target));
    });
  }
  // Sessions stop more often and mostly as leaders: a hand-over needs a leader stopping gracefully
  // while a follower is registered as its successor.
  const sessions = mode !== "plain";
  for (let n = sessions ? rng.int(1, 3) : rng.int(0, 1); n > 0; n--) {
    const preferLeader = rng.chance(sessions ? 0.85 : 0.6);
    at(rng.between(0, durationMs * 0.8), () => {
      const target = victim(preferLeader);
      if (!target) return;
      network.count("graceful-stop");
      log(`${target.label} stops gracefully`);
      target.stopping = true;
      // The stop request is the process's own code: it runs when the process does.
      target.process.deliver(() => target.stop.abort());
      restartLater(slotOf(target));
    });
  }

  // ---- run ----
  for (;;) {
    actions.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const next = actions[0];
    if (!next || next.at > durationMs) break;
    actions.shift();
    await clock.advanceTo(next.at);
    await next.run();
    await settle();
  }
  await clock.advanceTo(durationMs);
  tracker.closeAll(clock.now());
  // Freeze everyone: nothing of this scenario runs on after it has been judged.
  for (const i of instances) i.process.crash();

  violations.push(
    ...checkTrace({
      elections,
      windows: tracker.windows,
      storeWrites: network.applied,
      lease: LEASE,
      fenced: resource.writes,
    }),
  );
  const final = await inner.get(LEASE);
  const maxElected = Math.max(0, ...elections.map((e) => e.term));
  if ((final?.record.term ?? 0) < maxElected) {
    violations.push(`store term ${final?.record.term} is below the highest elected term ${maxElected}`);
  }
  await inner.close?.();

  return {
    seed,
    backend,
    mode,
    summary: `${mode === "mixed" ? `mixed (${kinds.join("/")})` : mode}: ${slots} candidates, lease ${t.leaseMs} ms, renew ${t.renewMs}, retry ${t.retryMs}, safety ${t.safetyMs}, maxSkew ${t.maxSkewMs}, drift ${monotonic.map((m) => m.driftRate?.toFixed(4)).join("/")}, ${durationMs} ms, ${server ? "through the API" : `watch ${profile.watch}`}`,
    violations,
    stats: {
      faults: Object.fromEntries(network.faults),
      elections: elections.length,
      boundElections: elections.filter((e) => instances.find((i) => i.label === e.candidate)?.kind !== "plain").length,
      ...sessionStats(network.applied, elections),
      fencedAccepted: resource.accepted,
      fencedRejected: resource.rejected,
      staleWrites,
      electorErrors,
      apiRefusals: server?.answers.get(409) ?? 0,
      virtualMs: durationMs,
    },
    timeline,
  };
}

/** A candidate instance's identity: its label up to `#` (`c2#7` is process 7, in slot c2). */
const identityOf = (label: string) => label.slice(0, label.indexOf("#"));

/**
 * What the store's ground truth says the bound machinery did: hand-overs, registrations and
 * session fences, read off the applied writes in the order they applied.
 */
export function sessionStats(
  applied: readonly AppliedPut[],
  elections: readonly Election[],
): Pick<ScenarioStats, "handovers" | "handoverElections" | "registrations" | "sessionFences"> {
  let handovers = 0;
  let registrations = 0;
  let sessionFences = 0;
  let leaseTerm = 0;
  /** Who wrote each term of the lease with a holder in (its first such write). */
  const writerOfTerm = new Map<number, string>();
  for (const w of applied) {
    const sender = identityOf(w.sender);
    if (w.name === LEASE) {
      if (w.holder !== null && w.holder !== sender && w.term === leaseTerm + 1) handovers++;
      if (w.successor === sender && w.holder !== sender) registrations++;
      if (w.holder !== null && !writerOfTerm.has(w.term)) writerOfTerm.set(w.term, sender);
      leaseTerm = w.term;
    } else if (w.name.startsWith(SESSIONS) && w.holder === null && w.name.slice(SESSIONS.length) !== sender) {
      sessionFences++;
    }
  }
  const handoverElections = elections.filter((e) => {
    const writer = writerOfTerm.get(e.term);
    return writer !== undefined && writer !== e.identity;
  }).length;
  return { handovers, handoverElections, registrations, sessionFences };
}

/** A broken resource for the checker's self-test: it takes every write. */
function unfencedLand(resource: FencedResource): FencedResource["land"] {
  return (writer, term, sentAt, landedAt) => {
    resource.writes.push({ writer, term, sentAt, landedAt, accepted: true });
    return true;
  };
}
