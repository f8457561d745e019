/**
 * The Worker entry (src/runtime/worker.ts) inside workerd, called through the runtime
 * (`exports.default.fetch`) with the bindings of wrangler.toml + vitest.config.ts: every lease
 * route on the Durable Object store, auth required by default, configuration errors, and the
 * HTTP store's conformance suites end to end (HttpStore -> Worker -> LeaseObject).
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/api/app.js";
import type { TokenScope } from "../../src/api/auth.js";
import { DurableObjectStore } from "../../src/backends/durable-object/store.js";
import { HttpStore } from "../../src/backends/http/store.js";
import { LeaseholdClient } from "../../src/http/client.js";
import worker from "../../src/runtime/worker.js";
import { describeElectorContract, type ElectorContractContext } from "../../src/testkit/elector-contract.js";
import { describeStoreContract, uniqueName } from "../../src/testkit/store-contract.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";
import { SwitchableClock } from "../support/switchable-clock.js";
import { INSTANCE, READER, TEST_TOKENS, WRITER } from "./tokens.js";

const BASE = "https://leasehold.test";
const viaWorker: typeof fetch = (input, init) => exports.default.fetch(new Request(input, init));
const client = (token = WRITER) => new LeaseholdClient({ baseUrl: BASE, token, fetch: viaWorker, retries: 0 });
const path = (name: string) => `${BASE}/v1/leases/${encodeURIComponent(name)}`;

const post = (url: string, body: object, token = WRITER) =>
  viaWorker(url, {
    method: "POST",
    body: JSON.stringify({ instance: INSTANCE, ...body }),
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
  });

describe("worker API on the Durable Object store", () => {
  it("acquire, renew, conflict for another holder, release keeps the term, re-acquire bumps it", async () => {
    const api = client();
    const name = uniqueName();
    const first = await api.acquire(name, { holder: "a", leaseMs: 10_000, metadata: { addr: "10.0.0.7:8080" } });
    expect(first).toMatchObject({ leader: true, lease: { name, holder: "a", term: 1, revision: "1" } });
    const renewed = await api.renew(name, { holder: "a", term: 1 });
    expect(renewed).toMatchObject({ leader: true, lease: { holder: "a", term: 1, revision: "2" } });
    const other = await api.acquire(name, { holder: "b", leaseMs: 10_000 });
    expect(other).toMatchObject({ leader: false, lease: { holder: "a", term: 1 } });
    const released = await api.release(name, { holder: "a", term: 1 });
    expect(released.lease).toMatchObject({ holder: null, term: 1 });
    const next = await api.acquire(name, { holder: "b", leaseMs: 10_000 });
    expect(next).toMatchObject({ leader: true, lease: { holder: "b", term: 2 } });
    expect(await api.get(name)).toMatchObject({ holder: "b", term: 2, revision: next.lease.revision });
  });

  it("renew of a lease that never existed is 404, GET of one is 404", async () => {
    const name = uniqueName();
    const renew = await post(`${path(name)}/renew`, { holder: "a", term: 1 });
    expect(renew.status).toBe(404);
    expect(renew.headers.get("content-type")).toBe("application/problem+json");
    expect(await client().get(name)).toBeNull();
  });

  it("lists by prefix in name order with limit and cursor (through the directory object)", async () => {
    const api = client();
    const root = uniqueName("list");
    for (const n of ["b", "a", "c"]) await api.acquire(`${root}/${n}`, { holder: "h", leaseMs: 10_000 });
    const page = await api.list({ prefix: `${root}/`, limit: 2 });
    expect(page.leases.map((l) => l.name)).toEqual([`${root}/a`, `${root}/b`]);
    expect(page.next).toBe(`${root}/b`);
    const rest = await api.list({ prefix: `${root}/`, limit: 2, cursor: page.next! });
    expect(rest.leases.map((l) => l.name)).toEqual([`${root}/c`]);
    expect(rest.next).toBeNull();
  });

  it("requires a token: 401 without one, 403 outside its scope", async () => {
    const name = `public/${uniqueName()}`;
    const anonymous = await viaWorker(path(name));
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toContain("Bearer");
    expect((await post(`${path(name)}/acquire`, { holder: "r", leaseMs: 10_000 }, READER)).status).toBe(403);
    await client().acquire(name, { holder: "w", leaseMs: 10_000 });
    expect(await client(READER).get(name)).toMatchObject({ holder: "w" });
    const outside = await viaWorker(path(uniqueName()), { headers: { authorization: `Bearer ${READER}` } });
    expect(outside.status).toBe(403);
  });

  it("serves /healthz and /openapi.json", async () => {
    expect(await (await viaWorker(`${BASE}/healthz`)).json()).toEqual({ ok: true });
    const doc = (await (await viaWorker(`${BASE}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain("/v1/leases/{name}/acquire");
  });
});

describe("worker configuration", () => {
  const call = async (bindings: Record<string, unknown>) => {
    const response = await worker.fetch(new Request(`${BASE}/healthz`), bindings);
    return { status: response.status, body: (await response.json()) as { detail?: string; ok?: boolean } };
  };

  it("refuses every request without tokens unless LEASEHOLD_INSECURE_NO_AUTH=1", async () => {
    const refused = await call({ LEASES: env.LEASES });
    expect(refused.status).toBe(500);
    expect(refused.body.detail).toMatch(/LEASEHOLD_TOKENS/);
    expect(await call({ LEASES: env.LEASES, LEASEHOLD_INSECURE_NO_AUTH: "1" })).toEqual({
      status: 200,
      body: { ok: true },
    });
  });

  it("insecure mode serves lease routes without a token", async () => {
    const insecure = { LEASES: env.LEASES, LEASEHOLD_INSECURE_NO_AUTH: "1" };
    const name = uniqueName();
    const response = await worker.fetch(
      new Request(`${path(name)}/acquire`, {
        method: "POST",
        body: JSON.stringify({ holder: "a", instance: INSTANCE, leaseMs: 10_000 }),
        headers: { "content-type": "application/json" },
      }),
      insecure,
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ leader: true, lease: { name, holder: "a", term: 1 } });
  });

  it("names the problem: invalid tokens, a store that cannot run on Workers, missing AWS secrets, bad numbers", async () => {
    const tokens = env.LEASEHOLD_TOKENS!;
    expect((await call({ LEASES: env.LEASES, LEASEHOLD_TOKENS: "not json" })).body.detail).toMatch(/LEASEHOLD_TOKENS/);
    expect((await call({ LEASEHOLD_TOKENS: tokens })).body.detail).toMatch(/LEASES/);
    const gcs = await call({ LEASEHOLD_TOKENS: tokens, LEASEHOLD_STORE: "gcs://bucket/leases/" });
    expect(gcs.body.detail).toMatch(/gcs store does not run on Workers/);
    const noKeys = await call({ LEASEHOLD_TOKENS: tokens, LEASEHOLD_STORE: "dynamodb://leases?region=eu-west-1" });
    expect(noKeys.body.detail).toMatch(/AWS_ACCESS_KEY_ID/);
    const skew = await call({ LEASES: env.LEASES, LEASEHOLD_TOKENS: tokens, LEASEHOLD_MAX_SKEW_MS: "soon" });
    expect(skew).toMatchObject({ status: 500, body: { detail: expect.stringMatching(/LEASEHOLD_MAX_SKEW_MS/) } });
  });

  it("PORT, HOST, LEASEHOLD_DB and LEASEHOLD_TOKEN are refused, each with the reason", async () => {
    const result = await call({
      LEASES: env.LEASES,
      LEASEHOLD_TOKENS: env.LEASEHOLD_TOKENS!,
      PORT: "8787",
      HOST: "0.0.0.0",
      LEASEHOLD_DB: "./data/leasehold.db",
      LEASEHOLD_TOKEN: "client-token",
    });
    expect(result.status).toBe(500);
    for (const [name, why] of [
      ["PORT", "a Worker does not listen on a port"],
      ["HOST", "a Worker does not listen on a port"],
      ["LEASEHOLD_DB", "it names a SQLite file, and a Worker has no filesystem"],
      ["LEASEHOLD_TOKEN", "only the http store reads it, and the HTTP store is not bundled into the Worker"],
    ]) {
      expect(result.body.detail).toContain(`${name}: not read by the Worker: ${why}`);
    }
  });

  it("LEASEHOLD_TOKENS with LEASEHOLD_INSECURE_NO_AUTH=1: every request refused, naming both", async () => {
    const result = await call({
      LEASES: env.LEASES,
      LEASEHOLD_TOKENS: env.LEASEHOLD_TOKENS!,
      LEASEHOLD_INSECURE_NO_AUTH: "1",
    });
    expect(result.status).toBe(500);
    expect(result.body.detail).toContain("LEASEHOLD_TOKENS: 2 tokens given together with LEASEHOLD_INSECURE_NO_AUTH=1");
  });

  it("LEASEHOLD_MAX_SKEW_MS, LEASEHOLD_WATCH_POLL_MS, LEASEHOLD_HEARTBEAT_MS: read, logged, applied", async () => {
    const logged = vi.spyOn(console, "info").mockImplementation(() => undefined);
    const bindings = {
      LEASES: env.LEASES,
      LEASEHOLD_TOKENS: env.LEASEHOLD_TOKENS!,
      LEASEHOLD_MAX_SKEW_MS: "60000",
      LEASEHOLD_WATCH_POLL_MS: "250",
      LEASEHOLD_HEARTBEAT_MS: "50",
    };
    const name = uniqueName();
    try {
      // The skew bound: a writer's acquiredAt 30 s ahead passes 60 s (the default 1 s refuses it).
      const put = await worker.fetch(
        new Request(path(name), {
          method: "PUT",
          headers: {
            "content-type": "application/json",
            "if-none-match": "*",
            "leasehold-instance": INSTANCE,
            authorization: `Bearer ${WRITER}`,
          },
          body: JSON.stringify({
            holder: "h",
            term: 1,
            leaseMs: 5000,
            metadata: {},
            writeId: "w1",
            acquiredAt: Date.now() + 30_000,
          }),
        }),
        bindings,
      );
      expect(put.status).toBe(201);
      expect(logged).toHaveBeenCalledWith(
        'leasehold: API on Cloudflare Workers; store durable-object:LEASES (default); auth: 2 tokens (writer: read+write+cas on all leases; reader: read on "public/"); maxSkewMs 60000, watchPollMs 250, heartbeatMs 50, storeTimeoutMs 2000',
      );
    } finally {
      logged.mockRestore();
    }
    // The heartbeat: a keep-alive comment within the configured 50 ms (the default is 15 s).
    const watch = await worker.fetch(
      new Request(`${path(name)}/watch`, { headers: { authorization: `Bearer ${WRITER}` } }),
      bindings,
    );
    const reader = watch.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes(": keep-alive")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the stream ended before a keep-alive");
      text += value;
    }
    expect(text).toContain('"holder":"h"');
    await reader.cancel();
  });

  it("never echoes a secret in a configuration problem", async () => {
    const secret = "sk-do-not-print-this-0123456789";
    const result = await call({
      LEASEHOLD_TOKENS: env.LEASEHOLD_TOKENS!,
      LEASEHOLD_STORE: "dynamodb://leases",
      AWS_ACCESS_KEY_ID: "AKIAEXAMPLE",
      AWS_SECRET_ACCESS_KEY: secret,
    });
    expect(result.body.detail).toMatch(/region/);
    expect(JSON.stringify(result.body)).not.toContain(secret);
  });
});

// End to end: the HTTP store over this Worker passes the same suites as every other store.
const overWorker = async () => ({ store: new HttpStore({ baseUrl: BASE, token: WRITER, fetch: viaWorker }) });
const stamps = "the API stamps renewedAt with the Worker's clock";
describeStoreContract("http store -> worker -> durable objects", {
  create: overWorker,
  // Every write crosses the HTTP store, the Worker's API and a Durable Object on workerd's one
  // thread: 10 rounds of 20 writers take about 25 s on a busy machine. The Durable Object's own
  // atomicity is raced the full 10 rounds below; this layer adds one CAS per request on top.
  raceRounds: 4,
  conflictCarriesCurrent: true,
  stampsRenewedAt: stamps,
  enforcesTermRules: true,
  cannotHoldUnreadable:
    "behind the Worker's API are Durable Objects, which hold only records LeaseObject validated (durable-object-store.test.ts)",
});
// The elector contract runs on the suite's manual clock, and the API judges takeovers by its own
// clock: so here the app is the Worker's own `createApp` on the same Durable Object namespace, built
// in the test with a clock that follows the suite's (the Worker entry's wiring is tested above).
// Without the push path, on purpose: here the app is called in-process, so its SSE body belongs to
// one test's request context and workerd refuses to read it from the elector's later callbacks
// ("Cannot perform I/O on behalf of a different request"). A deployed Worker has no such limit;
// the push path over HTTP runs in test/http-store.test.ts, and over Durable Objects in
// durable-object-store.test.ts.
const serverClock = new SwitchableClock();
const electionApp = createApp({
  store: new DurableObjectStore({ namespace: env.LEASES }),
  auth: { tokens: TEST_TOKENS as TokenScope[] },
  clock: serverClock,
  maxSkewMs: 0,
});
const viaApp: typeof fetch = async (input, init) => electionApp.fetch(new Request(input, init));
const overAppPolling = async (context: ElectorContractContext) => {
  serverClock.target = context.clock;
  const store = new HttpStore({ baseUrl: BASE, token: WRITER, fetch: viaApp });
  return { store: new StoreWrapper(store, { without: ["watch"] }) };
};
describeElectorContract("http store -> createApp in workerd -> durable objects", overAppPolling, {
  stampsRenewedAt: stamps,
  refusesTakeoverWhileHeld: "the API gives a lease to another holder only once its own clock says it expired",
});
