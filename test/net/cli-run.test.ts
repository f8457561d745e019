/**
 * `leasehold run` with real sockets (docs/partitions.md, "leasehold run"): two wrappers on
 * dynalite, each through its own Toxiproxy proxy, run test/support/net-job.ts (a line of work
 * every 20 ms, CLOCK_MONOTONIC, until it is stopped). The running wrapper is cut off (blackholed,
 * then refused) for three leases; the other takes over. From the commands' own lines: no term
 * after a higher one, and the commands never overlap (the cut-off leader's command stopped before
 * the next one's first line).
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkShardedTrace } from "../chaos/sharded-checker.js";
import { S3_TEST_CREDENTIALS } from "../servers/versitygw.server.js";
import { CliProcesses, killMentioning, until } from "../support/cli-processes.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "../support/dynamo-server.js";
import { applyFault, MemberProxies, type NetFault } from "../support/net-scenario.js";
import { type Incarnation, readWork, termsGoBackwards, traceOf } from "../support/process-cluster.js";

const LEASE_MS = 1500;
/** A takeover after a cut: the window runs out, the follower's observed expiry, polls; loaded cores. */
const BOUND_MS = 8 * LEASE_MS;
const job = join(import.meta.dirname, "..", "support", "net-job.ts");
const root = mkdtempSync(join(tmpdir(), "leasehold-net-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("leasehold run through Toxiproxy", () => {
  it("the running wrapper cut off: the other takes over, the commands never overlap", async ({ onTestFinished }) => {
    const admin = dynamoClient(testEndpoint());
    const table = await createLeaseTable(admin);
    admin.destroy();
    const dir = mkdtempSync(join(root, "run-"));
    const ids = ["A", "B"];
    const proxies = await MemberProxies.create(testEndpoint(), ids, "cli");
    const procs = new CliProcesses({
      AWS_ACCESS_KEY_ID: S3_TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_TEST_CREDENTIALS.secretAccessKey,
    });
    onTestFinished(async () => {
      await procs.killAll();
      await killMentioning(dir);
      await proxies.close();
    });
    const logOf = (id: string) => join(dir, `${id}.log`);
    const wrapper = (id: string) =>
      procs.start([
        "run",
        "--lease",
        "net/run",
        "--store",
        `dynamodb://${table}?region=us-east-1&endpoint=${proxies.of(id).url}`,
        "--identity",
        id,
        "--lease-ms",
        String(LEASE_MS),
        "--",
        process.execPath,
        "--import",
        "tsx",
        job,
        logOf(id),
      ]);
    const size = (id: string) => (existsSync(logOf(id)) ? statSync(logOf(id)).size : 0);
    /** The wrapper whose command is writing now. */
    const running = async (): Promise<string> => {
      const before = ids.map(size);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const grew = ids.filter((id, i) => size(id) > before[i]!);
      return grew.length === 1 ? grew[0]! : "";
    };
    // As a supervisor does: a wrapper that lost its lease exits 75 (docs/cli.md) and is started again.
    let stopping = false;
    const exits: Array<number | null> = [];
    const supervise = (id: string) => {
      void wrapper(id).exited.then(({ code }) => {
        exits.push(code);
        if (!stopping) supervise(id);
      });
    };
    supervise("A");
    // Starting node, tsx and the job on loaded cores is no part of any bound.
    await until("A's command running", async () => (await running()) === "A", 120_000);
    supervise("B");
    const cuts: NetFault[] = [
      { kind: "partition", how: "blackhole", ms: 3 * LEASE_MS },
      { kind: "partition", how: "refused", ms: 3 * LEASE_MS },
    ];
    const moved: string[] = [];
    for (const cut of cuts) {
      const leader = await until("a command running", running, BOUND_MS);
      const other = ids.find((id) => id !== leader)!;
      await applyFault(proxies.of(leader), cut);
      await until(
        `${other}'s command running after ${leader} was cut off`,
        async () => (await running()) === other,
        BOUND_MS,
      );
      moved.push(`${cut.kind === "partition" ? cut.how : cut.kind}: ${leader} → ${other}`);
    }
    stopping = true;
    await procs.killAll();
    await killMentioning(dir);
    const lines = readWork(ids.map((id) => ({ name: id, log: logOf(id) }) as Incarnation));
    const trace = traceOf(lines);
    console.log(
      `leasehold run: ${moved.join(", ")}; ${lines.length} lines of work, terms ${[...new Set(lines.map((l) => l.term))].join(",")}`,
    );
    expect(termsGoBackwards(lines)).toEqual([]);
    expect(checkShardedTrace({ buckets: trace, countOf: new Map(), keys: [] })).toEqual([]);
    expect(new Set(lines.map((l) => l.term)).size).toBeGreaterThanOrEqual(3);
  }, 180_000);
});
