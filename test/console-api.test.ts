/**
 * The console's server side in process (docs/console.md): the change log read through its route
 * as a user's calls make it, its bounds and its cost (no store call), the prefix and group streams
 * (a bucket in its owner's session's state, as GET reports it), the watch streams' bounds they
 * count towards, their path-shaped scopes, reserved metadata never shown, the page with its
 * Content-Security-Policy, and the switch that turns the page off. The browser test
 * (test/console-browser.test.ts) drives the same routes from Chromium.
 */
import { describe, expect, it } from "vitest";
import { type AppOptions, createApp } from "../src/api/app.js";
import { readServerConfig } from "../src/api/config/policy.js";
import { CONSOLE_CSP } from "../src/api/console/ui.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseValidationError } from "../src/errors.js";
import { LeaseholdClient } from "../src/http/client.js";
import { readSse, type SseMessage } from "../src/http/sse.js";
import { type LeaseStore, newWriteId } from "../src/lease.js";
import { TOKEN_SCOPES, TOKENS } from "./support/api-server.js";

/** Each holder's process: its own instance (what proves it is the holder). */
const instanceOf = (holder: string) => `instance-of-${holder}-0123456789`;
/** A token for one member of group g (docs/security.md, member-scoped tokens) that may only read. */
const MEMBER_READER = "member-reader-0123456789abcdef";

const WALL = Date.UTC(2026, 11, 3, 12);

/** A store that counts what it is asked, to show what the change log costs it. */
function counting(store: LeaseStore): LeaseStore & { calls: number } {
  const counted = {
    calls: 0,
    get: (name: string) => {
      counted.calls++;
      return store.get(name);
    },
    put: (...args: Parameters<LeaseStore["put"]>) => {
      counted.calls++;
      return store.put(...args);
    },
    list: (...args: Parameters<NonNullable<LeaseStore["list"]>>) => {
      counted.calls++;
      return store.list!(...args);
    },
  };
  return counted;
}

function server(options: Partial<AppOptions> = {}) {
  const clock = new ManualClock({ wallStart: WALL });
  const memory = new MemoryStore();
  const store = counting(memory);
  const app = createApp({
    store,
    clock,
    auth: {
      tokens: [
        ...TOKEN_SCOPES,
        { name: "m1-reader", token: MEMBER_READER, prefixes: ["g/_members/m1"], verbs: ["read"] },
      ],
    },
    maxSkewMs: 0,
    watchPollMs: 100,
    heartbeatMs: 1000,
    ...options,
  });
  const call = async (method: string, path: string, body?: unknown, token: string | null = TOKENS.admin) => {
    const res = await app.request(path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text.startsWith("{") ? JSON.parse(text) : text };
  };
  const lease = (name: string, verb = "") => `${LeaseholdClient.leasePath(name)}${verb}`;
  const acquire = (name: string, holder: string, leaseMs = 1000, metadata?: Record<string, string>) =>
    call("POST", lease(name, "/acquire"), {
      holder,
      instance: instanceOf(holder),
      leaseMs,
      ...(metadata ? { metadata } : {}),
    });
  const proof = (holder: string, term: number) => ({ holder, instance: instanceOf(holder), term });
  const heartbeat = (member: string, body: { leaseMs: number; buckets?: number; session?: number }) =>
    call("POST", `/v1/groups/g/members/${member}/heartbeat`, { instance: instanceOf(member), ...body });
  const history = async (name: string, token: string | null = TOKENS.reader) =>
    call("GET", lease(name, "/history"), undefined, token);
  return { app, clock, memory, store, call, lease, acquire, proof, heartbeat, history };
}

/** Opens a stream in process; `next()` is its next event (keep-alive comments are not events). */
async function open(app: ReturnType<typeof createApp>, path: string, token: string = TOKENS.reader) {
  const done = new AbortController();
  const res = await app.request(path, { headers: { authorization: `Bearer ${token}` }, signal: done.signal });
  expect(res.status, await (res.status === 200 ? "" : res.clone().text())).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const events = readSse(res.body!)[Symbol.asyncIterator]();
  return {
    // biome-ignore lint/suspicious/noExplicitAny: the tests read the event's JSON field by field
    async next(): Promise<SseMessage & { json: any }> {
      const step = await events.next();
      expect(step.done).toBe(false);
      return { ...step.value, json: JSON.parse(step.value.data) };
    },
    close: () => {
      done.abort();
      // A stream never read has no reader yet: cancel its body directly (a read one is locked: its reader cancels).
      void events.return?.();
      res.body?.cancel().catch(() => undefined);
    },
  };
}

describe("the change log (GET /v1/leases/{name}/history)", () => {
  it("tells each term's holder and what ended it: released, expired, taken over, unseen", async () => {
    const s = server();
    const name = "jobs/report";
    expect((await s.acquire(name, "alice")).status).toBe(200);
    await s.clock.advance(300);
    expect((await s.call("POST", s.lease(name, "/renew"), s.proof("alice", 1))).status).toBe(200);
    await s.clock.advance(100);
    expect((await s.call("POST", s.lease(name, "/release"), s.proof("alice", 1))).status).toBe(200);
    let h = (await s.history(name)).body;
    expect(h).toMatchObject({ name, since: WALL, firstSeenAt: WALL, limit: 20, dropped: 0 });
    expect(h.terms).toEqual([
      {
        term: 1,
        holder: "alice",
        acquiredAt: WALL,
        renewedAt: WALL + 400,
        leaseMs: 1000,
        metadata: {},
        seenAt: WALL,
        end: { kind: "released", at: WALL + 400 },
      },
    ]);

    // Bob's term runs out with nobody renewing it: "expired", judged when read.
    await s.acquire(name, "bob");
    expect((await s.history(name)).body.terms[0]).toMatchObject({ term: 2, holder: "bob", end: null });
    await s.clock.advance(1001);
    expect((await s.history(name)).body.terms[0]).toMatchObject({
      term: 2,
      end: { kind: "expired", at: WALL + 400 + 1000 },
    });
    // Carol takes it: Bob's term was taken over (no release), at Carol's acquiredAt.
    await s.acquire(name, "carol");
    const carolAt = WALL + 1401;
    h = (await s.history(name)).body;
    expect(h.terms.map((t: { term: number }) => t.term)).toEqual([3, 2, 1]);
    expect(h.terms[1].end).toEqual({ kind: "taken-over", at: carolAt, by: "carol" });
    // Carol's lease runs out and she takes it again: her term 3 expired (nobody else took it).
    await s.clock.advance(1001);
    await s.acquire(name, "carol");
    h = (await s.history(name)).body;
    expect(h.terms[1]).toMatchObject({ term: 3, end: { kind: "expired", at: carolAt + 1000 } });
    expect(h.terms[0]).toMatchObject({ term: 4, holder: "carol", end: null });

    // Terms 5 and 6 written where this server does not look (straight to the store): unseen.
    for (const [term, holder] of [
      [5, "dan"],
      [6, "erin"],
    ] as const) {
      const current = await s.memory.get(name);
      await s.memory.put(
        { ...current!.record, holder, term, acquiredAt: WALL, renewedAt: s.clock.wallNow(), writeId: newWriteId() },
        current!.revision,
      );
    }
    expect((await s.call("GET", s.lease(name))).status).toBe(200);
    h = (await s.history(name)).body;
    expect(h.terms[1]).toMatchObject({ term: 4, end: { kind: "unseen", next: 6 } });
    expect(h.terms[0]).toMatchObject({ term: 6, holder: "erin", end: null });
  });

  it("costs the store nothing: reading it calls no store operation", async () => {
    const s = server();
    await s.acquire("a/one", "x");
    const before = s.store.calls;
    for (let i = 0; i < 5; i++) expect((await s.history("a/one")).status).toBe(200);
    expect((await s.history("a/never-seen")).body).toMatchObject({ firstSeenAt: null, terms: [] });
    expect(s.store.calls).toBe(before);
  });

  it("keeps at most historyTerms per lease and historyLeases leases, and can be off", async () => {
    const s = server({ console: { historyTerms: 2, historyLeases: 2 } });
    for (const holder of ["a", "b", "c"]) {
      await s.acquire("x/one", holder);
      await s.clock.advance(1001);
    }
    const one = (await s.history("x/one")).body;
    expect(one).toMatchObject({ limit: 2, dropped: 1 });
    expect(one.terms.map((t: { term: number }) => t.term)).toEqual([3, 2]);
    await s.acquire("x/two", "a");
    await s.acquire("x/three", "a");
    // x/one changed least recently: forgotten first.
    expect((await s.history("x/one")).body).toMatchObject({ firstSeenAt: null, terms: [] });
    expect((await s.history("x/two")).body.terms).toHaveLength(1);
    expect((await s.history("x/three")).body.terms).toHaveLength(1);

    const off = server({ console: { historyTerms: 0 } });
    await off.acquire("x/one", "a");
    expect((await off.history("x/one")).body).toMatchObject({ limit: 0, terms: [], firstSeenAt: null });
  });

  it("gives each tenant a share: one tenant's churn forgets its own history, never another's within its share", async () => {
    const s = server({ console: { historyTerms: 2, historyLeases: 4 } });
    // Two other tenants: "billing/" (no token narrower than "" covers it: its first segment) and "jobs/".
    expect((await s.acquire("billing/a", "x")).status).toBe(200);
    expect((await s.acquire("jobs/b", "x")).status).toBe(200);
    // The adapters/ token's tenant churns through many more leases than the whole history keeps.
    for (let i = 0; i < 20; i++) expect((await s.acquire(`adapters/churn-${i}`, "x")).status).toBe(200);
    expect((await s.history("billing/a")).body.terms).toHaveLength(1);
    expect((await s.history("jobs/b")).body.terms).toHaveLength(1);
    // The churner keeps what is left: its two newest; its oldest are forgotten.
    expect((await s.history("adapters/churn-19")).body.terms).toHaveLength(1);
    expect((await s.history("adapters/churn-18")).body.terms).toHaveLength(1);
    expect((await s.history("adapters/churn-17")).body).toMatchObject({ firstSeenAt: null, terms: [] });
    expect((await s.history("adapters/churn-0")).body).toMatchObject({ firstSeenAt: null, terms: [] });
    // A tenant over its share gives way to one under it: billing/ takes room from adapters/.
    expect((await s.acquire("billing/c", "x")).status).toBe(200);
    expect((await s.history("billing/c")).body.terms).toHaveLength(1);
    expect((await s.history("billing/a")).body.terms).toHaveLength(1);
    expect((await s.history("adapters/churn-18")).body).toMatchObject({ firstSeenAt: null, terms: [] });
  });

  it("never shows the server's proofs: a holder's or a member's instance digest", async () => {
    const s = server();
    expect((await s.acquire("jobs/a", "alice", 1000, { region: "eu" })).status).toBe(200);
    expect((await s.heartbeat("m1", { leaseMs: 1000, buckets: 2 })).status).toBe(200);
    // The store keeps the digests (they prove who renews)...
    for (const name of ["jobs/a", "g/_members/m1"]) {
      expect((await s.memory.get(name))!.record.holderDigest).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
    // ...and nothing the console's routes send carries one.
    const alice = (await s.history("jobs/a")).body;
    expect(alice.terms[0]).toMatchObject({ holder: "alice", metadata: { region: "eu" } });
    expect((await s.history("g/_members/m1")).body.terms[0]).toMatchObject({ holder: "m1", metadata: {} });
    const stream = await open(s.app, "/v1/watch?prefix=");
    const snapshot = await stream.next();
    expect(snapshot.data).toContain('"g/_members/m1"');
    await s.acquire("jobs/b", "bob");
    const change = await stream.next();
    expect(change.json.lease.name).toBe("jobs/b");
    stream.close();
    for (const sent of [JSON.stringify(alice), snapshot.data, change.data]) {
      expect(sent).not.toContain("leasehold.");
      expect(sent).not.toContain(instanceOf("alice"));
    }
  });

  it("is read-scoped like GET: 401 without a token, 403 outside its prefixes (a member's token sees its member only)", async () => {
    const s = server();
    expect((await s.history("a/b", null)).status).toBe(401);
    expect((await s.history("other/b", TOKENS.adapters)).status).toBe(403);
    expect((await s.history("adapters/b", TOKENS.adapters)).status).toBe(200);
    expect((await s.history("g/_members/m1", MEMBER_READER)).status).toBe(200);
    expect((await s.history("g/_members/m10", MEMBER_READER)).status).toBe(403);
    expect((await s.history("g/_buckets/0", MEMBER_READER)).status).toBe(403);
    expect((await s.history("Not A Name")).status).toBe(400);
    expect((await s.call("GET", "/v1/leases/a%2F..%2Fb/history", undefined, TOKENS.reader)).status).toBe(400);
  });
});

describe("the console's streams", () => {
  it("GET /v1/watch: a snapshot, this server's changes at once, others' within a poll, keep-alives", async () => {
    const s = server();
    await s.acquire("jobs/a", "alice");
    await s.acquire("other/x", "zed");
    const stream = await open(s.app, "/v1/watch?prefix=jobs/");
    const snapshot = await stream.next();
    expect(snapshot.event).toBe("snapshot");
    expect(snapshot.json).toMatchObject({ prefix: "jobs/", now: WALL, maxSkewMs: 0, limit: 1000, truncated: false });
    expect(snapshot.json.leases).toEqual([
      expect.objectContaining({ free: false, lease: expect.objectContaining({ name: "jobs/a", holder: "alice" }) }),
    ]);

    await s.acquire("jobs/b", "bob");
    expect(await stream.next()).toMatchObject({
      event: "lease",
      json: { free: false, lease: { name: "jobs/b", holder: "bob", term: 1 } },
    });

    // Written straight to the store (another server, a library elector): seen at the next poll.
    const current = await s.memory.get("jobs/a");
    await s.memory.put({ ...current!.record, holder: null, writeId: newWriteId() }, current!.revision);
    await s.clock.advance(100);
    expect(await stream.next()).toMatchObject({ event: "lease", json: { free: true, lease: { holder: null } } });
    // ...and the change log heard it through the same path.
    expect((await s.history("jobs/a")).body.terms[0].end).toMatchObject({ kind: "released" });
    stream.close();
  });

  it("GET /v1/groups/{group}/watch: the group's status, again on every change (a hand-off in flight)", async () => {
    const s = server();
    const first = await s.heartbeat("m1", { leaseMs: 5000, buckets: 4 });
    expect(first.body.held).toHaveLength(4);
    const stream = await open(s.app, `/v1/groups/${encodeURIComponent("g")}/watch`);
    const one = await stream.next();
    expect(one.event).toBe("group");
    expect(one.json).toMatchObject({
      group: "g",
      now: WALL,
      status: { config: { buckets: 4, epoch: 1 }, balanced: true },
    });
    expect(one.json.status.members).toEqual([expect.objectContaining({ id: "m1", state: "live", held: 4, target: 4 })]);

    // A second member joins: two buckets are to move, and the stream says so.
    await s.heartbeat("m2", { leaseMs: 5000 });
    let event = await stream.next();
    while (event.json.status.members.length < 2) event = await stream.next();
    expect(event.json.status.balanced).toBe(false);
    const moving = event.json.status.buckets.filter(
      (b: { owner: string; target: string }) => b.owner === "m1" && b.target === "m2",
    );
    expect(moving).toHaveLength(2);
    expect(event.json.status.members).toEqual([
      expect.objectContaining({ id: "m1", held: 4, target: 2 }),
      expect.objectContaining({ id: "m2", held: 0, target: 2 }),
    ]);
    stream.close();

    const none = await open(s.app, "/v1/groups/nothing-here/watch");
    expect((await none.next()).json).toMatchObject({ group: "nothing-here", status: null });
    none.close();
  });

  it("a bucket is held while its owner's session lives, as GET says: in the prefix stream and the change log", async () => {
    const s = server();
    const first = await s.heartbeat("m1", { leaseMs: 1000, buckets: 2 });
    const session = first.body.session as number;
    // Past the bucket's own stamps (it is never renewed), with its owner's session renewed all along.
    for (let i = 0; i < 3; i++) {
      await s.clock.advance(600);
      expect((await s.heartbeat("m1", { leaseMs: 1000, session })).status).toBe(200);
    }
    const renewedAt = WALL + 1800;
    const bucket0 = (await s.call("GET", s.lease("g/_buckets/0"), undefined, TOKENS.reader)).body;
    expect(bucket0).toMatchObject({ holder: "m1", expiresAt: renewedAt + 1000 });
    expect(bucket0.renewedAt + bucket0.leaseMs).toBeLessThan(renewedAt);

    // The whole group under the prefix, and only the buckets (their owner read from the store): the same answer.
    const whole = await open(s.app, "/v1/watch?prefix=g/");
    const buckets = await open(s.app, "/v1/watch?prefix=g/_buckets/");
    for (const stream of [whole, buckets]) {
      const snapshot = (await stream.next()).json;
      const sent = snapshot.leases.find((e: { lease: { name: string } }) => e.lease.name === "g/_buckets/0");
      expect(sent).toEqual({ free: false, lease: bucket0 });
    }
    expect((await s.history("g/_buckets/0")).body.terms[0]).toMatchObject({ holder: "m1", end: null });

    // The owner renews: each stream tells its buckets' new expiry (the bucket records did not change),
    // the whole group's at once, the buckets' alone (their owner outside its prefix) at the next poll.
    await s.clock.advance(600);
    expect((await s.heartbeat("m1", { leaseMs: 1000, session })).status).toBe(200);
    await s.clock.advance(100);
    for (const stream of [whole, buckets]) {
      let event = await stream.next();
      while (event.json.lease.name !== "g/_buckets/0") event = await stream.next();
      expect(event.json).toMatchObject({ free: false, lease: { expiresAt: renewedAt + 1600 } });
    }

    // The owner stops renewing: once its session runs out, the next listing says the bucket is free.
    await s.clock.advance(1001);
    for (const stream of [whole, buckets]) {
      let event = await stream.next();
      while (event.json.lease?.name !== "g/_buckets/0" || !event.json.free) event = await stream.next();
      expect(event.json.lease).toMatchObject({ holder: "m1", expiresAt: renewedAt + 1600 });
      stream.close();
    }
    expect((await s.history("g/_buckets/0")).body.terms[0]).toMatchObject({
      holder: "m1",
      end: { kind: "expired", at: renewedAt + 1600 },
    });
  });

  it("a bound lease is held while its process session lives, as GET says: in the prefix stream, and free once the session runs out", async () => {
    const s = server();
    // The process session, as the HTTP store writes it: renewed by compare-and-swap, never its leases.
    const session = (renewedAt: number) => ({
      name: "procs/_sessions/a",
      holder: "a",
      term: 1,
      leaseMs: 1000,
      acquiredAt: WALL,
      renewedAt,
      metadata: {},
      writeId: newWriteId(),
    });
    let revision = (await s.memory.put(session(WALL), null)).revision;
    // A lease bound to that session (as the HTTP store writes it for a session.elector): never renewed itself.
    await s.memory.put(
      {
        name: "procs/jobs/l",
        holder: "a",
        term: 1,
        leaseMs: 1000,
        acquiredAt: WALL,
        renewedAt: WALL,
        metadata: {},
        session: { name: "procs/_sessions/a", term: 1 },
        writeId: newWriteId(),
      },
      null,
    );
    for (let i = 0; i < 3; i++) {
      await s.clock.advance(600);
      revision = (await s.memory.put(session(s.clock.wallNow()), revision)).revision;
    }
    const renewedAt = WALL + 1800;
    const bound = (await s.call("GET", s.lease("procs/jobs/l"), undefined, TOKENS.reader)).body;
    expect(bound).toMatchObject({ holder: "a", expiresAt: renewedAt + 1000 });
    // The whole prefix (the session in it) and the jobs alone (the session read from the store): the same answer.
    const whole = await open(s.app, "/v1/watch?prefix=procs/");
    const jobs = await open(s.app, "/v1/watch?prefix=procs/jobs/");
    for (const stream of [whole, jobs]) {
      const snapshot = (await stream.next()).json;
      const sent = snapshot.leases.find((e: { lease: { name: string } }) => e.lease.name === "procs/jobs/l");
      expect(sent).toEqual({ free: false, lease: bound });
    }
    // The session stops renewing: once it runs out, the next listing says the bound lease is free.
    await s.clock.advance(1101);
    for (const stream of [whole, jobs]) {
      let event = await stream.next();
      while (event.json.lease?.name !== "procs/jobs/l" || !event.json.free) event = await stream.next();
      expect(event.json.lease).toMatchObject({ holder: "a", expiresAt: renewedAt + 1000 });
      stream.close();
    }
  });

  it("count towards the watch streams' bounds with lease watches, and are refused over them exactly as watch is", async () => {
    const s = server({ limits: { watchStreamsPerToken: 3, watchStreams: 5 } });
    const mine = [
      await open(s.app, "/v1/watch?prefix=p/"),
      await open(s.app, "/v1/groups/g/watch"),
      await open(s.app, s.lease("p/one", "/watch")),
    ];
    // The token's fourth stream, whichever route: 429 naming the per-token bound.
    for (const path of ["/v1/watch?prefix=q/", "/v1/groups/g/watch", s.lease("p/two", "/watch")]) {
      const refused = await s.call("GET", path, undefined, TOKENS.reader);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("5");
      expect(refused.body).toMatchObject({ type: "urn:leasehold:problem:over-limit", bound: "watchStreamsPerToken" });
    }
    // HEAD opens nothing.
    expect(
      (
        await s.app.request("/v1/watch?prefix=p/", {
          method: "HEAD",
          headers: { authorization: `Bearer ${TOKENS.reader}` },
        })
      ).status,
    ).toBe(200);
    // Two more from another token fill the server: then 503 naming the server's bound.
    const theirs = [
      await open(s.app, "/v1/watch?prefix=p/", TOKENS.admin),
      await open(s.app, "/v1/groups/g/watch", TOKENS.admin),
    ];
    const full = await s.call("GET", "/v1/watch?prefix=adapters/p/", undefined, TOKENS.adapters);
    expect(full.status).toBe(503);
    expect(full.headers.get("retry-after")).toBe("5");
    expect(full.body).toMatchObject({ type: "urn:leasehold:problem:over-capacity", bound: "watchStreams" });
    const gauge = async () =>
      Number(/^leasehold_watch_streams_open (\d+)$/m.exec((await s.call("GET", "/metrics")).body)?.[1]);
    expect(await gauge()).toBe(5);
    // Closing a console stream gives its place back.
    mine[0]!.close();
    while ((await gauge()) !== 4) await new Promise((resolve) => setTimeout(resolve, 5));
    (await open(s.app, "/v1/watch?prefix=r/")).close();
    for (const stream of [...mine, ...theirs]) stream.close();
  });

  it("are scoped like the listing (path-shaped prefixes), and 404 on a store that cannot list", async () => {
    const s = server();
    const status = async (path: string, token: string) => (await s.call("GET", path, undefined, token)).status;
    // The adapters token reads "adapters/": a listing of "adapters" would also return "adapters-old/...".
    for (const stream of [
      await open(s.app, "/v1/watch?prefix=adapters/", TOKENS.adapters),
      await open(s.app, "/v1/watch?prefix=adapters/bill", TOKENS.adapters),
      await open(s.app, `/v1/groups/${encodeURIComponent("adapters/g")}/watch`, TOKENS.adapters),
    ]) {
      stream.close();
    }
    expect(await status("/v1/watch?prefix=adapters", TOKENS.adapters)).toBe(403);
    expect(await status("/v1/watch?prefix=", TOKENS.adapters)).toBe(403);
    expect(await status("/v1/watch?prefix=other/", TOKENS.adapters)).toBe(403);
    expect(await status("/v1/groups/other/watch", TOKENS.adapters)).toBe(403);
    // A member's token reads its member record, not its group.
    expect(await status("/v1/groups/g/watch", MEMBER_READER)).toBe(403);
    expect(await status("/v1/watch?prefix=g/", MEMBER_READER)).toBe(403);
    expect(await status("/v1/watch?prefix=a/../b/", TOKENS.reader)).toBe(400);

    const plain = new MemoryStore();
    const noList = createApp({
      store: { get: (name) => plain.get(name), put: (next, expected) => plain.put(next, expected) },
      auth: { insecureNoAuth: true },
    });
    expect((await noList.request("/v1/watch?prefix=")).status).toBe(404);
  });
});

describe("the page (GET /ui)", () => {
  it("is a shell under a strict Content-Security-Policy: its own script and style only, no inline code", async () => {
    const s = server({ heartbeatMs: 1500, maxSkewMs: 250 });
    const page = await s.app.request("/ui");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toMatch(/unsafe|https?:/);
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await page.text();
    expect(html).toContain('data-heartbeat-ms="1500" data-max-skew-ms="250"');
    // Every script is a file of this origin; no inline script, handler or style.
    expect([...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([
      '<script type="module" src="ui/console.js">',
    ]);
    expect(html).not.toMatch(/<style|style=|\son[a-z]+=|javascript:/i);

    const sizes: string[] = [];
    for (const [path, type] of [
      ["/ui/console.js", "text/javascript; charset=utf-8"],
      ["/ui/console.css", "text/css; charset=utf-8"],
    ] as const) {
      const res = await s.app.request(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      const body = await res.text();
      sizes.push(`${path} ${(body.length / 1024).toFixed(1)} KiB`);
      // "A few tens of KiB", and nothing fetched from elsewhere.
      expect(body.length).toBeLessThan(40 * 1024);
      expect(body).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
      const etag = res.headers.get("etag")!;
      expect((await s.app.request(path, { headers: { "if-none-match": etag } })).status).toBe(304);
    }
    console.log(`console assets: ${sizes.join(", ")}`);
    expect((await s.app.request("/ui", { method: "POST" })).status).toBe(405);
  });

  it("is off with one switch (the history route and the streams stay), and bad options are refused", async () => {
    const s = server({ console: { ui: false } });
    expect((await s.app.request("/ui")).status).toBe(404);
    expect((await s.app.request("/ui/console.js")).status).toBe(404);
    const doc = (await s.call("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/ui"))).toEqual([]);
    expect(doc.paths).toHaveProperty("/v1/leases/{name}/history");
    expect(() =>
      createApp({ store: new MemoryStore(), auth: { insecureNoAuth: true }, console: { historyTerms: -1 } }),
    ).toThrow(LeaseValidationError);
    expect(() =>
      createApp({ store: new MemoryStore(), auth: { insecureNoAuth: true }, console: { historyLeases: 0 } }),
    ).toThrow(/console\.historyLeases: expected a whole number of leases 1-100000, got 0/);

    // The server configuration: on by default where streams work, off on Lambda.
    const tokens = JSON.stringify(TOKEN_SCOPES);
    expect(readServerConfig({ LEASEHOLD_TOKENS: tokens }, "node").console).toEqual({
      ui: true,
      historyTerms: 20,
      historyLeases: 1000,
    });
    expect(readServerConfig({ LEASEHOLD_TOKENS: tokens }, "worker").console.ui).toBe(true);
    const lambda = { LEASEHOLD_TOKENS: tokens, LEASEHOLD_STORE: "dynamodb://leases?region=eu-west-1" };
    expect(readServerConfig(lambda, "lambda").console.ui).toBe(false);
    expect(() => readServerConfig({ LEASEHOLD_HISTORY_TERMS: "many" }, "node")).toThrow(
      /LEASEHOLD_HISTORY_TERMS: expected a whole number of terms 0-1000, got "many"/,
    );
  });
});
