/**
 * The Go elector (clients/go: the API's stateless acquire / renew / release, following the watch
 * stream) beside the TypeScript Elector over the same API (HttpStore: the raw compare-and-swap and
 * the watch stream), one server for both (`leasehold serve` on SQLite, its own process, the
 * default skew bound of 1000 ms), in one run:
 * - failover: the leader crashes (Go: SIGKILL; TypeScript: stop without release, the same for its
 *   follower) at a random point of its renewal interval; time until the follower leads;
 * - handover: the leader stops gracefully (Go: SIGTERM, the work returns, then the release;
 *   TypeScript: stop({ release: true })); time until the follower leads.
 * One leader and one follower per run, leaseMs 2000, runs one after another. Times on
 * CLOCK_MONOTONIC (the Go processes' own stamps, process.hrtime in this process).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HttpStore } from "../src/backends/http/store.js";
import { Elector } from "../src/leader/elector.js";
import { buildGoPrograms } from "../test/support/go-module.js";
import { Cluster, ms, ns, startServeProcess } from "../test/support/process-cluster.js";
import { machineLoad, QUICK, randomBetween, sleep } from "./support/common.js";
import { median, quantile, type Table } from "./table.js";

const LEASE_MS = 2000;
const MAX_SKEW_MS = 1000;
const RUNS = QUICK ? 3 : 10;

type Scenario = "failover" | "handover";

export async function run(): Promise<Table[]> {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-bench-go-"));
  const programs = await buildGoPrograms();
  const server = await startServeProcess(join(dir, "api.db"), MAX_SKEW_MS);
  const results: Record<string, number[]> = {};
  const add = (key: string, value: number) => {
    results[key] = [...(results[key] ?? []), value];
  };
  try {
    let lease = 0;
    for (const scenario of ["failover", "handover"] as const) {
      for (let i = 0; i < RUNS; i++) {
        add(`go|${scenario}`, await goRun(server.url, programs.candidate, dir, scenario, lease++));
        add(`ts|${scenario}`, await typescriptRun(server.url, scenario, lease++));
      }
    }
  } finally {
    await server.stop();
    rmSync(programs.dir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
  const row = (label: string, how: string, key: string) => {
    const failover = results[`${key}|failover`] ?? [];
    const handover = results[`${key}|handover`] ?? [];
    return [
      label,
      how,
      failover.length,
      median(failover),
      quantile(failover, 0.9),
      Math.max(...failover),
      median(handover),
      quantile(handover, 0.9),
      Math.max(...handover),
    ];
  };
  return [
    {
      title: "Go elector beside the TypeScript Elector over the same API",
      note:
        `One API server (leasehold serve, SQLite, its own process, maxSkewMs ${MAX_SKEW_MS}), leaseMs ${LEASE_MS}, ` +
        `renew every leaseMs / 3, one leader and one follower per run, ${RUNS} runs each, ms. Failover: the leader ` +
        "crashes at a random point of its renewal interval (Go: SIGKILL; TypeScript: stop without release). The Go " +
        "elector takes over when the server says the lease is free (renewedAt + leaseMs + maxSkewMs, pushed on the " +
        "watch stream, or after the Retry-After of a refused acquire); the TypeScript Elector tries at its own observed " +
        "time (leaseMs after it first saw the last revision), and the raw compare-and-swap refuses it until the same " +
        "server rule (LeaseStillHeldError, tried again after retryMs). Handover: the leader stops gracefully and releases; the follower " +
        `learns it from the watch stream. Go candidates are processes; the TypeScript ones run in this process. ${machineLoad()} at the end.`,
      columns: [
        "elector",
        "over",
        "runs",
        "failover median",
        "failover p90",
        "failover max",
        "handover median",
        "handover p90",
        "handover max",
      ],
      rows: [
        row("Go Elector (clients/go)", "acquire / renew / release + watch", "go"),
        row("TypeScript Elector", "HttpStore: compare-and-swap + watch", "ts"),
      ],
    },
  ];
}

/** One Go run: two candidate processes; the leader crashes or stops; ms until the other leads. */
async function goRun(url: string, candidate: string, dir: string, scenario: Scenario, n: number): Promise<number> {
  const runDir = mkdtempSync(join(dir, `go-${n}-`));
  const cluster = new Cluster(runDir, 1, (member, log) => ({
    file: candidate,
    args: ["-url", url, "-name", `bench/go-${n}`, "-identity", member, "-log", log, "-lease-ms", String(LEASE_MS)],
  }));
  try {
    const leading = () => cluster.live().find((i) => i.held.buckets.includes(0));
    const leader = cluster.start("a");
    await cluster.waitFor("the first leader", () => (leader.held.buckets.length > 0 ? leader : undefined), 60_000);
    const follower = cluster.start("b");
    await cluster.waitFor("the follower ready", () => (follower.held.at > 0n ? follower : undefined), 60_000);
    await sleep(randomBetween(LEASE_MS / 3, (2 * LEASE_MS) / 3));
    const at = ns();
    if (scenario === "failover") await cluster.kill(leader);
    else {
      leader.dead = true;
      leader.child.kill("SIGTERM");
    }
    const next = await cluster.waitFor(
      "the follower leading",
      () => (leading() === follower ? follower : undefined),
      60_000,
    );
    return ms(next.held.at - at);
  } finally {
    await cluster.close();
  }
}

/** One TypeScript run: two Electors on HttpStore; the leader stops with or without release. */
async function typescriptRun(url: string, scenario: Scenario, n: number): Promise<number> {
  const name = `bench/ts-${n}`;
  const make = (identity: string) =>
    new Elector({ store: new HttpStore({ baseUrl: url }), name, identity, leaseMs: LEASE_MS, maxSkewMs: MAX_SKEW_MS });
  const leader = make("a");
  const follower = make("b");
  try {
    const leaderElected = new Promise<void>((resolve) => leader.on("elected", () => resolve()));
    leader.start();
    await leaderElected;
    const followerElected = new Promise<bigint>((resolve) => follower.on("elected", () => resolve(ns())));
    follower.start();
    await sleep(randomBetween(LEASE_MS / 3, (2 * LEASE_MS) / 3));
    const at = ns();
    await leader.stop({ release: scenario === "handover" });
    return ms((await followerElected) - at);
  } finally {
    await leader.stop();
    await follower.stop({ release: false });
  }
}
