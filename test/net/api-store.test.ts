/**
 * API → its store with real sockets (docs/partitions.md, "The API and its store"): `leasehold
 * serve` reaches dynalite through a Toxiproxy proxy, three `Elector`s on `HttpStore` reach the
 * server directly. The server's link to the store is blackholed, half-open (the store's answers
 * never come back) and refused, for 1.5-3 leases, then healed. Meanwhile:
 * - the server answers 503 `store-unavailable` with Retry-After, never hangs (LEASEHOLD_STORE_TIMEOUT_MS);
 * - /readyz is 503, /healthz 200;
 * - an acquire and a raw create whose client gave up (Leasehold-Timeout-Ms) are never written,
 *   not even after the heal;
 * and after the heal it is ready again and a leader works again, by itself. From the candidates'
 * logs: no term written after a higher one, no two inside their windows at once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLeaseTable, dynamoClient, testEndpoint } from "../support/dynamo-server.js";
import {
  checkNetLogs,
  type FaultResult,
  lastTerm,
  leaderOf,
  type NetFault,
  steadyLeader,
  useTestAwsCredentials,
} from "../support/net-scenario.js";
import { Cluster, ms, ns, startServeProcess } from "../support/process-cluster.js";
import { type ToxiProxy, testToxiproxy, uniqueProxyName } from "../support/toxiproxy.js";

const LEASE_MS = 1000;
const STORE_TIMEOUT_MS = 200;
const MAX_SKEW_MS = 100;
const BOUND_MS = 6 * LEASE_MS + MAX_SKEW_MS;
const MEMBERS = ["c0", "c1", "c2"];
const candidate = join(import.meta.dirname, "..", "support", "net-candidate.ts");

useTestAwsCredentials();

const root = mkdtempSync(join(tmpdir(), "leasehold-net-apistore-"));
let server: Awaited<ReturnType<typeof startServeProcess>>;
let link: ToxiProxy;

beforeAll(async () => {
  const admin = dynamoClient(testEndpoint());
  const table = await createLeaseTable(admin);
  admin.destroy();
  link = await testToxiproxy().createProxy(uniqueProxyName("api-store"), testEndpoint());
  server = await startServeProcess(`dynamodb://${table}?region=us-east-1&endpoint=${link.url}`, MAX_SKEW_MS, {
    ...(process.env as Record<string, string>),
    LEASEHOLD_STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS),
  });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await link?.delete();
  rmSync(root, { recursive: true, force: true });
});

const INSTANCE = "net-api-store-0123456789";

async function call(path: string, init: RequestInit = {}, timeoutMs = 10_000) {
  const res = await fetch(`${server.url}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: text };
}

/** What a client that gives up after 300 ms sends: an acquire and a raw create, both abandoned. */
async function lateWrites(tag: string): Promise<string[]> {
  const headers = { "content-type": "application/json", "Leasehold-Timeout-Ms": "300" };
  const acquire = `net/late-acquire-${tag}`;
  const created = `net/late-create-${tag}`;
  await Promise.allSettled([
    call(
      `/v1/leases/${encodeURIComponent(acquire)}/acquire`,
      { method: "POST", headers, body: JSON.stringify({ holder: "late", instance: INSTANCE, leaseMs: 60_000 }) },
      300,
    ),
    call(
      `/v1/leases/${encodeURIComponent(created)}`,
      {
        method: "PUT",
        headers: { ...headers, "If-None-Match": "*", "Leasehold-Instance": INSTANCE },
        body: JSON.stringify({
          holder: "late",
          term: 1,
          leaseMs: 60_000,
          acquiredAt: Date.now(),
          metadata: {},
          writeId: "late-1",
        }),
      },
      300,
    ),
  ]);
  return [acquire, created];
}

describe("API → store through Toxiproxy, while the clients still reach the API", () => {
  it("blackholed, half-open and refused store links: 503 with Retry-After, /readyz, nothing late, recovery", async () => {
    const dir = mkdtempSync(join(root, "run-"));
    const cluster = new Cluster(dir, 1, (member, log) => ({
      file: process.execPath,
      args: ["--import", "tsx", candidate, server.url, "elector", member, log, String(LEASE_MS)],
    }));
    const cuts: NetFault[] = [
      { kind: "partition", how: "blackhole", ms: 3 * LEASE_MS },
      { kind: "half-open", toxic: "timeout", ms: 2 * LEASE_MS },
      { kind: "partition", how: "refused", ms: 1.5 * LEASE_MS },
    ];
    const results: FaultResult[] = [];
    const late: string[] = [];
    try {
      for (const m of MEMBERS) cluster.start(m);
      await cluster.waitFor("a leader", () => leaderOf(cluster), 60_000);
      for (const [i, cut] of cuts.entries()) {
        const leader = await steadyLeader(cluster, BOUND_MS);
        const term = lastTerm(leader);
        const cutAt = ns();
        if (cut.kind === "partition") await link.partition(cut.how);
        else await link.addToxic({ type: "timeout", stream: "downstream", attributes: { timeout: 0 } });
        // The server answers, and says it is not ready; the process itself is live.
        const get = await call("/v1/leases/net%2Flease");
        expect([get.status, get.retryAfter], get.body).toEqual([503, "1"]);
        expect(get.body).toContain("store-unavailable");
        const ready = await call("/readyz");
        expect([ready.status, ready.retryAfter], ready.body).toEqual([503, "1"]);
        expect((await call("/healthz")).status).toBe(200);
        late.push(...(await lateWrites(String(i))));
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, cut.ms - ms(ns() - cutAt))));
        await link.heal();
        const healed = ns();
        for (;;) {
          if ((await call("/readyz")).status === 200) break;
          expect(ms(ns() - healed), "ready again within the bound").toBeLessThan(BOUND_MS);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const back = await cluster.waitFor("a leader after the heal", () => leaderOf(cluster), BOUND_MS, 50);
        // Whoever leads by then writes a few lines (on loaded cores it may move once more meanwhile).
        await steadyLeader(cluster, Math.max(BOUND_MS, 30_000), 0, 3);
        results.push({
          fault: `store link ${cut.kind === "partition" ? `${cut.how}` : "half-open"} ${cut.ms} ms`,
          victim: "the API server",
          role: "leader",
          kept: back === leader && lastTerm(back) === term,
          leaderAfterHealMs: ms(ns() - healed),
        });
      }
      // Long after every heal: nothing the late clients sent was written.
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
      for (const name of late) {
        // The check's own read: a 503 on a loaded machine is asked again (a read changes nothing).
        let res = await call(`/v1/leases/${encodeURIComponent(name)}`);
        for (let i = 0; i < 20 && res.status === 503; i++) res = await call(`/v1/leases/${encodeURIComponent(name)}`);
        expect(res.status, `${name}: ${res.body}`).toBe(404);
      }
      const metrics = await call("/metrics");
      expect(metrics.body).toMatch(/leasehold_store_timeouts_total\{op="[a-z_]+",deadline="(store|request)"\} [1-9]/);
      await cluster.close();
      checkNetLogs(cluster, "API → store", results);
    } finally {
      await cluster.close();
      await link.heal().catch(() => undefined);
    }
  }, 240_000);
});
