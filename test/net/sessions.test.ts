/**
 * Bound sessions and sharded members with real sockets (docs/partitions.md, "Bound leases" and
 * "Sharded groups"):
 * - two processes with 10 bound leases each on one session (test/support/net-candidate.ts,
 *   "bound"), on dynalite, each through its own Toxiproxy proxy: the process leading the leases
 *   is cut off (refused, then blackholed, two leases long), then healed; every lease is led again
 *   within a bound;
 * - three remote members of a sharded group of 16 buckets (test/support/shard-worker.ts, "http")
 *   reaching `leasehold serve` each through its own proxy: one member is cut off (blackholed, then
 *   half-open) past its session, then healed; the group balances again within docs/sharding.md's
 *   bound.
 * From the processes' own logs, per lease or bucket: no term written after a higher one, no two
 * processes inside their windows at once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLeaseTable, dynamoClient, testEndpoint } from "../support/dynamo-server.js";
import {
  applyFault,
  checkNetLogs,
  type FaultResult,
  faultAndRecover,
  leaderOf,
  MemberProxies,
  type NetFault,
  useTestAwsCredentials,
} from "../support/net-scenario.js";
import { Cluster, ms, shardBalanceBoundMs, shardWorkerCommand, startServeProcess } from "../support/process-cluster.js";

const LEASE_MS = 1000;
/** After a heal: the session's window runs out, every lease's takeover, polls; loaded cores. */
const BOUND_MS = 10 * LEASE_MS;
const candidate = join(import.meta.dirname, "..", "support", "net-candidate.ts");

useTestAwsCredentials();

const root = mkdtempSync(join(tmpdir(), "leasehold-net-sessions-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("sessions through Toxiproxy, one proxy per process", () => {
  it("a process with 10 bound leases cut off and healed: every lease led again, never two at once", async () => {
    const LEASES = 10;
    const members = ["b0", "b1"];
    const admin = dynamoClient(testEndpoint());
    const table = await createLeaseTable(admin);
    admin.destroy();
    const proxies = await MemberProxies.create(testEndpoint(), members, "bound");
    const dir = mkdtempSync(join(root, "bound-"));
    const cluster = new Cluster(dir, LEASES, (member, log) => ({
      file: process.execPath,
      args: [
        "--import",
        "tsx",
        candidate,
        `dynamodb://${table}?region=us-east-1&endpoint=${proxies.of(member).url}`,
        "bound",
        member,
        log,
        String(LEASE_MS),
        String(LEASES),
      ],
    }));
    const buckets = Array.from({ length: LEASES }, (_, i) => i);
    try {
      cluster.start("b0");
      await cluster.waitFor("b0 leads all", () => (leaderOf(cluster, LEASES - 1) ? true : undefined), 60_000);
      cluster.start("b1");
      await cluster.ready(cluster.incarnations[1]!);
      const results: FaultResult[] = [];
      for (const fault of [
        { kind: "partition", how: "refused", ms: 2 * LEASE_MS },
        { kind: "partition", how: "blackhole", ms: 2 * LEASE_MS },
      ] satisfies NetFault[]) {
        results.push(await faultAndRecover(cluster, proxies, fault, "leader", BOUND_MS, buckets));
      }
      await cluster.close();
      expect(checkNetLogs(cluster, "bound sessions", results)).toBeGreaterThanOrEqual(LEASES);
    } finally {
      await cluster.close();
      await proxies.close();
    }
  }, 180_000);

  it("a sharded member cut off from the API past its session, then healed: balanced again within the bound", async () => {
    const BUCKETS = 16;
    const members = ["m0", "m1", "m2"];
    const dir = mkdtempSync(join(root, "sharded-"));
    const server = await startServeProcess(join(dir, "api.db"), 100);
    const proxies = await MemberProxies.create(server.url, members, "member");
    const work = shardWorkerCommand("http", server.url, "net/group", LEASE_MS, BUCKETS);
    const cluster = new Cluster(dir, BUCKETS, (member, log) => {
      const command = work(member, log);
      // The same worker, its API URL (the argument after the mode) replaced by its proxy's.
      const args = [...command.args];
      args[args.indexOf(server.url)] = proxies.of(member).url;
      return { ...command, args };
    });
    const bound = shardBalanceBoundMs(BUCKETS, members.length, LEASE_MS) + BOUND_MS;
    try {
      for (const m of members) cluster.start(m);
      await cluster.waitFor("balanced over 3 (forming)", () => cluster.balanced(), 60_000);
      const measured: string[] = [];
      for (const fault of [
        { kind: "partition", how: "blackhole", ms: 2 * LEASE_MS },
        { kind: "half-open", toxic: "timeout", ms: 2 * LEASE_MS },
      ] satisfies NetFault[]) {
        const victim = cluster.live()[0]!;
        await cluster.linesWritten(victim, 5);
        const healed = await applyFault(proxies.of(victim.member), fault);
        const back = await cluster.waitFor(
          `balanced over 3 after ${fault.kind} of ${victim.name}`,
          () => {
            const b = cluster.balanced();
            return b && b.at > healed ? b : undefined;
          },
          bound,
        );
        measured.push(`${fault.kind} ${fault.ms} ms: balanced ${ms(back.at - healed).toFixed(0)} ms after the heal`);
      }
      await cluster.close();
      console.log(`sharded members: ${measured.join("; ")} (bound ${Math.round(bound)} ms)`);
      checkNetLogs(cluster, "sharded members", []);
    } finally {
      await cluster.close();
      await proxies.close();
      await server.stop();
    }
  }, 180_000);
});
