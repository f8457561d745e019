/**
 * HTTP semantics of the API over real HTTP to the Node server: 405 with Allow for a method a path
 * does not serve, the Bearer scheme in any case, authentication (401) and scope (403) before the
 * body is read or validated, one clear message naming the field for integers beyond 2^53-1,
 * I-JSON bodies, and watch resumption with Last-Event-ID.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LeaseholdClient } from "../src/http/client.js";
import { readSse } from "../src/http/sse.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { startApi, TOKENS } from "./support/api-server.js";

let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  api = await startApi({ watchPollMs: 50, heartbeatMs: 100 });
});
afterAll(() => api.close());

const path = (name: string, suffix = "") => `${LeaseholdClient.leasePath(name)}${suffix}`;

async function send(method: string, p: string, init: { headers?: Record<string, string>; body?: string } = {}) {
  const res = await fetch(`${api.url}${p}`, {
    method,
    headers: init.headers ?? {},
    ...(init.body ? { body: init.body } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    problem: text && res.headers.get("content-type") === "application/problem+json" ? JSON.parse(text) : undefined,
  };
}

const admin = { Authorization: `Bearer ${TOKENS.admin}` };
/** This process's instance, in every lease write. */
const INSTANCE = crypto.randomUUID();
const instanced = { "Leasehold-Instance": INSTANCE };
const json = { "Content-Type": "application/json" };

describe("405 Method Not Allowed", () => {
  it.each([
    ["POST", "/v1/leases/x", "GET, HEAD, PUT"],
    ["DELETE", "/v1/leases/x", "GET, HEAD, PUT"],
    ["GET", "/v1/leases/x/acquire", "POST"],
    ["PUT", "/v1/leases/x/renew", "POST"],
    ["PATCH", "/v1/leases", "GET, HEAD"],
    ["POST", "/v1/leases/x/watch", "GET, HEAD"],
    ["OPTIONS", "/v1/leases/x/release", "POST"],
    ["PUT", "/healthz", "GET, HEAD"],
    ["POST", "/openapi.json", "GET, HEAD"],
  ])("%s %s: 405 with Allow: %s, whatever the token and body", async (method, p, allow) => {
    for (const headers of [{}, admin, { ...admin, "Content-Type": "text/plain" }]) {
      const r = await send(method, p, { headers, ...(method === "GET" ? {} : { body: "not json" }) });
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toBe(allow);
      expect(r.problem).toMatchObject({ type: "urn:leasehold:problem:method-not-allowed", status: 405 });
    }
  });

  it("an unknown path is still 404, and HEAD is served wherever GET is, without a body", async () => {
    expect((await send("DELETE", "/v2/nothing")).status).toBe(404);
    expect((await send("GET", "/v1/leases/a/b/c", { headers: admin })).status).toBe(404);
    const head = await send("HEAD", "/healthz");
    expect([head.status, head.text]).toEqual([200, ""]);
    const watch = await send("HEAD", path(uniqueName("head")), { headers: admin });
    expect(watch.status).toBe(404); // the lease does not exist: as GET would answer
    const stream = await send("HEAD", path(uniqueName("head"), "/watch"), { headers: admin });
    expect([stream.status, stream.headers.get("content-type"), stream.text]).toEqual([200, "text/event-stream", ""]);
  });
});

describe("authentication", () => {
  const acquire = (authorization: string) =>
    send("POST", path(uniqueName("scheme"), "/acquire"), {
      headers: { Authorization: authorization, ...json },
      body: JSON.stringify({ holder: "h", instance: INSTANCE, leaseMs: 1000 }),
    });

  it.each(["Bearer", "bearer", "BEARER", "bEaReR"])("accepts the scheme spelled %s", async (scheme) => {
    expect((await acquire(`${scheme} ${TOKENS.admin}`)).status).toBe(200);
    expect((await acquire(`${scheme}  ${TOKENS.admin}`)).status).toBe(200);
  });

  it.each([`Bearer${TOKENS.admin}`, `Basic ${TOKENS.admin}`, "Bearer ", `Bearer ${TOKENS.admin} extra`])(
    "refuses %j with 401 and WWW-Authenticate",
    async (authorization) => {
      const r = await acquire(authorization);
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toBe('Bearer realm="leasehold"');
    },
  );

  it("comes before the body: no token with a bad, mistyped or oversized body is 401", async () => {
    const p = path(uniqueName("order"), "/acquire");
    for (const init of [
      { headers: json, body: JSON.stringify({ holder: "", leaseMs: "soon", surprise: true }) },
      { headers: json, body: "{not json" },
      { headers: { "Content-Type": "text/plain" }, body: "hello" },
      { headers: json, body: JSON.stringify({ holder: "h", leaseMs: 1000, metadata: { x: "y".repeat(10_000) } }) },
      { headers: {}, body: "" },
    ]) {
      const r = await send("POST", p, init);
      expect(r.status, init.body.slice(0, 40)).toBe(401);
      expect(r.problem.type).toBe("urn:leasehold:problem:unauthorized");
    }
  });

  it("so does the token's scope: outside it, a bad body is 403; inside it, 400 naming the fields", async () => {
    const bad = { headers: json, body: JSON.stringify({ holder: "", leaseMs: "soon" }) };
    const outside = await send("POST", path("jobs/x", "/acquire"), {
      ...bad,
      headers: { ...bad.headers, Authorization: `Bearer ${TOKENS.adapters}` },
    });
    expect(outside.status).toBe(403);
    const readOnly = await send("POST", path("adapters/x", "/acquire"), {
      ...bad,
      headers: { ...bad.headers, Authorization: `Bearer ${TOKENS.reader}` },
    });
    expect(readOnly.status).toBe(403);
    const inside = await send("POST", path("adapters/x", "/acquire"), {
      ...bad,
      headers: { ...bad.headers, Authorization: `Bearer ${TOKENS.adapters}` },
    });
    expect(inside.status).toBe(400);
    expect(inside.problem.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      "holder",
      "instance",
      "leaseMs",
    ]);
  });
});

describe("integers beyond 2^53-1", () => {
  const beyond = "expected at most 9007199254740991 (2^53-1, the largest integer a JSON number carries exactly)";

  it.each(["9007199254740992", "9007199254740993", "18014398509481984", "1e400"])(
    "term %s: one message naming term, and nothing is written",
    async (raw) => {
      const name = uniqueName("big");
      const held = await new LeaseholdClient({ baseUrl: api.url, token: TOKENS.admin }).acquire(name, {
        holder: "h",
        leaseMs: 10_000,
      });
      const r = await send("POST", path(name, "/renew"), {
        headers: { ...admin, ...json },
        body: `{"holder":"h","instance":"${INSTANCE}","term":${raw}}`,
      });
      expect(r.status).toBe(400);
      expect(r.problem.errors).toEqual([{ path: "term", message: beyond }]);
      expect(r.problem.detail).toBe(`invalid request: term: ${beyond}`);
      const after = await new LeaseholdClient({ baseUrl: api.url, token: TOKENS.admin }).get(name);
      expect(after?.revision).toBe(held.lease.revision);
    },
  );

  it("names acquiredAt and term in a raw write; a new lease starts at most at 2^52, so it can always pass on", async () => {
    const name = uniqueName("big");
    const r = await send("PUT", path(name), {
      headers: { ...admin, ...json, ...instanced, "If-None-Match": "*" },
      body: `{"holder":"h","term":9007199254740993,"leaseMs":1000,"metadata":{},"writeId":"w","acquiredAt":1e300}`,
    });
    expect(r.status).toBe(400);
    expect(r.problem.errors).toEqual([
      { path: "term", message: beyond },
      { path: "acquiredAt", message: beyond },
    ]);
    // 2^53-1 is a number the wire carries, but a lease created there could never pass on.
    const stuck = await send("PUT", path(name), {
      headers: { ...admin, ...json, ...instanced, "If-None-Match": "*" },
      body: `{"holder":"h","term":9007199254740991,"leaseMs":1000,"metadata":{},"writeId":"w","acquiredAt":0}`,
    });
    expect(stuck.status).toBe(400);
    expect(stuck.problem.errors).toEqual([
      { path: "term", message: "expected at most 4503599627370496 for a new lease" },
    ]);
    const max = await send("PUT", path(name), {
      headers: { ...admin, ...json, ...instanced, "If-None-Match": "*" },
      body: `{"holder":"h","term":4503599627370496,"leaseMs":1000,"metadata":{},"writeId":"w","acquiredAt":0}`,
    });
    expect(max.status).toBe(201);
    expect(JSON.parse(max.text).term).toBe(2 ** 52);
  });
});

describe("request bodies are I-JSON", () => {
  it.each([
    ['{"holder":"a\\ud800","leaseMs":1000}', "holder"],
    ['{"holder":"a","leaseMs":1000,"metadata":{"k":"\\udc00x"}}', "metadata.k"],
    ['{"holder":"a","leaseMs":1000,"metadata":{"\\ud83d":"v"}}', "metadata.\ud83d"],
  ])("an unpaired surrogate in %s is 400 naming %s", async (body, field) => {
    const r = await send("POST", path(uniqueName("surrogate"), "/acquire"), { headers: { ...admin, ...json }, body });
    expect(r.status).toBe(400);
    expect(r.problem.errors).toEqual([
      { path: field, message: "expected no unpaired surrogates (request bodies are I-JSON, RFC 7493)" },
    ]);
  });

  it("a surrogate pair is one character like any other", async () => {
    const r = await send("POST", path(uniqueName("pair"), "/acquire"), {
      headers: { ...admin, ...json },
      body: `{"holder":"\\ud83d\\ude00","instance":"${INSTANCE}","leaseMs":1000}`,
    });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).lease.holder).toBe("\u{1F600}");
  });
});

describe("watch resumption with Last-Event-ID", () => {
  async function firstEvents(
    name: string,
    lastEventId: string | undefined,
    count: number,
    during?: () => Promise<void>,
  ) {
    const stop = new AbortController();
    const res = await fetch(`${api.url}${path(name, "/watch")}`, {
      headers: { ...admin, ...(lastEventId === undefined ? {} : { "Last-Event-ID": lastEventId }) },
      signal: stop.signal,
    });
    const events: Array<{ id: string | undefined; holder: string | null; free: boolean }> = [];
    const reading = (async () => {
      for await (const message of readSse(res.body!)) {
        if (message.event !== "lease") continue;
        const data = JSON.parse(message.data);
        events.push({ id: message.id, holder: data.lease?.holder ?? null, free: data.free });
        if (events.length === count) break;
      }
    })();
    // Keep-alives come every 100 ms: three of them pass before the change is made.
    await new Promise((r) => setTimeout(r, 300));
    await during?.();
    await reading;
    stop.abort();
    return events;
  }

  it("a client that saw the current held revision is sent only what comes next", async () => {
    const name = uniqueName("resume");
    const client = new LeaseholdClient({ baseUrl: api.url, token: TOKENS.admin });
    const held = await client.acquire(name, { holder: "a", leaseMs: 60_000 });
    const events = await firstEvents(name, held.lease.revision, 1, async () => {
      await client.release(name, { holder: "a", term: held.lease.term });
    });
    expect(events).toEqual([{ id: String(Number(held.lease.revision) + 1), holder: null, free: true }]);
  });

  it("any other id, or a free lease, starts with the current state", async () => {
    const name = uniqueName("resume");
    const client = new LeaseholdClient({ baseUrl: api.url, token: TOKENS.admin });
    const held = await client.acquire(name, { holder: "a", leaseMs: 60_000 });
    expect(await firstEvents(name, "999", 1)).toEqual([{ id: held.lease.revision, holder: "a", free: false }]);
    const released = await client.release(name, { holder: "a", term: held.lease.term });
    expect(await firstEvents(name, released.lease.revision, 1)).toEqual([
      { id: released.lease.revision, holder: null, free: true },
    ]);
  });
});
