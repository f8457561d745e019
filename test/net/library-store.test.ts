/**
 * Library → store with real sockets (docs/partitions.md, "Single lease"): three `Elector`
 * processes (test/support/net-candidate.ts), each reaching the store through its own Toxiproxy
 * proxy, on dynalite (DynamoDB) and on versitygw (S3). The leader, or a follower, is cut off:
 * partitions of 0.3-3 leases (refused and blackholed) then healed, half-open links (the answer
 * never comes back, is reset, or is cut short), a latency storm around the call timeout, a slow
 * link. And partitions under the documented bound (docs/partitions.md, "The longest partition a
 * leader survives") at random moments: the leader keeps its term every time.
 *
 * From the processes' own logs, on one monotonic clock: no term written after a higher one; no
 * two processes inside their windows for the lease at once (so the partitioned leader's last
 * action comes before the next term's first). After each heal a leader works again within a
 * bound. Figures (kept or moved, time to a leader) are printed, not asserted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { resolveElectorOptions } from "../../src/elector/options.js";
import { Prng } from "../chaos/prng.js";
import { createTestBucket } from "../servers/versitygw.server.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "../support/dynamo-server.js";
import {
  applyFault,
  checkNetLogs,
  type FaultResult,
  faultAndRecover,
  lastTerm,
  leaderOf,
  MemberProxies,
  standardFaults,
  steadyLeader,
  useTestAwsCredentials,
} from "../support/net-scenario.js";
import { Cluster } from "../support/process-cluster.js";

const LEASE_MS = 1000;
const timing = resolveElectorOptions({ store: new MemoryStore(), name: "x", leaseMs: LEASE_MS });
/** The survival runs: a longer lease, so a loaded machine's own slowness stays well inside the margin. */
const SURVIVE_LEASE_MS = 3000;
/**
 * docs/partitions.md, "The longest partition a leader survives": with the default timing, a
 * partition shorter than the call timeout, (leaseMs - safetyMs - renewMs) / 2, less a round trip,
 * wherever it falls in the renewal cycle.
 */
const SURVIVED_MS = resolveElectorOptions({
  store: new MemoryStore(),
  name: "x",
  leaseMs: SURVIVE_LEASE_MS,
}).callTimeoutMs;
/** After a heal: the old window runs out, a follower's observed expiry (a lease), a poll and a retry; loaded cores. */
const BOUND_MS = 6 * LEASE_MS;
const SEED = Number(process.env.NET_SEED ?? 11);
const candidate = join(import.meta.dirname, "..", "support", "net-candidate.ts");

useTestAwsCredentials();

const root = mkdtempSync(join(tmpdir(), "leasehold-net-lib-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const MEMBERS = ["c0", "c1", "c2"];

async function scenario(label: string, storeUrl: (proxyUrl: string) => string, upstream: string) {
  const dir = mkdtempSync(join(root, `${label}-`));
  const proxies = await MemberProxies.create(upstream, MEMBERS, `lib-${label}`);
  const cluster = new Cluster(dir, 1, (member, log) => ({
    file: process.execPath,
    args: ["--import", "tsx", candidate, storeUrl(proxies.of(member).url), "elector", member, log, String(LEASE_MS)],
  }));
  try {
    for (const m of MEMBERS) cluster.start(m);
    await cluster.waitFor("a leader", () => leaderOf(cluster), 60_000);
    const rng = new Prng(SEED);
    const results: FaultResult[] = [];
    for (const { fault, role } of standardFaults(rng, LEASE_MS, timing.callTimeoutMs, true))
      results.push(await faultAndRecover(cluster, proxies, fault, role, BOUND_MS));

    await cluster.close();
    checkNetLogs(cluster, `library on ${label}`, results);
  } finally {
    await cluster.close();
    await proxies.close();
  }
}

describe("library → store through Toxiproxy, one proxy per candidate", () => {
  it("partitions under the documented bound, at random moments of the renewal cycle: survived every time", async () => {
    const endpoint = testEndpoint();
    const admin = dynamoClient(endpoint);
    const table = await createLeaseTable(admin);
    admin.destroy();
    const members = ["s0", "s1"];
    const dir = mkdtempSync(join(root, "survive-"));
    const proxies = await MemberProxies.create(endpoint, members, "survive");
    const cluster = new Cluster(dir, 1, (member, log) => ({
      file: process.execPath,
      args: [
        "--import",
        "tsx",
        candidate,
        `dynamodb://${table}?region=us-east-1&endpoint=${proxies.of(member).url}`,
        "elector",
        member,
        log,
        String(SURVIVE_LEASE_MS),
      ],
    }));
    const rng = new Prng(SEED);
    const partitionMs = Math.round(SURVIVED_MS * 0.5);
    const survived: string[] = [];
    try {
      for (const m of members) cluster.start(m);
      for (let i = 0; i < 4; i++) {
        const leader = await steadyLeader(cluster, 60_000, 0, rng.int(3, 40));
        const term = lastTerm(leader);
        const how = i % 2 === 0 ? "blackhole" : "refused";
        await applyFault(proxies.of(leader.member), { kind: "partition", how, ms: partitionMs });
        await cluster.linesWritten(leader, 10);
        survived.push(`${how}: ${leaderOf(cluster) === leader && lastTerm(leader) === term ? "kept" : "LOST"}`);
      }
      await cluster.close();
      console.log(
        `partitions of ${partitionMs} ms (bound ${SURVIVED_MS} ms, lease ${SURVIVE_LEASE_MS} ms): ${survived.join(", ")}`,
      );
      checkNetLogs(cluster, "survived partitions", []);
      expect(survived, survived.join(", ")).toEqual(survived.map((s) => s.replace(/: .*/, ": kept")));
    } finally {
      await cluster.close();
      await proxies.close();
    }
  }, 180_000);

  it("DynamoDB (dynalite): partitions, half-open links, a latency storm, a slow link", async () => {
    const endpoint = testEndpoint();
    const admin = dynamoClient(endpoint);
    const table = await createLeaseTable(admin);
    admin.destroy();
    await scenario("dynamodb", (url) => `dynamodb://${table}?region=us-east-1&endpoint=${url}`, endpoint);
  }, 240_000);

  it("S3 (versitygw): partitions, half-open links, a latency storm, a slow link", async () => {
    const endpoint = process.env.S3_ENDPOINT;
    if (!endpoint) throw new Error("S3_ENDPOINT is not set: test/servers/versitygw.server.ts should have started");
    const bucket = await createTestBucket(endpoint, "net");
    await scenario("s3", (url) => `s3://${bucket}/leases?region=us-east-1&endpoint=${url}&pathStyle=true`, endpoint);
  }, 240_000);
});
