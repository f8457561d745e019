/**
 * Renewals first (src/api/admission.ts), in process: which requests are a current holder's and
 * keep being served when the server is late or its unreserved share of requests in flight is in
 * use, and which are answered 503 over-capacity with Retry-After before anything is done. The
 * lateness is given (the classification is what is tested here); the server in its own process
 * under a real flood is test/admission-process.test.ts.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { INSTANCE_HEADER } from "../src/http/schemas.js";
import type { LeaseStore, Stored } from "../src/lease.js";
import { inProcessApi } from "./support/in-process-api.js";

const INSTANCE = "admission-instance-0123456789";
const OTHER = "admission-other-instance-0123456789";
const path = (name: string) => `/v1/leases/${encodeURIComponent(name)}`;
const members = (group: string, member: string) =>
  `/v1/groups/${encodeURIComponent(group)}/members/${encodeURIComponent(member)}`;

function api(store: LeaseStore = new MemoryStore()) {
  let late = 0;
  const { app, fetch, url } = inProcessApi({
    store,
    auth: { insecureNoAuth: true },
    admission: { inFlight: 4, reservedInFlight: 2, lateMs: 100, lateness: () => late },
  });
  const call = async (method: string, to: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}${to}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      body: (text.startsWith("{") ? JSON.parse(text) : text) as Record<string, unknown> & { lease?: Stored },
    };
  };
  return { app, call, setLate: (ms: number) => (late = ms) };
}

/** 503 over-capacity naming `bound`, with Retry-After. */
function shed(answer: { status: number; retryAfter: string | null; body: Record<string, unknown> }, bound: string) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(503);
  expect(answer.body).toMatchObject({ type: "urn:leasehold:problem:over-capacity", bound });
  expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
}

/** A store whose reads wait while `hold` is on: requests stay in flight as long as a test wants. */
function gatedStore() {
  const inner = new MemoryStore();
  let gate: Promise<void> | undefined;
  let only: string | undefined;
  let open: () => void = () => undefined;
  const store: LeaseStore = {
    get: async (name, options) => {
      if (only === undefined || only === name) await gate;
      return inner.get(name, options);
    },
    put: (next, expected, options) => inner.put(next, expected, options),
    list: (prefix, options) => inner.list(prefix, options),
  };
  return {
    store,
    inner,
    /** Reads wait (of `name` only, when given) until `release`. */
    hold: (name?: string) => {
      only = name;
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release: () => {
      gate = undefined;
      open();
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("while the server is late (lateMs)", () => {
  it("a current holder renews (renew, acquire again, PUT of its term, release); everything else is 503 lateMs but one at a time", async () => {
    const gated = gatedStore();
    const { call, setLate } = api(gated.store);
    const held = await call("POST", `${path("jobs/a")}/acquire`, { holder: "h", instance: INSTANCE, leaseMs: 60_000 });
    expect(held.status).toBe(200);
    const other = await call("POST", `${path("jobs/b")}/acquire`, { holder: "o", instance: OTHER, leaseMs: 60_000 });
    expect(other.status).toBe(200);
    const session = await call("POST", `${members("grp", "m1")}/heartbeat`, {
      instance: INSTANCE,
      leaseMs: 60_000,
      buckets: 2,
    });
    expect(session.status).toBe(200);

    setLate(500);
    // One request that is not a holder's goes on while late (here a read that waits in the store),
    // so a takeover still makes progress; every other one is refused while it is in flight.
    gated.hold("jobs/slow");
    const slow = call("GET", path("jobs/slow"));
    await settle();
    const holder = { holder: "h", instance: INSTANCE };
    expect((await call("POST", `${path("jobs/a")}/renew`, { ...holder, term: 1 })).status).toBe(200);
    // Acquire by the current holder's own process is a renewal.
    const again = await call("POST", `${path("jobs/a")}/acquire`, { ...holder, leaseMs: 60_000 });
    expect(again.status).toBe(200);
    // The raw PUT continuing its own term (what the HTTP store's elector sends to renew).
    const lease = again.body.lease as unknown as { revision: string; acquiredAt: number; writeId: string };
    const put = await call(
      "PUT",
      path("jobs/a"),
      { holder: "h", term: 1, leaseMs: 60_000, metadata: {}, writeId: "w-renew-1", acquiredAt: lease.acquiredAt },
      { "if-match": `"${lease.revision}"`, [INSTANCE_HEADER]: INSTANCE },
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    // A member heartbeat that names its session.
    const beat = await call("POST", `${members("grp", "m1")}/heartbeat`, {
      instance: INSTANCE,
      session: session.body.session,
      leaseMs: 60_000,
    });
    expect(beat.status, JSON.stringify(beat.body)).toBe(200);

    // Acquisitions: of a free lease, of a held one (no 409 now: refused before the store decides),
    // by PUT, a new member session; and reads, lists, watches.
    shed(await call("POST", `${path("jobs/free")}/acquire`, { holder: "x", instance: OTHER, leaseMs: 5000 }), "lateMs");
    shed(await call("POST", `${path("jobs/a")}/acquire`, { holder: "x", instance: OTHER, leaseMs: 5000 }), "lateMs");
    shed(
      await call(
        "PUT",
        path("jobs/new"),
        { holder: "x", term: 1, leaseMs: 5000, metadata: {}, writeId: "w-create", acquiredAt: Date.now() },
        { "if-none-match": "*", [INSTANCE_HEADER]: OTHER },
      ),
      "lateMs",
    );
    const takeover = await call(
      "PUT",
      path("jobs/a"),
      { holder: "x", term: 2, leaseMs: 5000, metadata: {}, writeId: "w-take", acquiredAt: Date.now() },
      { "if-match": `"${(put.body as { revision: string }).revision}"`, [INSTANCE_HEADER]: OTHER },
    );
    shed(takeover, "lateMs");
    shed(await call("POST", `${members("grp", "m2")}/heartbeat`, { instance: OTHER, leaseMs: 60_000 }), "lateMs");
    shed(await call("GET", path("jobs/a")), "lateMs");
    shed(await call("GET", "/v1/leases?prefix=jobs/"), "lateMs");
    shed(await call("GET", `${path("jobs/a")}/watch`), "lateMs");
    // The service routes are not admitted at all: a supervisor still sees the server.
    expect((await call("GET", "/healthz")).status).toBe(200);

    // The one in flight is answered; then the next one goes on, late or not.
    gated.release();
    expect((await slow).status).toBe(404);
    expect((await call("GET", path("jobs/slow"))).status).toBe(404);
    // What was shed changed nothing: jobs/a is still h's, term 1; nothing was created.
    setLate(0);
    const now = await call("GET", path("jobs/a"));
    expect(now.body).toMatchObject({ holder: "h", term: 1 });
    expect((await call("GET", path("jobs/new"))).status).toBe(404);
    expect((await call("GET", path("jobs/free"))).status).toBe(404);

    // A holder's release is its own request too; then the lease is an acquisition's again.
    setLate(500);
    gated.hold("jobs/slow");
    const slowAgain = call("GET", path("jobs/slow"));
    await settle();
    expect((await call("POST", `${path("jobs/b")}/release`, { holder: "o", instance: OTHER, term: 1 })).status).toBe(
      200,
    );
    shed(await call("POST", `${path("jobs/b")}/acquire`, { holder: "o", instance: OTHER, leaseMs: 5000 }), "lateMs");
    gated.release();
    await slowAgain;
    const metrics = await call("GET", "/metrics");
    expect(String(metrics.body)).toMatch(/leasehold_admission_refused_total\{bound="lateMs",lane="other"\} \d+/);
  });
});

describe("requests in flight (inFlight, reservedInFlight)", () => {
  it("the unreserved share in use: acquisitions and reads are 503 inFlight, the holder's renewals are served", async () => {
    const gated = gatedStore();
    const { call } = api(gated.store);
    const h = { holder: "h", instance: INSTANCE };
    expect((await call("POST", `${path("jobs/a")}/acquire`, { ...h, leaseMs: 60_000 })).status).toBe(200);

    gated.hold();
    // inFlight 4, reservedInFlight 2: two reads take the unreserved share and wait in the store.
    const waiting = [call("GET", path("jobs/a")), call("GET", path("jobs/a"))];
    await settle();
    shed(await call("GET", path("jobs/a")), "inFlight");
    shed(await call("POST", `${path("jobs/c")}/acquire`, { holder: "x", instance: OTHER, leaseMs: 5000 }), "inFlight");
    // Another holder's acquire of a held lease is an acquisition: this instance saw h hold it.
    shed(await call("POST", `${path("jobs/a")}/acquire`, { holder: "x", instance: OTHER, leaseMs: 5000 }), "inFlight");
    // The holder's renewals take the reserved share: acquire again (a renewal by what this
    // instance saw) and renew.
    const again = call("POST", `${path("jobs/a")}/acquire`, { ...h, leaseMs: 60_000 });
    const renewal = call("POST", `${path("jobs/a")}/renew`, { ...h, term: 1 });
    await settle();
    // Now all four are in flight: even a holder's request waits for one to be answered.
    shed(await call("POST", `${path("jobs/a")}/release`, { ...h, term: 1 }), "inFlight");
    gated.release();
    expect((await again).status).toBe(200);
    expect((await renewal).status).toBe(200);
    for (const answer of await Promise.all(waiting)) expect(answer.status).toBe(200);
    // Everything answered (/metrics itself is not admitted: it is no /v1 route).
    expect(String((await call("GET", "/metrics")).body)).toMatch(/leasehold_requests_in_flight 0\b/);
  });

  it("a renewal by what this instance last saw that is none any more is refused after its read, before any write", async () => {
    const gated = gatedStore();
    const { call } = api(gated.store);
    const h = { holder: "h", instance: INSTANCE };
    const held = await call("POST", `${path("jobs/a")}/acquire`, { ...h, leaseMs: 60_000 });
    expect(held.status).toBe(200);
    // Another instance of the API released it: this one still thinks h holds it.
    const current = (await gated.inner.get("jobs/a"))!;
    await gated.inner.put({ ...current.record, holder: null, writeId: "elsewhere" }, current.revision);

    gated.hold();
    const waiting = [call("GET", path("jobs/a")), call("GET", path("jobs/a"))];
    await settle();
    // Taken for a renewal (reserved share), it would begin term 2: refused, nothing written.
    const taken = call("POST", `${path("jobs/a")}/acquire`, { ...h, leaseMs: 60_000 });
    await settle();
    gated.release();
    shed(await taken, "inFlight");
    await Promise.all(waiting);
    expect((await gated.inner.get("jobs/a"))?.record).toMatchObject({ holder: null, term: 1, writeId: "elsewhere" });
    // With room again, the same request is an acquisition like any other: term 2.
    expect((await call("POST", `${path("jobs/a")}/acquire`, { ...h, leaseMs: 60_000 })).body).toMatchObject({
      leader: true,
      lease: { term: 2 },
    });
  });
});
