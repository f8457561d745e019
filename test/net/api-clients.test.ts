/**
 * Client → API with real sockets (docs/partitions.md, "Over the API" and "Go"): `leasehold serve`
 * in its own process on dynalite, and three candidates that reach it each through its own
 * Toxiproxy proxy: `Elector`s on `HttpStore` (test/support/net-candidate.ts), then Go electors
 * (clients/go/internal/testprocs/candidate). The leader, or a follower, is cut off from the API:
 * partitions (refused, blackholed) of 0.3-3 leases, half-open links (no answer, a reset, a cut
 * answer), a latency storm around the call timeout. The same log checks as library → store; a
 * leader again within a bound after each heal.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { resolveElectorOptions } from "../../src/elector/options.js";
import { Prng } from "../chaos/prng.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "../support/dynamo-server.js";
import { buildGoPrograms, type GoPrograms } from "../support/go-module.js";
import {
  checkNetLogs,
  type FaultResult,
  faultAndRecover,
  leaderOf,
  MemberProxies,
  standardFaults,
  useTestAwsCredentials,
} from "../support/net-scenario.js";
import { Cluster, type Command, startServeProcess } from "../support/process-cluster.js";

const LEASE_MS = 1000;
const MAX_SKEW_MS = 100;
const timing = resolveElectorOptions({ store: new MemoryStore(), name: "x", leaseMs: LEASE_MS });
const BOUND_MS = 6 * LEASE_MS + MAX_SKEW_MS;
const SEED = Number(process.env.NET_SEED ?? 11);
const MEMBERS = ["c0", "c1", "c2"];
const candidate = join(import.meta.dirname, "..", "support", "net-candidate.ts");

useTestAwsCredentials();

const root = mkdtempSync(join(tmpdir(), "leasehold-net-api-"));
let programs: GoPrograms;
let server: Awaited<ReturnType<typeof startServeProcess>>;

beforeAll(async () => {
  programs = await buildGoPrograms();
  const admin = dynamoClient(testEndpoint());
  const table = await createLeaseTable(admin);
  admin.destroy();
  server = await startServeProcess(
    `dynamodb://${table}?region=us-east-1&endpoint=${testEndpoint()}`,
    MAX_SKEW_MS,
    process.env as Record<string, string>,
  );
}, 600_000);

afterAll(async () => {
  await server?.stop();
  if (programs) rmSync(programs.dir, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

async function scenario(
  label: string,
  command: (proxyUrl: string, member: string, log: string) => ReturnType<Command>,
) {
  const dir = mkdtempSync(join(root, `${label}-`));
  const proxies = await MemberProxies.create(server.url, MEMBERS, `api-${label}`);
  const cluster = new Cluster(dir, 1, (member, log) => command(proxies.of(member).url, member, log));
  try {
    for (const m of MEMBERS) cluster.start(m);
    await cluster.waitFor("a leader", () => leaderOf(cluster), 60_000);
    const results: FaultResult[] = [];
    for (const { fault, role } of standardFaults(new Prng(SEED), LEASE_MS, timing.callTimeoutMs, false)) {
      results.push(await faultAndRecover(cluster, proxies, fault, role, BOUND_MS));
    }
    await cluster.close();
    checkNetLogs(cluster, label, results);
  } finally {
    await cluster.close();
    await proxies.close();
  }
}

describe("client → API through Toxiproxy, one proxy per candidate", () => {
  it("Electors on HttpStore", async () => {
    await scenario("HttpStore", (url, member, log) => ({
      file: process.execPath,
      args: ["--import", "tsx", candidate, url, "elector", member, log, String(LEASE_MS)],
    }));
  }, 240_000);

  it("Go electors", async () => {
    await scenario("Go", (url, member, log) => ({
      file: programs.candidate,
      args: ["-url", url, "-name", "net/go", "-identity", member, "-log", log, "-lease-ms", String(LEASE_MS)],
    }));
  }, 240_000);
});
