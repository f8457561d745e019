/** Every route, error status and auth scope of the API, in process (app.fetch, no socket). */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseCorruptError, LeaseStoreError } from "../src/errors.js";
import { LeaseholdClient } from "../src/http/client.js";
import { Problem } from "../src/http/schemas.js";
import type { LeaseStore } from "../src/lease.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";

const api = inProcessApi({ watchPollMs: 50, heartbeatMs: 100 });
/** This test process's instance: every lease write of it carries this one. */
const INSTANCE = crypto.randomUUID();
const instanced = { "Leasehold-Instance": INSTANCE };

const path = (name: string, suffix = "") => `${LeaseholdClient.leasePath(name)}${suffix}`;

async function call(
  method: string,
  p: string,
  body?: unknown,
  options: { token?: string | null; headers?: Record<string, string>; raw?: string } = {},
) {
  const token = options.token === undefined ? TOKENS.admin : options.token;
  const res = await api.fetch(`${api.url}${p}`, {
    method,
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined || options.raw !== undefined ? { "Content-Type": "application/json" } : {}),
      ...options.headers,
    },
    ...(options.raw !== undefined ? { body: options.raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    type,
    headers: res.headers,
    body: text && type.includes("json") ? JSON.parse(text) : text,
  };
}

function expectProblem(r: Awaited<ReturnType<typeof call>>, status: number, kind: string) {
  expect(r.status).toBe(status);
  expect(r.type).toBe("application/problem+json");
  expect(Problem.parse(r.body)).toMatchObject({ status, type: `urn:leasehold:problem:${kind}` });
}

const acquire = (name: string, holder: string, extra: Record<string, unknown> = {}, token?: string) =>
  call(
    "POST",
    path(name, "/acquire"),
    { holder, instance: INSTANCE, leaseMs: 10_000, ...extra },
    token === undefined ? {} : { token },
  );
/** A renew or release body of this process. */
const held = (holder: string, term: number) => ({ holder, instance: INSTANCE, term });

describe("lease lifecycle", () => {
  it("acquire, renew by re-acquire and renew, conflict for others, release keeps the term, re-acquire bumps it", async () => {
    const name = uniqueName();
    const a = await acquire(name, "alice", { metadata: { addr: "10.0.0.1:80" } });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({
      leader: true,
      lease: { name, holder: "alice", term: 1, leaseMs: 10_000, metadata: { addr: "10.0.0.1:80" } },
    });
    expect(a.body.lease.expiresAt).toBe(a.body.lease.renewedAt + 10_000);
    expect(a.headers.get("etag")).toBe(`"${a.body.lease.revision}"`);

    const again = await acquire(name, "alice");
    expect(again.body).toMatchObject({ leader: true, lease: { holder: "alice", term: 1 } });
    expect(again.body.lease.revision).not.toBe(a.body.lease.revision);

    const bob = await acquire(name, "bob");
    expectProblem(bob, 409, "conflict");
    expect(bob.body).toMatchObject({ leader: false, lease: { holder: "alice", term: 1 } });

    const renewed = await call("POST", path(name, "/renew"), held("alice", 1));
    expect(renewed.body).toMatchObject({ leader: true, lease: { holder: "alice", term: 1 } });
    expectProblem(await call("POST", path(name, "/renew"), held("bob", 1)), 409, "conflict");
    expectProblem(await call("POST", path(name, "/renew"), held("alice", 2)), 409, "conflict");
    expectProblem(
      await call("POST", path(name, "/renew"), held("alice", 1), { token: TOKENS.reader }),
      403,
      "forbidden",
    );

    expectProblem(await call("POST", path(name, "/release"), held("bob", 1)), 409, "conflict");
    const released = await call("POST", path(name, "/release"), held("alice", 1));
    expect(released.body).toMatchObject({ leader: false, lease: { holder: null, term: 1 } });
    const twice = await call("POST", path(name, "/release"), held("alice", 1));
    expect(twice.status).toBe(200);
    expect(twice.body.lease.revision).toBe(released.body.lease.revision);
    expectProblem(await call("POST", path(name, "/renew"), held("alice", 1)), 409, "conflict");

    const b = await acquire(name, "bob");
    expect(b.body).toMatchObject({ leader: true, lease: { holder: "bob", term: 2 } });
    const got = await call("GET", path(name));
    expect(got.body).toMatchObject({ holder: "bob", term: 2 });
  });

  it("renew and release of a lease that never existed: 404; GET of one: 404", async () => {
    const name = uniqueName();
    expectProblem(await call("POST", path(name, "/renew"), held("a", 1)), 404, "not-found");
    expectProblem(await call("POST", path(name, "/release"), held("a", 1)), 404, "not-found");
    expectProblem(await call("GET", path(name)), 404, "not-found");
  });

  it("expiry: leaseMs on this instance's clock for its own writes, renewedAt + leaseMs + maxSkewMs for another's", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 2) });
    const local = inProcessApi({ clock, maxSkewMs: 500 });
    // A second instance of the API on the same store (another replica): it did not write the record.
    const other = inProcessApi({ clock, maxSkewMs: 500, store: local.store });
    const poster = (api: typeof local, name: string) => (suffix: string, body: unknown) =>
      api
        .fetch(`${api.url}${path(name, suffix)}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        })
        .then(async (r) => ({ status: r.status, body: await r.json() }));
    {
      const name = uniqueName();
      const post = poster(local, name);
      const elsewhere = poster(other, name);
      expect((await post("/acquire", { holder: "a", instance: INSTANCE, leaseMs: 1000 })).status).toBe(200);
      await clock.advance(999); // leaseMs since this instance wrote it: not yet
      expect((await post("/acquire", { holder: "b", instance: INSTANCE, leaseMs: 1000 })).status).toBe(409);
      await clock.advance(1);
      // The other instance judges by the record's stamp and the skew bound: not before 1501 ms.
      expect((await elsewhere("/acquire", { holder: "c", instance: INSTANCE, leaseMs: 1000 })).status).toBe(409);
      // The writer itself knows its own write: free now, without waiting for the skew bound.
      const b = await post("/acquire", { holder: "b", instance: INSTANCE, leaseMs: 1000 });
      expect(b.body).toMatchObject({ leader: true, lease: { holder: "b", term: 2 } });
      // The old holder's renewal of its term is refused: the lease moved on.
      expect((await post("/renew", held("a", 1))).status).toBe(409);
      // b's record, judged by the other instance: renewedAt + leaseMs + maxSkewMs.
      await clock.advance(1500);
      expect((await elsewhere("/acquire", { holder: "c", instance: INSTANCE, leaseMs: 1000 })).status).toBe(409);
      await clock.advance(1);
      expect((await elsewhere("/acquire", { holder: "c", instance: INSTANCE, leaseMs: 1000 })).body).toMatchObject({
        leader: true,
        lease: { holder: "c", term: 3 },
      });
      // An expired holder re-acquiring gets a new term, never the old one.
      await clock.advance(1501);
      expect((await post("/renew", held("c", 3))).status).toBe(409);
      expect((await post("/acquire", { holder: "c", instance: INSTANCE, leaseMs: 1000 })).body).toMatchObject({
        lease: { term: 4 },
      });
    }
  });

  it("lists by prefix in name order with limit and cursor", async () => {
    const root = uniqueName("list");
    for (const n of ["c", "a", "b"]) await acquire(`${root}/${n}`, "x");
    const page1 = await call("GET", `/v1/leases?prefix=${encodeURIComponent(`${root}/`)}&limit=2`);
    expect(page1.body.leases.map((l: { name: string }) => l.name)).toEqual([`${root}/a`, `${root}/b`]);
    expect(page1.body.next).toBe(`${root}/b`);
    const page2 = await call(
      "GET",
      `/v1/leases?prefix=${encodeURIComponent(`${root}/`)}&limit=2&cursor=${encodeURIComponent(page1.body.next)}`,
    );
    expect(page2.body).toMatchObject({ leases: [{ name: `${root}/c` }], next: null });
    expectProblem(await call("GET", "/v1/leases?limit=0"), 400, "validation");
    expectProblem(await call("GET", "/v1/leases?prefix=UPPER"), 400, "validation");
  });
});

describe("raw compare-and-swap (PUT)", () => {
  const body = (extra: Record<string, unknown> = {}) => ({
    holder: "h",
    term: 1,
    leaseMs: 5000,
    metadata: {},
    writeId: "w-1",
    acquiredAt: 1,
    ...extra,
  });
  it("creates with If-None-Match, replaces with If-Match, refuses a stale revision with the current lease", async () => {
    const name = uniqueName();
    expectProblem(await call("PUT", path(name), body(), { headers: instanced }), 428, "precondition-required");
    const created = await call("PUT", path(name), body(), { headers: { ...instanced, "If-None-Match": "*" } });
    expect(created.status).toBe(201);
    expectProblem(
      await call("PUT", path(name), body(), { headers: { ...instanced, "If-None-Match": "*" } }),
      412,
      "precondition-failed",
    );
    const rev = created.body.revision;
    const replaced = await call("PUT", path(name), body({ writeId: "w-2" }), {
      headers: { ...instanced, "If-Match": `"${rev}"` },
    });
    expect(replaced.body).toMatchObject({ writeId: "w-2" });
    const stale = await call("PUT", path(name), body({ writeId: "w-3" }), {
      headers: { ...instanced, "If-Match": `"${rev}"` },
    });
    expectProblem(stale, 412, "precondition-failed");
    expect(stale.body.lease).toMatchObject({ writeId: "w-2", revision: replaced.body.revision });
    expectProblem(
      await call("PUT", path(name), body({ acquiredAt: Date.now() + 3_600_000 }), {
        headers: { "If-Match": `"${replaced.body.revision}"` },
      }),
      400,
      "validation",
    );
  });

  it("a PUT that would move the term backwards, skip it, or hand the lease over without term + 1 is 409 and changes nothing", async () => {
    const name = uniqueName();
    const held = await acquire(name, "a", { leaseMs: 60_000 });
    expect(held.body.lease).toMatchObject({ holder: "a", term: 1 });
    const ifMatch = { headers: { ...instanced, "If-Match": `"${held.body.lease.revision}"` } };
    const refused = [
      // The reproduction from the issue: a live lease given away at term 0.
      [body({ holder: "someone-else", term: 0, leaseMs: 60_000, acquiredAt: 0 }), "term-decreased"],
      [body({ holder: "someone-else", term: 1 }), "new-holder-needs-next-term"],
      [body({ holder: "someone-else", term: 3 }), "term-skipped"],
      [body({ holder: "a", term: 3 }), "term-skipped"],
      [body({ holder: null, term: 2 }), "release-keeps-term"],
    ] as const;
    for (const [write, rule] of refused) {
      const r = await call("PUT", path(name), write, ifMatch);
      expectProblem(r, 409, "term-rule");
      expect(r.body.rule).toBe(rule);
      expect(r.body.lease).toMatchObject({ holder: "a", term: 1, revision: held.body.lease.revision });
      expect((await call("GET", path(name))).body).toEqual(held.body.lease);
    }
    // A release keeps the term; from free, a new holder takes exactly term + 1.
    const released = await call("PUT", path(name), body({ holder: null, term: 1, writeId: "rel" }), ifMatch);
    expect(released.body).toMatchObject({ holder: null, term: 1 });
    const fromFree = { headers: { ...instanced, "If-Match": `"${released.body.revision}"` } };
    const sameTerm = await call("PUT", path(name), body({ holder: "b", term: 1 }), fromFree);
    expectProblem(sameTerm, 409, "term-rule");
    expect(sameTerm.body.rule).toBe("new-holder-needs-next-term");
    const taken = await call("PUT", path(name), body({ holder: "b", term: 2, writeId: "b2" }), fromFree);
    expect(taken.body).toMatchObject({ holder: "b", term: 2 });
    // The same holder renews at its term, or re-acquires at term + 1.
    const renewed = await call("PUT", path(name), body({ holder: "b", term: 2, writeId: "b2r" }), {
      headers: { ...instanced, "If-Match": `"${taken.body.revision}"` },
    });
    expect(renewed.body).toMatchObject({ holder: "b", term: 2 });
    const again = await call("PUT", path(name), body({ holder: "b", term: 3, writeId: "b3" }), {
      headers: { ...instanced, "If-Match": `"${renewed.body.revision}"` },
    });
    expect(again.body).toMatchObject({ holder: "b", term: 3 });
    // A create names a holder from term 1 up (any higher start only raises the fencing token).
    const fresh = uniqueName();
    const zero = await call("PUT", path(fresh), body({ term: 0 }), { headers: { ...instanced, "If-None-Match": "*" } });
    expectProblem(zero, 409, "term-rule");
    expect(zero.body.rule).toBe("create-needs-term");
    expectProblem(await call("GET", path(fresh)), 404, "not-found");
  });

  it("a malformed If-Match or If-None-Match is 400 naming the header; a well-formed stale one is 412", async () => {
    const name = uniqueName();
    const held = await acquire(name, "a", { leaseMs: 60_000 });
    const takeover = body({ holder: "b", term: 2 });
    for (const headers of [
      { "If-Match": '"abc"' },
      { "If-Match": '"0"' },
      { "If-Match": "1" },
      { "If-Match": 'W/"1"' },
      { "If-Match": '"1", "2"' },
      { "If-Match": "*" },
      { "If-None-Match": '"1"' },
      { "If-Match": `"${held.body.lease.revision}"`, "If-None-Match": "*" },
    ]) {
      const r = await call("PUT", path(name), takeover, { headers });
      expectProblem(r, 400, "validation");
      const header =
        "If-None-Match" in headers && !("If-Match" in headers) ? "If-None-Match" : Object.keys(headers).at(-1);
      expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual([header]);
      expect(r.headers.get("retry-after")).toBeNull();
      expect(JSON.stringify(r.body)).not.toMatch(/\/(tmp|var|home|work)\//);
    }
    const stale = await call("PUT", path(name), takeover, { headers: { ...instanced, "If-Match": '"999"' } });
    expectProblem(stale, 412, "precondition-failed");
    expect(stale.body.lease).toEqual(held.body.lease);
    expect((await call("GET", path(name))).body).toEqual(held.body.lease);
  });
});

describe("errors", () => {
  const name = "errors/one";
  it.each([
    [
      "a bad name",
      () => call("POST", "/v1/leases/Bad%20Name/acquire", { holder: "a", leaseMs: 1000 }),
      400,
      "validation",
    ],
    ["an unknown field", () => acquire(name, "a", { extra: 1 }), 400, "validation"],
    ["a missing field", () => call("POST", path(name, "/acquire"), { holder: "a" }), 400, "validation"],
    ["a leaseMs out of bounds", () => acquire(name, "a", { leaseMs: 1 }), 400, "validation"],
    ["metadata over 1 KiB", () => acquire(name, "a", { metadata: { m: "x".repeat(1100) } }), 400, "validation"],
    ["broken JSON", () => call("POST", path(name, "/acquire"), undefined, { raw: "{nope" }), 400, "validation"],
    ["a JSON array", () => call("POST", path(name, "/acquire"), [1, 2]), 400, "validation"],
    ["a body over the limit", () => acquire(name, "a", { pad: "x".repeat(5000) }), 413, "payload-too-large"],
    [
      "a wrong content type",
      () => call("POST", path(name, "/acquire"), undefined, { headers: { "Content-Type": "text/plain" } }),
      415,
      "unsupported-media-type",
    ],
    [
      "no content type",
      () =>
        api
          .fetch(`${api.url}${path(name, "/acquire")}`, {
            method: "POST",
            headers: { Authorization: `Bearer ${TOKENS.admin}` },
            body: new Uint8Array([123, 125]),
          })
          .then(async (r) => ({
            status: r.status,
            type: r.headers.get("content-type") ?? "",
            headers: r.headers,
            body: await r.json(),
          })),
      415,
      "unsupported-media-type",
    ],
    ["an unknown route", () => call("GET", "/v2/nothing"), 404, "not-found"],
    ["an unencoded name", () => call("GET", "/v1/leases/a/b/c"), 404, "not-found"],
  ])("%s", async (_what, request, status, kind) => {
    const r = await request();
    expectProblem(r as Awaited<ReturnType<typeof call>>, status as number, kind as string);
  });

  it("validation problems name each failing field", async () => {
    const r = await acquire(name, "", { leaseMs: "soon", surprise: true });
    expect(r.body.errors).toEqual(
      expect.arrayContaining([
        { path: "holder", message: "expected a non-empty string" },
        { path: "leaseMs", message: "expected a number of milliseconds" },
        { path: "surprise", message: "unknown field" },
      ]),
    );
    expectProblem(await call("GET", path(name)), 404, "not-found"); // nothing was written
  });

  it("a corrupt record is reported (500 problem, naming the lease) and never overwritten by acquire", async () => {
    const memory = new MemoryStore();
    let writes = 0;
    const corrupt: LeaseStore = {
      get: async (name) => {
        throw new LeaseCorruptError(name, [{ path: "term", message: "expected a number" }]);
      },
      put: async (next, expected) => {
        writes++;
        return memory.put(next, expected);
      },
    };
    const local = inProcessApi({ store: corrupt });
    {
      const post = await local.fetch(`${local.url}${path("jobs/broken", "/acquire")}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json" },
        body: JSON.stringify({ holder: "a", instance: INSTANCE, leaseMs: 1000 }),
      });
      expect(post.status).toBe(500);
      expect(post.headers.get("content-type")).toBe("application/problem+json");
      expect(await post.json()).toMatchObject({
        type: "urn:leasehold:problem:corrupt",
        detail: expect.stringContaining('lease "jobs/broken" holds a record leasehold cannot read'),
      });
      expect(writes).toBe(0);
    }
  });

  it("an ambiguous store failure is 503 with Retry-After, and its detail keeps the backend's message to itself", async () => {
    const failing: LeaseStore = {
      get: async () => null,
      put: async () => {
        throw new LeaseStoreError("injected timeout at /var/lib/secret/leasehold.db", { ambiguous: true });
      },
    };
    const local = inProcessApi({ store: failing });
    {
      const r = await local.fetch(`${local.url}${path("x", "/acquire")}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json" },
        body: JSON.stringify({ holder: "a", instance: INSTANCE, leaseMs: 1000 }),
      });
      expect(r.status).toBe(503);
      expect(r.headers.get("retry-after")).toBe("1");
      expect(r.headers.get("content-type")).toBe("application/problem+json");
      const detail = ((await r.json()) as { detail: string }).detail;
      // The first write of a create is its count's (src/api/limits.ts RecordQuota).
      expect(detail).toBe(
        "the store failed during count; a write may or may not have applied, and is settled by reading; retry",
      );
      expect(detail).not.toContain("/var/lib");
    }
  });
});

describe("auth", () => {
  it("401 without or with an unknown token, with WWW-Authenticate", async () => {
    const none = await call("GET", path("adapters/x"), undefined, { token: null });
    expectProblem(none, 401, "unauthorized");
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    expectProblem(
      await call("GET", path("adapters/x"), undefined, { token: "not-a-real-token-at-all" }),
      401,
      "unauthorized",
    );
    expectProblem(
      await call("GET", path("adapters/x"), undefined, { headers: { Authorization: "Basic abc" }, token: null }),
      401,
      "unauthorized",
    );
  });

  it("403 outside the token's verbs or prefixes; allowed inside", async () => {
    const name = uniqueName();
    expectProblem(await acquire(name, "a", {}, TOKENS.reader), 403, "forbidden");
    expectProblem(await acquire(name, "a", {}, TOKENS.adapters), 403, "forbidden");
    expectProblem(
      await call("GET", `/v1/leases?prefix=jobs/`, undefined, { token: TOKENS.adapters }),
      403,
      "forbidden",
    );
    const inside = `adapters/${name}`;
    expect((await acquire(inside, "a", {}, TOKENS.adapters)).status).toBe(200);
    expect((await call("GET", path(inside), undefined, { token: TOKENS.reader })).status).toBe(200);
    expect((await call("GET", `/v1/leases?prefix=adapters/`, undefined, { token: TOKENS.adapters })).status).toBe(200);
  });

  it("refuses to serve beyond loopback without tokens", async () => {
    await expect(startApi({ host: "0.0.0.0", tokens: [] })).rejects.toThrow(
      /refusing to serve on 0.0.0.0 without tokens/,
    );
  });

  it("the token never appears in responses or metrics", async () => {
    await call("GET", path("adapters/x"), undefined, { token: "wrong-token-value-1234567890" });
    const metrics = await call("GET", "/metrics");
    expect(String(metrics.body)).not.toContain("token-value");
    expect(String(metrics.body)).not.toContain(TOKENS.admin);
  });
});

describe("watch (Server-Sent Events)", () => {
  it("sends the current state first, then each change, including a release made through another request", async () => {
    const name = uniqueName("watch");
    const a = await acquire(name, "alice");
    const client = api.client(TOKENS.admin);
    const stop = new AbortController();
    const events: Array<{ holder: string | null | undefined; free: boolean }> = [];
    const seen = (async () => {
      for await (const e of client.watch(name, stop.signal)) {
        events.push({ holder: e.lease?.holder, free: e.free });
        if (events.length === 3) stop.abort();
      }
    })().catch(() => undefined);
    await waitFor(() => events.length >= 1);
    await call("POST", path(name, "/release"), held("alice", a.body.lease.term));
    await waitFor(() => events.length >= 2);
    await acquire(name, "bob");
    await seen;
    expect(events).toEqual([
      { holder: "alice", free: false },
      { holder: null, free: true },
      { holder: "bob", free: false },
    ]);
  });

  it("sees writes made by another API instance on the same store (poll)", async () => {
    const shared = new MemoryStore();
    const one = inProcessApi({ store: shared, watchPollMs: 50 });
    const two = inProcessApi({ store: shared, watchPollMs: 50 });
    {
      const name = uniqueName("multi");
      const stop = new AbortController();
      const holders: Array<string | null | undefined> = [];
      const watching = (async () => {
        for await (const e of one.client(TOKENS.admin).watch(name, stop.signal)) {
          holders.push(e.lease?.holder ?? null);
          if (holders.length === 2) stop.abort();
        }
      })().catch(() => undefined);
      await waitFor(() => holders.length >= 1);
      await two.client(TOKENS.admin).acquire(name, {
        holder: "elsewhere",
        leaseMs: 5000,
      });
      await watching;
      expect(holders).toEqual([null, "elsewhere"]);
    }
  });
});

describe("watch where the runtime ends every request at a deadline (streams.timeLeft, as on Lambda)", () => {
  it("each stream ends with an end event; the client resumes at once with Last-Event-ID, never counting it a failure, and misses nothing", async () => {
    const shared = new MemoryStore();
    const opened: number[] = [];
    // Every stream may run 30 ms: far more ends than the client's reconnect budget (3) while nothing changes.
    const short = inProcessApi({ store: shared, streams: { timeLeft: () => 30 }, heartbeatMs: 10 });
    const name = uniqueName("deadline");
    const writer = short.client(TOKENS.admin);
    await writer.acquire(name, { holder: "alice", leaseMs: 60_000 });
    const raw = await short.fetch(`${short.url}${path(name, "/watch")}`, {
      headers: { Authorization: `Bearer ${TOKENS.admin}` },
    });
    const text = await raw.text();
    expect(text).toMatch(/^event: lease\n/);
    expect(text).toContain(
      'event: end\ndata: {"reason":"the runtime ends this request soon: resume with Last-Event-ID"}',
    );
    const stop = new AbortController();
    const holders: Array<string | null> = [];
    const counting = inProcessApi({
      store: shared,
      streams: {
        timeLeft: () => {
          opened.push(1);
          return 30;
        },
      },
    });
    const watching = (async () => {
      for await (const e of counting.client(TOKENS.admin).watch(name, stop.signal)) {
        holders.push(e.lease?.holder ?? null);
        if (holders.length === 2) stop.abort();
      }
    })();
    await waitFor(() => opened.length >= 8);
    await writer.release(name, { holder: "alice", term: 1 });
    await watching;
    expect(holders).toEqual(["alice", null]);
  });
});

describe("service routes", () => {
  it("/healthz, /metrics, /openapi.json", async () => {
    expect((await call("GET", "/healthz", undefined, { token: null })).body).toEqual({ ok: true });
    await acquire(uniqueName(), "m");
    const metrics = String((await call("GET", "/metrics")).body);
    expect(metrics).toMatch(
      /leasehold_http_requests_total\{route="\/v1\/leases\/:name\/acquire",method="POST",status="200"\} \d+/,
    );
    expect(metrics).toMatch(/leasehold_store_call_duration_seconds_count\{op="put"\} \d+/);
    expect(metrics).toContain("# TYPE leasehold_cas_conflicts_total counter");
    const doc = (await call("GET", "/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/v1/leases/{name}/acquire",
        "/v1/leases/{name}/renew",
        "/v1/leases/{name}/release",
        "/v1/leases/{name}",
        "/v1/leases",
      ]),
    );
    expect(doc.components.schemas.AcquireRequest.required).toEqual(["holder", "instance", "leaseMs"]);
  });
});

async function waitFor(condition: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
