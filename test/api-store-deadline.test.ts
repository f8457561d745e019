/**
 * The API's deadlines on its own store calls, in process (docs/partitions.md, "The API and its
 * store"; the same with real sockets and Toxiproxy: test/net/api-store.test.ts):
 * - a store that never answers: 503 `store-unavailable` with Retry-After within the store
 *   deadline, never a hang; /readyz 503 meanwhile, /healthz 200; the timeouts counted in /metrics;
 *   ready again once the store answers;
 * - a request whose own deadline (Leasehold-Timeout-Ms) passes while the store is slow: nothing
 *   is written for it afterwards; a malformed header: 400 naming it;
 * - the raw create stamps `renewedAt` when it writes, not when the request arrived.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { systemClock } from "../src/clock.js";
import type { Listed, ListOptions } from "../src/lease.js";
import { FaultyStore } from "../src/testkit/faulty-store.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { TEST_INSTANCE, TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";

const STORE_TIMEOUT_MS = 150;

function setup() {
  const inner = new MemoryStore();
  const store = new FaultyStore(inner, systemClock);
  const api = inProcessApi({ store, storeTimeoutMs: STORE_TIMEOUT_MS });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    api.fetch(`${api.url}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${TOKENS.admin}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  return { inner, store, call };
}

const acquire = { holder: "a", leaseMs: 5000, instance: TEST_INSTANCE };

describe("the API's store deadline", () => {
  it("a store that never answers: 503 with Retry-After, not a hang; /readyz fails, /healthz stays; counted", async () => {
    const { store, call } = setup();
    store.hang = true;
    // The store never answers: any answer at all came from the deadline.
    const res = await call("POST", "/v1/leases/jobs%2Fa/acquire", acquire);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const problem = (await res.json()) as { type: string; detail: string };
    expect(problem.type).toMatch(/store-unavailable$/);
    expect(problem.detail).toContain("the store failed during get");

    expect((await call("GET", "/healthz")).status).toBe(200);
    const ready = await call("GET", "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.headers.get("retry-after")).toBe("1");
    expect(((await ready.json()) as { detail: string }).detail).toContain("timed out after 150 ms");

    const metrics = await (await call("GET", "/metrics")).text();
    expect(metrics).toMatch(/leasehold_store_timeouts_total\{op="get",deadline="store"\} [1-9]/);

    store.hang = false;
    const readyAgain = await call("GET", "/readyz");
    expect(readyAgain.status).toBe(200);
    expect(await readyAgain.json()).toEqual({ ok: true, store: "reachable" });
    expect((await call("POST", "/v1/leases/jobs%2Fa/acquire", acquire)).status).toBe(200);
  });

  it("a request whose deadline passed while the store was slow is never written afterwards", async () => {
    const { inner, store, call } = setup();
    store.delayMs = 100; // each call: the read alone outlives the client's 50 ms
    const res = await call("POST", "/v1/leases/jobs%2Flate/acquire", acquire, { "Leasehold-Timeout-Ms": "50" });
    expect(res.status).toBe(503);
    const metrics = await (await call("GET", "/metrics")).text();
    expect(metrics).toMatch(/leasehold_store_timeouts_total\{op="(get|put)",deadline="request"\} [1-9]/);
    // Long after the store would have answered: still nothing written.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await inner.get("jobs/late")).toBeNull();
    // With time enough, the same request is served.
    const ok = await call("POST", "/v1/leases/jobs%2Flate/acquire", acquire, { "Leasehold-Timeout-Ms": "2000" });
    expect(ok.status).toBe(200);
  });

  it.each(["0", "-5", "1.5", "soon", "600001"])("Leasehold-Timeout-Ms %j: 400 naming the header", async (value) => {
    const { inner, call } = setup();
    const res = await call("POST", "/v1/leases/jobs%2Fbad/acquire", acquire, { "Leasehold-Timeout-Ms": value });
    expect(res.status).toBe(400);
    const problem = (await res.json()) as { errors: Array<{ path: string; message: string }> };
    expect(problem.errors[0]?.path).toBe("Leasehold-Timeout-Ms");
    expect(problem.errors[0]?.message).toContain("expected a whole number of milliseconds 1-600000");
    expect(await inner.get("jobs/bad")).toBeNull();
  });

  it("the raw create stamps renewedAt when it writes, not when the request arrived", async () => {
    const { inner, store, call } = setup();
    store.delayMs = 120;
    const sent = Date.now();
    const res = await call(
      "PUT",
      "/v1/leases/jobs%2Fraw",
      { holder: "a", term: 1, leaseMs: 5000, acquiredAt: sent, metadata: {}, writeId: "w1" },
      { "If-None-Match": "*", "Leasehold-Instance": TEST_INSTANCE },
    );
    expect(res.status).toBe(201);
    const stored = await inner.get("jobs/raw");
    // The read took 120 ms before the write: the stamp is from after it.
    expect(stored?.record.renewedAt).toBeGreaterThanOrEqual(sent + 100);
  });

  it("a listing whose store stops answering part-way: 503 within the deadline; one that answers is served whole", async () => {
    const inner = new MemoryStore();
    let hangAfter = Number.POSITIVE_INFINITY;
    const listing = inner.list.bind(inner);
    // Its steps answer one by one, then (when told) the next one never does.
    inner.list = (prefix: string, options?: ListOptions): AsyncIterable<Listed> => ({
      async *[Symbol.asyncIterator]() {
        let n = 0;
        for await (const entry of listing(prefix, options)) {
          if (n++ >= hangAfter) await new Promise(() => undefined);
          yield entry;
        }
      },
    });
    let previous = null as Awaited<ReturnType<MemoryStore["put"]>> | null;
    for (let i = 0; i < 300; i++) {
      previous = await inner.put(makeRecord(`jobs/l-${String(i).padStart(3, "0")}`, { holder: "h" }), null);
    }
    expect(previous).not.toBeNull();
    const api = inProcessApi({ store: inner, storeTimeoutMs: STORE_TIMEOUT_MS });
    const list = () =>
      api.fetch(`${api.url}/v1/leases?prefix=jobs%2F&limit=500`, {
        headers: { Authorization: `Bearer ${TOKENS.admin}` },
      });
    const whole = await list();
    expect(whole.status).toBe(200);
    expect(((await whole.json()) as { leases: unknown[] }).leases).toHaveLength(300);
    hangAfter = 120;
    // The 121st step never answers: any answer at all came from the deadline.
    const cut = await list();
    expect(cut.status).toBe(503);
    const problem = (await cut.json()) as { type: string; detail: string };
    expect(problem.type).toMatch(/store-unavailable$/);
    expect(problem.detail).toContain("during list");
    const metrics = await (
      await api.fetch(`${api.url}/metrics`, { headers: { Authorization: `Bearer ${TOKENS.admin}` } })
    ).text();
    expect(metrics).toMatch(/leasehold_store_timeouts_total\{op="list",deadline="store"\} 1/);
  });
});
