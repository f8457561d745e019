/**
 * Sharded leadership with real OS processes and real signals (docs/sharding.md, "Testing"): four
 * members (test/support/shard-worker.ts) share 16 buckets, once as library members on one SQLite
 * file and once as remote members of the HTTP API (the Node server, `leasehold serve`, in its own
 * process). The test SIGKILLs members (restarting them under the same id, later or at once) and
 * SIGSTOPs one until the others have taken its buckets, then SIGCONTs it; with remote members, it
 * also stalls the API server (SIGSTOP) for one lease.
 *
 * Every line of work a process writes carries its bucket, term and CLOCK_MONOTONIC stamp
 * (`process.hrtime.bigint()`, one clock for every process on the machine). From those lines alone:
 * - no bucket's term-T line follows, on that clock, a line of a higher term for that bucket;
 * - no two processes work on one bucket in overlapping intervals, one process per bucket term
 *   (the chaos harness's own checker, test/chaos/sharded-checker.ts, run on the logs);
 * - after each fault the live members balance (each floor or ceil of 16 / M buckets, every bucket
 *   once) within the bound docs/sharding.md states, from the fault (or the restarted process's
 *   first line: starting a process is no part of the bound) to the last
 *   change of held buckets that completed the balance, as the processes reported it.
 *
 * The schedule is seeded (SHARD_PROCESS_SEED, default 5): the order of the faults, their victims
 * and how many lines each victim writes first. Nothing waits on a timer: every step waits for the
 * processes' own output, within the documented bound.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Prng } from "../chaos/prng.js";
import { checkShardedTrace } from "../chaos/sharded-checker.js";
import {
  Cluster,
  ms,
  ns,
  readWork,
  shardBalanceBoundMs,
  shardWorkerCommand,
  startServeProcess,
  termsGoBackwards,
  traceOf,
  type WorkLine,
} from "../support/process-cluster.js";

const BUCKETS = 16;
const MEMBERS = 4;
const LEASE_MS = 1000;
/** The API server's skew bound for this test: one server, so it only delays takeovers. */
const MAX_SKEW_MS = 100;
const SEED = Number(process.env.SHARD_PROCESS_SEED ?? 5);
/** Forming the group from four cold processes (tsx start-up on loaded cores): not a documented bound. */
const FORMING_MS = 60_000;

/** docs/sharding.md's bound on balancing 16 buckets over `members` with this test's lease. */
const balanceBoundMs = (members: number) => shardBalanceBoundMs(BUCKETS, members, LEASE_MS);

const root = mkdtempSync(join(tmpdir(), "leasehold-shard-procs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Fault = "kill" | "kill-restart" | "pause" | "server-stall";

interface Measured {
  fault: Fault;
  victim: string;
  /** From the fault to balanced over the others (kill, pause), ms. */
  absorbedMs?: number;
  /** From the restarted process's first line (kill, kill-restart) or the SIGCONT (pause, server-stall) to balanced over all four, ms. */
  rejoinedMs: number;
}

async function runFaults(cluster: Cluster, rng: Prng): Promise<Measured[]> {
  const formed = await cluster.waitFor("balanced over 4 (forming)", () => cluster.balanced(), FORMING_MS);
  expect(formed.loads).toEqual([4, 4, 4, 4]);
  const faults: Fault[] = ["kill", "pause", "kill-restart"];
  for (let i = faults.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [faults[i], faults[j]] = [faults[j]!, faults[i]!];
  }
  const measured: Measured[] = [];
  for (const fault of faults) {
    const victim = rng.pick(cluster.live());
    await cluster.linesWritten(victim, rng.int(5, 40));
    const three = balanceBoundMs(MEMBERS - 1);
    const four = balanceBoundMs(MEMBERS);
    if (fault === "pause") {
      const at = ns();
      victim.child.kill("SIGSTOP");
      victim.paused = true;
      const absorbed = await cluster.waitFor(
        `balanced over 3 with ${victim.name} paused`,
        () => cluster.balanced(),
        three,
      );
      const cont = ns();
      victim.paused = false;
      victim.child.kill("SIGCONT");
      const back = await cluster.waitFor(`balanced over 4 after ${victim.name} woke`, () => cluster.balanced(), four);
      measured.push({ fault, victim: victim.name, absorbedMs: ms(absorbed.at - at), rejoinedMs: ms(back.at - cont) });
    } else if (fault === "kill") {
      const at = await cluster.kill(victim);
      const absorbed = await cluster.waitFor(
        `balanced over 3 after ${victim.name} was killed`,
        () => cluster.balanced(),
        three,
      );
      const restartAt = await cluster.ready(cluster.start(victim.member));
      const back = await cluster.waitFor(
        `balanced over 4 after ${victim.member} restarted`,
        () => cluster.balanced(),
        four,
      );
      measured.push({
        fault,
        victim: victim.name,
        absorbedMs: ms(absorbed.at - at),
        rejoinedMs: ms(back.at - restartAt),
      });
    } else {
      // Restarted at once under the same id: the new process waits out the old session first.
      await cluster.kill(victim);
      const at = await cluster.ready(cluster.start(victim.member));
      const back = await cluster.waitFor(
        `balanced over 4 after ${victim.member} was killed and restarted at once`,
        () => cluster.balanced(),
        four,
      );
      measured.push({ fault, victim: victim.name, rejoinedMs: ms(back.at - at) });
    }
  }
  return measured;
}

/**
 * The API server stalls (SIGSTOP of `leasehold serve`) for one lease, then answers again: every
 * member's window closes meanwhile (it stops all work), and sessions expire by the server's clock.
 * No bucket may stay with a member that stopped it: balanced over all four again, from reports of
 * what they hold made after the server woke, within the bound for a rejoin.
 */
async function stallServer(cluster: Cluster, server: ChildProcess): Promise<Measured> {
  await cluster.linesWritten(cluster.live()[0]!, 10);
  server.kill("SIGSTOP");
  await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
  const cont = ns();
  server.kill("SIGCONT");
  const back = await cluster.waitFor(
    "balanced over 4 after the API server stalled for a lease",
    () => {
      const balance = cluster.balanced();
      return balance && balance.at > cont ? balance : undefined;
    },
    balanceBoundMs(MEMBERS),
  );
  return { fault: "server-stall", victim: "the API server", rejoinedMs: ms(back.at - cont) };
}

function checkLogs(cluster: Cluster, label: string, measured: Measured[], faults: number): void {
  const lines = readWork(cluster.incarnations);
  const trace = traceOf(lines);
  const summary = measured
    .map(
      (m) =>
        `${m.fault} ${m.victim}: ${m.absorbedMs === undefined ? "" : `others balanced ${m.absorbedMs.toFixed(0)} ms after the fault, `}all four ${m.rejoinedMs.toFixed(0)} ms after ${m.fault.startsWith("kill") ? "the new process was ready" : "SIGCONT"}`,
    )
    .join("; ");
  console.log(
    `${label} (seed ${SEED}, lease ${LEASE_MS} ms, bounds ${balanceBoundMs(3).toFixed(0)}/${balanceBoundMs(4).toFixed(0)} ms): ${summary}; ${lines.length} lines of work, ${[...trace.values()].reduce((n, t) => n + t.elections.length, 0)} bucket tenures`,
  );
  expect(cluster.crashes).toEqual([]);
  expect(termsGoBackwards(lines), `seed ${SEED}`).toEqual([]);
  expect(checkShardedTrace({ buckets: trace, countOf: new Map(), keys: [] }), `seed ${SEED}`).toEqual([]);
  // Every bucket was worked on, and by more than one process over the run (the faults moved them).
  expect([...trace.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: BUCKETS }, (_, b) => b));
  expect(measured).toHaveLength(faults);
}

describe("sharded leadership across OS processes: SIGKILL, SIGSTOP past the lease, restarts", () => {
  it("the 'one clock' checks find a term written after a higher one and two processes in one bucket at once", () => {
    const line = (at: number, bucket: number, term: number, incarnation: string): WorkLine => ({
      at: BigInt(at) * 1_000_000n,
      bucket,
      term,
      incarnation,
      member: incarnation.split(".")[0]!,
    });
    expect(termsGoBackwards([line(1, 0, 1, "a.0"), line(5, 0, 2, "b.0"), line(6, 1, 1, "a.0")])).toEqual([]);
    expect(termsGoBackwards([line(1, 0, 1, "a.0"), line(5, 0, 2, "b.0"), line(6, 0, 1, "a.0")])).toEqual([
      "bucket 0: a.0 wrote term 1 1.000 ms after b.0's term 2",
    ]);
    const overlap = traceOf([line(1, 0, 1, "a.0"), line(4, 0, 2, "b.0"), line(3, 0, 1, "a.0"), line(6, 0, 2, "b.0")]);
    expect(checkShardedTrace({ buckets: overlap, countOf: new Map(), keys: [] })).toEqual([]);
    const twice = traceOf([line(1, 0, 1, "a.0"), line(4, 0, 2, "b.0"), line(5, 0, 1, "a.0")]);
    expect(checkShardedTrace({ buckets: twice, countOf: new Map(), keys: [] }).join("\n")).toContain(
      "two candidates inside their safe windows at once",
    );
  });

  it("library members on one SQLite file", async ({ onTestFinished }) => {
    const dir = mkdtempSync(join(root, "sqlite-"));
    const cluster = new Cluster(
      dir,
      BUCKETS,
      shardWorkerCommand("sqlite", join(dir, "group.db"), "procs/group", LEASE_MS, BUCKETS),
    );
    onTestFinished(() => cluster.close());
    for (let i = 0; i < MEMBERS; i++) cluster.start(`m${i}`);
    const measured = await runFaults(cluster, new Prng(SEED));
    await cluster.close();
    checkLogs(cluster, "SQLite", measured, 3);
  }, 180_000);

  it("remote members of the HTTP API (the Node server in its own process)", async ({ onTestFinished }) => {
    const dir = mkdtempSync(join(root, "http-"));
    const server = await startServeProcess(join(dir, "api.db"), MAX_SKEW_MS);
    onTestFinished(() => server.stop());
    const url = server.url;
    const cluster = new Cluster(dir, BUCKETS, shardWorkerCommand("http", url, "procs/group", LEASE_MS, BUCKETS));
    onTestFinished(() => cluster.close());
    for (let i = 0; i < MEMBERS; i++) cluster.start(`m${i}`);
    const measured = await runFaults(cluster, new Prng(SEED + 1));
    measured.push(await stallServer(cluster, server.child));
    await cluster.close();
    checkLogs(cluster, "HTTP API", measured, 4);
  }, 180_000);
});
