/**
 * The API trusts no name, holder or member beyond what its token proves (docs/security.md), in
 * process: a holder proves it is the holder by its instance (two processes with one holder name
 * never both lead), the raw PUT is a verb of its own and keeps the acquire rules, group records
 * belong to their group and a bucket shows its real state, scopes are paths, a write-only token
 * reads nothing through a refusal, reserved metadata is the server's, and the smaller items.
 * Each refused request changes nothing. The issue's reproductions where a name reaches the store
 * run on real stores too: the successor capture and the session reference across prefixes on
 * SQLite, the aliased group records and the fake member on SQLite, Azure Blob and S3.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseTokens, type TokenScope } from "../src/api/auth.js";
import { readServerConfig } from "../src/api/config/policy.js";
import { startupLine } from "../src/api/config/startup-line.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseValidationError } from "../src/errors.js";
import { LeaseholdClient } from "../src/http/client.js";
import type { LeaseStore, Stored } from "../src/lease.js";
import { readable } from "../src/listing.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { TOKEN_SCOPES, TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";
import { RAW_BACKENDS } from "./support/raw-backends.js";

const path = (name: string, suffix = "") => `${LeaseholdClient.leasePath(name)}${suffix}`;

function harness(options: { tokens?: TokenScope[]; clock?: ManualClock; store?: LeaseStore; noAuth?: boolean } = {}) {
  const api = inProcessApi({
    ...(options.store ? { store: options.store } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    auth: options.noAuth ? { insecureNoAuth: true } : { tokens: options.tokens ?? TOKEN_SCOPES },
    maxSkewMs: 500,
    ...(options.noAuth ? { allowedHosts: "loopback" as const } : {}),
  });
  const call = async (
    method: string,
    p: string,
    body?: unknown,
    o: { token?: string | null; headers?: Record<string, string>; host?: string } = {},
  ) => {
    const token = o.token === undefined ? TOKENS.admin : o.token;
    const res = await api.fetch(`${o.host ? `http://${o.host}` : api.url}${p}`, {
      method,
      headers: {
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...o.headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    return { status: res.status, headers: res.headers, text, body: type.includes("json") ? JSON.parse(text) : text };
  };
  const snapshot = async (): Promise<Stored[]> => {
    const out: Stored[] = [];
    for await (const s of readable(api.store.list!(""))) out.push(s);
    return out;
  };
  return { api, call, snapshot };
}

const kind = (r: { body: { type?: string } }) => r.body.type?.split(":").at(-1);

/**
 * The stores a name reaches in the issue's reproductions: memory, and SQLite (a file in a temp
 * dir), Azure Blob (azurite) and S3 (versitygw) as test/unreadable-records.test.ts opens them,
 * each test on a fresh one. `snapshot()` lists every record with its revision (the store's own
 * version of it), so a snapshot that compares equal is every record unchanged.
 */
const MEMORY = {
  backend: "memory",
  open: async () => ({ store: new MemoryStore() as LeaseStore, close: async () => undefined }),
};
const [SQLITE, AZURE, S3] = RAW_BACKENDS;

/** A fresh store of `open`'s for each test of the enclosing describe. */
function freshStore(open: () => Promise<{ store: LeaseStore; close(): Promise<void> }>): () => LeaseStore {
  let opened: { store: LeaseStore; close(): Promise<void> } | undefined;
  beforeEach(async () => {
    opened = await open();
  });
  afterEach(async () => {
    await opened?.close();
    opened = undefined;
  });
  return () => opened!.store;
}

describe("a holder proves it is the holder (its instance)", () => {
  it("two processes with one holder name never both lead: one leads, the other gets 409 holder-in-use", async () => {
    const { call, snapshot } = harness();
    const name = uniqueName("twins");
    // Twenty copies of one process's config (same holder), each with its own instance, at once.
    const instances = Array.from({ length: 20 }, () => crypto.randomUUID());
    const answers = await Promise.all(
      instances.map((instance) =>
        call("POST", path(name, "/acquire"), { holder: "billing-7f9c", instance, leaseMs: 60_000 }),
      ),
    );
    const leaders = answers.filter((a) => a.status === 200 && a.body.leader === true);
    expect(leaders).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(409);
      expect(kind(a)).toBe("holder-in-use");
      expect(a.body.leader).toBe(false);
      expect(a.body.detail).toContain("another process");
    }
    const winner = instances[answers.indexOf(leaders[0]!)]!;
    const loser = instances.find((i) => i !== winner)!;
    const held = await snapshot();
    // The loser can neither renew nor release nor re-acquire (which would renew) the winner's term.
    for (const [suffix, body] of [
      ["/renew", { holder: "billing-7f9c", instance: loser, term: 1 }],
      ["/release", { holder: "billing-7f9c", instance: loser, term: 1 }],
      ["/acquire", { holder: "billing-7f9c", instance: loser, leaseMs: 60_000 }],
    ] as const) {
      const r = await call("POST", path(name, suffix), body);
      expect([r.status, kind(r)], suffix).toEqual([409, "holder-in-use"]);
    }
    expect(await snapshot()).toEqual(held);
    // The winner's own retry is idempotent: the same term, renewed.
    const again = await call("POST", path(name, "/acquire"), {
      holder: "billing-7f9c",
      instance: winner,
      leaseMs: 60_000,
    });
    expect(again.body).toMatchObject({ leader: true, lease: { term: 1 } });
    // Once it releases, the other process takes the lease, at the next term.
    await call("POST", path(name, "/release"), { holder: "billing-7f9c", instance: winner, term: 1 });
    const next = await call("POST", path(name, "/acquire"), {
      holder: "billing-7f9c",
      instance: loser,
      leaseMs: 60_000,
    });
    expect(next.body).toMatchObject({ leader: true, lease: { holder: "billing-7f9c", term: 2 } });
  });

  it("a plain acquire of a lease another holder still holds is 409 conflict with Retry-After (when the server expects it free), and changes nothing", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 3) });
    const { call, snapshot } = harness({ clock });
    const name = uniqueName("acquire-held");
    const a = { holder: "a", instance: "a-instance-000000000001", leaseMs: 60_000 };
    const b = { holder: "b", instance: "b-instance-000000000001", leaseMs: 60_000 };
    expect((await call("POST", path(name, "/acquire"), a)).body).toMatchObject({ leader: true, lease: { term: 1 } });
    const held = await snapshot();
    // This instance wrote the record: free once leaseMs has passed on its own clock since that
    // write (src/api/own-writes.ts), in 60 s; another instance waits for the skew bound too (api.test.ts).
    for (const [advance, retryAfter] of [
      [0, "60"],
      [30_000, "30"],
      [29_999, "1"],
    ] as const) {
      await clock.advance(advance);
      const r = await call("POST", path(name, "/acquire"), b);
      expect([r.status, kind(r), r.body.leader]).toEqual([409, "conflict", false]);
      expect(r.headers.get("retry-after")).toBe(retryAfter);
      expect(r.body.lease).toMatchObject({ holder: "a", term: 1 });
    }
    expect(await snapshot()).toEqual(held);
    await clock.advance(1);
    expect((await call("POST", path(name, "/acquire"), b)).body).toMatchObject({
      leader: true,
      lease: { holder: "b", term: 2 },
    });
  });

  it("the instance is never stored or shown: the record keeps its digest, and no view shows that either", async () => {
    const { api, call } = harness();
    const name = uniqueName("digest");
    const instance = crypto.randomUUID();
    const acquired = await call("POST", path(name, "/acquire"), {
      holder: "h",
      instance,
      leaseMs: 60_000,
      metadata: { addr: "10.0.0.7:80" },
    });
    const stored = (await api.store.get(name))!;
    expect(JSON.stringify(stored)).not.toContain(instance);
    expect(stored.record.metadata).toEqual({ addr: "10.0.0.7:80" });
    expect(stored.record.holderDigest).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const views = [
      acquired.text,
      (await call("GET", path(name))).text,
      (await call("GET", `/v1/leases?prefix=${encodeURIComponent(name)}`)).text,
      (await call("POST", path(name, "/acquire"), { holder: "other", instance: crypto.randomUUID(), leaseMs: 60_000 }))
        .text,
    ];
    for (const text of views) {
      expect(text).not.toContain(instance);
      expect(text).not.toContain(stored.record.holderDigest);
      expect(text).not.toContain("Digest");
    }
  });

  it("a caller's metadata may not use the server's reserved keys", async () => {
    const { call, snapshot } = harness();
    const before = await snapshot();
    const r = await call("POST", path(uniqueName("reserved"), "/acquire"), {
      holder: "h",
      instance: crypto.randomUUID(),
      leaseMs: 60_000,
      metadata: { "leasehold.instance": "A".repeat(43) },
    });
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([
      {
        path: "metadata.leasehold.instance",
        message:
          'expected no key starting with "leasehold." or "proxied.leasehold." (protocol state is the record\'s own typed fields, never metadata)',
      },
    ]);
    expect(await snapshot()).toEqual(before);
  });

  it("an instance shorter than 16 characters is refused, naming it", async () => {
    const { call } = harness();
    const r = await call("POST", path(uniqueName("short"), "/acquire"), {
      holder: "h",
      instance: "i-1",
      leaseMs: 1000,
    });
    expect(r.status).toBe(400);
    expect(r.body.errors[0].path).toBe("instance");
  });
});

const record = (patch: Record<string, unknown> = {}) => ({
  holder: "a",
  term: 1,
  leaseMs: 60_000,
  metadata: {},
  writeId: crypto.randomUUID(),
  acquiredAt: 0,
  ...patch,
});
const writer = "writer-instance-0000000001";
const mallory = "mallory-instance-000000001";

describe("the raw PUT is for stores: a verb of its own, and the acquire rules", () => {
  it("needs the verb cas: write alone is 403", async () => {
    const { call, snapshot } = harness({
      tokens: [
        ...TOKEN_SCOPES,
        { name: "writer", token: "write-only-token-0123456789", prefixes: [""], verbs: ["read", "write"] },
      ],
    });
    const r = await call("PUT", path(uniqueName("cas")), record(), {
      token: "write-only-token-0123456789",
      headers: { "If-None-Match": "*", "Leasehold-Instance": writer },
    });
    expect([r.status, kind(r)]).toEqual([403, "forbidden"]);
    expect(r.body.detail).toBe("this token may not cas");
    expect(await snapshot()).toEqual([]);
  });

  it("takes no lease still held (409 conflict with Retry-After, whatever term and ttl), continues no term of another process, and takes it once free", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 3) });
    const { call, snapshot } = harness({ clock });
    const name = uniqueName("held");
    const created = await call("PUT", path(name), record(), {
      headers: { "If-None-Match": "*", "Leasehold-Instance": writer },
    });
    expect(created.status).toBe(201);
    const at = (revision: string, instance: string) => ({
      headers: { "If-Match": `"${revision}"`, "Leasehold-Instance": instance },
    });
    const before = await snapshot();
    // The issue's reproduction: an unexpired lease taken at term + 1 with a 24 h leaseMs.
    const takeover = await call(
      "PUT",
      path(name),
      record({ holder: "mallory", term: 2, leaseMs: 86_400_000 }),
      at(created.body.revision, mallory),
    );
    expect([takeover.status, kind(takeover)]).toEqual([409, "conflict"]);
    expect(takeover.headers.get("retry-after")).toBe("60"); // leaseMs after this instance wrote it
    // The holder's name from another process: no renewal, no release, no re-acquisition.
    for (const write of [record(), record({ holder: null }), record({ term: 2 })]) {
      const r = await call("PUT", path(name), write, at(created.body.revision, mallory));
      expect([r.status, kind(r)], JSON.stringify(write)).toEqual([409, "holder-in-use"]);
    }
    expect(await snapshot()).toEqual(before);
    // Expired by the server's clock (renewedAt + leaseMs + maxSkewMs): mallory takes it, at term 2;
    // the old holder cannot renew the term that ended.
    await clock.advance(60_501);
    const renewLate = await call("PUT", path(name), record(), at(created.body.revision, writer));
    expect([renewLate.status, kind(renewLate)]).toEqual([409, "conflict"]);
    const taken = await call(
      "PUT",
      path(name),
      record({ holder: "mallory", term: 2 }),
      at(created.body.revision, mallory),
    );
    expect(taken.status).toBe(200);
    expect(taken.body).toMatchObject({ holder: "mallory", term: 2 });
  });

  it("protocol state never rides in metadata: leasehold.* and proxied.leasehold.* keys are refused by name on every write route, and listings stay whole", async () => {
    const { call, snapshot } = harness();
    const name = uniqueName("poison");
    const before = await snapshot();
    for (const key of [
      "proxied.leasehold.session",
      "leasehold.session",
      "proxied.leasehold.next",
      "leasehold.instance",
    ]) {
      const metadata = { [key]: "NOT A NAME@1" };
      const acquired = await call("POST", path(name, "/acquire"), {
        holder: "h",
        instance: writer,
        leaseMs: 60_000,
        metadata,
      });
      expect([acquired.status, acquired.body.errors?.[0]?.path]).toEqual([400, `metadata.${key}`]);
      const raw = await call("PUT", path(name), record({ metadata }), {
        headers: { "If-None-Match": "*", "Leasehold-Instance": writer },
      });
      expect([raw.status, raw.body.errors?.[0]?.path]).toEqual([400, `metadata.${key}`]);
    }
    const badRef = await call("PUT", path(name), record({ session: { name: "NOT A NAME", term: 1 } }), {
      headers: { "If-None-Match": "*", "Leasehold-Instance": writer },
    });
    expect([badRef.status, badRef.body.errors?.[0]?.path]).toEqual([400, "session.name"]);
    expect(await snapshot()).toEqual(before);
    const listing = await call("GET", "/v1/leases?prefix=");
    expect(listing.status).toBe(200);
  });

  it("a lease bound to a process session is held while that session lives: GET, watch and the plain acquire say so past its own stamps, and it is free once the session ends", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 4) });
    const { api, call, snapshot } = harness({ clock });
    const client = new LeaseholdClient({ baseUrl: api.url, fetch: api.fetch, token: TOKENS.admin, retries: 0 });
    const sessionName = `${uniqueName("procs")}/_sessions/a`;
    const name = uniqueName("bound");
    const put = (n: string, body: Record<string, unknown>, revision: string | null) =>
      call("PUT", path(n), body, {
        headers: {
          ...(revision === null ? { "If-None-Match": "*" } : { "If-Match": `"${revision}"` }),
          "Leasehold-Instance": writer,
        },
      });
    let session = await put(sessionName, record({ leaseMs: 1000 }), null);
    expect(session.status).toBe(201);
    const bound = await put(name, record({ leaseMs: 1000, session: { name: sessionName, term: 1 } }), null);
    expect(bound.status).toBe(201);
    // Well past the lease's own renewedAt + leaseMs, with the session renewed all along.
    for (let i = 0; i < 10; i++) {
      await clock.advance(500);
      session = await put(sessionName, record({ leaseMs: 1000 }), session.body.revision);
      expect(session.status).toBe(200);
    }
    const view = await call("GET", path(name));
    expect(view.body.expiresAt).toBe(session.body.renewedAt + 1000);
    const before = await snapshot();
    const taken = await call("POST", path(name, "/acquire"), { holder: "p", instance: mallory, leaseMs: 1000 });
    expect([taken.status, kind(taken)]).toEqual([409, "conflict"]);
    expect(taken.body.freeInMs).toBe(1000 + 500 + 1); // the session's expiry, the skew bound, + 1 ms
    expect(await snapshot()).toEqual(before);

    const stop = new AbortController();
    const events: Array<{ holder: string | null | undefined; free: boolean }> = [];
    const watching = (async () => {
      for await (const e of client.watch(name, stop.signal)) events.push({ holder: e.lease?.holder, free: e.free });
    })().catch(() => undefined);
    await until(() => events.length >= 1);
    expect(events).toEqual([{ holder: "a", free: false }]);
    // The session ends (released): the lease with it, though its own record did not change.
    await put(sessionName, record({ holder: null, leaseMs: 1000 }), session.body.revision);
    await until(() => events.length >= 2);
    expect(events[1]).toEqual({ holder: "a", free: true });
    stop.abort();
    await watching;
    const acquired = await call("POST", path(name, "/acquire"), { holder: "p", instance: mallory, leaseMs: 1000 });
    expect(acquired.status).toBe(200);
    expect(acquired.body).toMatchObject({ leader: true, lease: { holder: "p", term: 2 } });
  });

  it("a new lease starts at most at term 2^52, so it can always pass on; a lease at 2^53-1 answers 409 term-exhausted, not 400", async () => {
    const store = new MemoryStore();
    const { call } = harness({ store });
    const name = uniqueName("max");
    await store.put(makeRecord(name, { holder: null, term: Number.MAX_SAFE_INTEGER, renewedAt: 0 }), null);
    const r = await call("POST", path(name, "/acquire"), { holder: "h", instance: writer, leaseMs: 1000 });
    expect([r.status, kind(r)]).toEqual([409, "term-exhausted"]);
    expect(r.body.detail).toContain("use another name");
  });
});

describe.each([MEMORY, SQLITE])("a held term and the session records a lease names, on $backend", ({ open }) => {
  const store = freshStore(open);

  it("a successor registers itself in a held lease, changing nothing else; the holder hands it to that process alone, which owns it from then on", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 4) });
    const { call, snapshot } = harness({ clock, store: store() });
    const name = uniqueName("handover");
    const bob = "bob-instance-00000000000001";
    // Both process sessions live (a bound lease is held while its session is).
    const scope = uniqueName("procs");
    const [sessionA, sessionB] = [`${scope}/_sessions/a`, `${scope}/_sessions/b`];
    for (const [n, holder, term, instance] of [
      [sessionA, "a", 1, writer],
      [sessionB, "b", 3, bob],
    ] as const) {
      const made = await call("PUT", path(n), record({ holder, term }), {
        headers: { "If-None-Match": "*", "Leasehold-Instance": instance },
      });
      expect(made.status).toBe(201);
    }
    const bound = { session: { name: sessionA, term: 1 }, metadata: { app: "x" } };
    const next = { holder: "b", session: { name: sessionB, term: 3 } };
    const put = (body: Record<string, unknown>, revision: string, instance: string) =>
      call("PUT", path(name), body, { headers: { "If-Match": `"${revision}"`, "Leasehold-Instance": instance } });
    const created = await call("PUT", path(name), record(bound), {
      headers: { "If-None-Match": "*", "Leasehold-Instance": writer },
    });
    expect(created.status).toBe(201);
    expect(created.body.session).toEqual(bound.session);
    await clock.advance(1000);
    const before = await snapshot();
    // A registration changes the successor and nothing else: with another change it is refused.
    for (const write of [
      record({ ...bound, metadata: { app: "y" }, successor: next }),
      record({ ...bound, successor: next, leaseMs: 120_000 }),
      record({ ...bound, successor: next, acquiredAt: 5 }),
    ]) {
      const r = await put(write, created.body.revision, bob);
      expect([r.status, kind(r)], JSON.stringify(write)).toEqual([409, "protocol-field"]);
      expect(r.body.errors[0].path).toBe("successor");
    }
    const malformed = await put(record({ ...bound, successor: "not a successor" }), created.body.revision, bob);
    expect([malformed.status, malformed.body.errors[0].path]).toEqual([400, "successor"]);
    // A successor's session name is checked by the record-name rule before anything is read.
    for (const bad of ["a/../x", `${scope}/_sessions/../b`, "NOT A NAME"]) {
      const r = await put(
        record({ ...bound, successor: { holder: "b", session: { name: bad, term: 3 } } }),
        created.body.revision,
        bob,
      );
      expect([r.status, r.body.errors[0].path], bad).toEqual([400, "successor.session.name"]);
    }
    // Only for a session the registering process holds, and for a holder other than the current one.
    const notBobs = await put(record({ ...bound, successor: next }), created.body.revision, mallory);
    expect([notBobs.status, kind(notBobs), notBobs.body.errors[0].path]).toEqual([
      409,
      "protocol-field",
      "successor.session",
    ]);
    const selfNamed = await put(
      record({ ...bound, successor: { holder: "a", session: { name: sessionB, term: 3 } } }),
      created.body.revision,
      bob,
    );
    expect([selfNamed.status, kind(selfNamed)]).toEqual([409, "protocol-field"]);
    const byHolder = await put(record({ ...bound, successor: next }), created.body.revision, writer);
    expect([byHolder.status, kind(byHolder)]).toEqual([409, "protocol-field"]);
    expect(await snapshot()).toEqual(before);
    const registration = await put(record({ ...bound, successor: next }), created.body.revision, bob);
    expect(registration.status).toBe(200);
    // It renews nothing (the server's renewedAt stays), shows the successor, never a digest.
    expect(registration.body).toMatchObject({ holder: "a", term: 1, renewedAt: created.body.renewedAt });
    expect(registration.body.successor).toEqual(next);
    expect(registration.body.metadata).toEqual({ app: "x" });
    expect(JSON.stringify(registration.body)).not.toMatch(/Digest/);
    const stored = (await snapshot()).find((s) => s.record.name === name)!.record;
    expect([stored.holderDigest, stored.successorDigest].every((d) => /^[A-Za-z0-9_-]{43}$/.test(d ?? ""))).toBe(true);
    expect(stored.holderDigest).not.toBe(stored.successorDigest);
    const handOver = (holder: string) => record({ holder, term: 2, session: next.session });
    // Only the holder's process hands over, and only to the holder it names: held, it goes nowhere else.
    const registered = await snapshot();
    const byOther = await put(handOver("b"), registration.body.revision, mallory);
    expect([byOther.status, kind(byOther)]).toEqual([409, "protocol-field"]);
    const toOther = await put(handOver("mallory"), registration.body.revision, writer);
    expect([toOther.status, kind(toOther)]).toEqual([409, "protocol-field"]);
    expect(await snapshot()).toEqual(registered);
    const handed = await put(handOver("b"), registration.body.revision, writer);
    expect(handed.status).toBe(200);
    expect(handed.body).toMatchObject({ holder: "b", term: 2, session: next.session });
    expect(handed.body.successor).toBeUndefined();
    // Term 2 is bob's process's now: the releaser cannot end it, bob can.
    const release = record({ holder: null, term: 2 });
    const handedOver = await snapshot();
    const byWriter = await put(release, handed.body.revision, writer);
    expect([byWriter.status, kind(byWriter)]).toEqual([409, "holder-in-use"]);
    expect(await snapshot()).toEqual(handedOver);
    const byBob = await put(release, handed.body.revision, bob);
    expect(byBob.status).toBe(200);
    expect(byBob.body).toMatchObject({ holder: null, term: 2 });
  });

  it("a registration naming the current holder never captures its next term: the holder's own re-acquisition after a lapse stays its own", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 4) });
    const { call, snapshot } = harness({ clock, store: store() });
    const name = uniqueName("capture");
    const scope = uniqueName("procs");
    const sessionA = `${scope}/_sessions/a`;
    const sessionX = `${scope}/_sessions/x`;
    const create = (n: string, body: Record<string, unknown>, instance: string) =>
      call("PUT", path(n), body, { headers: { "If-None-Match": "*", "Leasehold-Instance": instance } });
    const put = (body: Record<string, unknown>, revision: string, instance: string) =>
      call("PUT", path(name), body, { headers: { "If-Match": `"${revision}"`, "Leasehold-Instance": instance } });
    expect((await create(sessionA, record({ holder: "a", leaseMs: 1000 }), writer)).status).toBe(201);
    expect((await create(sessionX, record({ holder: "a", leaseMs: 1000 }), mallory)).status).toBe(201);
    const lease = await create(name, record({ leaseMs: 1000, session: { name: sessionA, term: 1 } }), writer);
    expect(lease.status).toBe(201);
    const before = await snapshot();
    // X offers itself under the current holder's name (its own session names holder "a" too).
    const capture = await put(
      record({
        leaseMs: 1000,
        session: { name: sessionA, term: 1 },
        successor: { holder: "a", session: { name: sessionX, term: 1 } },
      }),
      lease.body.revision,
      mallory,
    );
    expect([capture.status, kind(capture)]).toEqual([409, "protocol-field"]);
    expect(capture.body.detail).toContain("another holder than the current one");
    expect(await snapshot()).toEqual(before);
    // The holder's lease lapses; it re-acquires plainly at term + 1, as an HttpStore elector does.
    await clock.advance(3000);
    const again = await put(record({ leaseMs: 1000, term: 2 }), lease.body.revision, writer);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ holder: "a", term: 2 });
    // It stays the holder's own: it renews it, and X cannot.
    const reacquired = await snapshot();
    const byX = await put(record({ leaseMs: 1000, term: 2 }), again.body.revision, mallory);
    expect([byX.status, kind(byX)]).toEqual([409, "holder-in-use"]);
    expect(await snapshot()).toEqual(reacquired);
    const renewed = await put(record({ leaseMs: 1000, term: 2 }), again.body.revision, writer);
    expect(renewed.status).toBe(200);
  });

  it("a lease binds only to a live process session the writing process holds, inside its token's prefixes: another's session, a lease name or a record outside the scope are refused, and nothing is judged by them", async () => {
    const tokens = [
      ...TOKEN_SCOPES,
      { name: "w", token: "w-only-token-0123456789abc", prefixes: ["w/"], verbs: ["read", "write", "cas"] as const },
    ];
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 4) });
    const { call, snapshot } = harness({ clock, tokens: tokens as never, store: store() });
    const create = (n: string, body: Record<string, unknown>, instance: string, token?: string) =>
      call("PUT", path(n), body, {
        headers: { "If-None-Match": "*", "Leasehold-Instance": instance },
        ...(token ? { token } : {}),
      });
    const other = `b/${uniqueName("o")}`.replace(/\/o$/, "/_sessions/x");
    expect((await create(other, record({ holder: "a" }), mallory)).status).toBe(201);
    const mine = `w/${uniqueName("procs")}/_sessions/a`;
    expect((await create(mine, record({ holder: "a" }), writer, "w-only-token-0123456789abc")).status).toBe(201);
    const plain = `w/${uniqueName("plain")}`;
    expect((await create(plain, record({ holder: "a" }), writer, "w-only-token-0123456789abc")).status).toBe(201);
    const before = await snapshot();
    for (const [session, why] of [
      [{ name: other, term: 1 }, "outside this token's prefixes"],
      [{ name: plain, term: 1 }, "is not a process session record"],
      [{ name: mine, term: 2 }, "is not held by"],
      [{ name: `w/${uniqueName("none")}/_sessions/z`, term: 1 }, "does not exist"],
    ] as const) {
      const r = await create(`w/${uniqueName("l")}`, record({ session }), writer, "w-only-token-0123456789abc");
      expect([r.status, kind(r), r.body.errors?.[0]?.path], JSON.stringify(session)).toEqual([
        409,
        "protocol-field",
        "session",
      ]);
      expect(r.body.detail).toContain(why);
    }
    // Another process's session, inside the scope: refused too (the admin token, so only the instance differs).
    const theirs = await create(`w/${uniqueName("l")}`, record({ session: { name: mine, term: 1 } }), mallory);
    expect([theirs.status, kind(theirs)]).toEqual([409, "protocol-field"]);
    expect(theirs.body.detail).toContain("held by another process");
    expect(await snapshot()).toEqual(before);
    const ok = await create(
      `w/${uniqueName("l")}`,
      record({ session: { name: mine, term: 1 } }),
      writer,
      "w-only-token-0123456789abc",
    );
    expect(ok.status).toBe(201);
  });
});

const group = () => `adapters/${uniqueName("grp")}`;
/** The instance of the group members these tests start. */
const memberInstance = "member-m1-instance-0000001";

async function started(call: ReturnType<typeof harness>["call"], g: string, member = "m1", buckets = 4) {
  const beat = await call("POST", `${LeaseholdClient.memberPath(g, member)}/heartbeat`, {
    instance: memberInstance,
    leaseMs: 60_000,
    buckets,
  });
  expect(beat.status, beat.text).toBe(200);
  return beat.body;
}

describe.each([MEMORY, SQLITE, AZURE, S3])("group records belong to their group, on $backend", ({ open }) => {
  const store = freshStore(open);

  it("the plain routes and the PUT refuse to write a group's config, members and buckets: no lease name is one, and the PUT names the group route", async () => {
    const { call, snapshot } = harness({ store: store() });
    const g = group();
    await started(call, g);
    const before = await snapshot();
    for (const name of [`${g}/_config`, `${g}/_members/m1`, `${g}/_members/m9`, `${g}/_buckets/0`, `${g}/_buckets/9`]) {
      for (const [method, suffix, body, headers] of [
        ["POST", "/acquire", { holder: "m1", instance: "mallory-instance-000000001", leaseMs: 86_400_000 }, {}],
        ["POST", "/release", { holder: "m1", instance: memberInstance, term: 1 }, {}],
        ["POST", "/renew", { holder: "m1", instance: memberInstance, term: 1 }, {}],
        [
          "PUT",
          "",
          { holder: "m1", term: 2, leaseMs: 60_000, metadata: {}, writeId: "w", acquiredAt: 0 },
          { "If-Match": '"1"', "Leasehold-Instance": memberInstance },
        ],
      ] as const) {
        const r = await call(method, path(name, suffix), body, { headers });
        expect([r.status, kind(r)], `${method} ${name}${suffix}: ${r.text}`).toEqual([409, "group-record"]);
        expect(r.body.group).toBe(g);
        expect(r.body.detail).toContain(`/v1/groups/${encodeURIComponent(g)}/members/{member}/heartbeat`);
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it("a plain lease under a group's name takes nothing from the group; no config is forged through the PUT", async () => {
    const { call, snapshot } = harness({ store: store() });
    const g = group();
    // 0.1.0 kept the config here: now it is a lease like any other, and the group starts beside it.
    expect(
      (await call("POST", path(`${g}/config`, "/acquire"), { holder: "x", instance: memberInstance, leaseMs: 60_000 }))
        .status,
    ).toBe(200);
    await started(call, g);
    const before = await snapshot();
    expect(before.find((s) => s.record.name === `${g}/_config`)?.record.metadata.buckets).toBe("4");
    // A group starts with a heartbeat, never a free record at term 0 with a bucket count.
    const forged = await call(
      "PUT",
      path(`${group()}/_config`),
      { holder: null, term: 0, leaseMs: 60_000, metadata: { buckets: "4", epoch: "1" }, writeId: "w", acquiredAt: 0 },
      { headers: { "If-None-Match": "*", "Leasehold-Instance": memberInstance } },
    );
    expect([forged.status, kind(forged)]).toEqual([409, "group-record"]);
    expect(await snapshot()).toEqual(before);
  });

  it('member "config" of group g and the config of group "g/members" are two records (0.1.0 had one name for both); a plain acquire makes no member', async () => {
    const { call, snapshot } = harness({ store: store() });
    const g = group();
    // 0.1.0 kept member "config" of g at g/members/config: the name of group g/members' config.
    expect(await started(call, g, "config", 4)).toMatchObject({ member: "config", buckets: 4, members: ["config"] });
    expect(await started(call, `${g}/members`, "m1", 2)).toMatchObject({ buckets: 2, members: ["m1"] });
    const records = (await snapshot()).map((s) => s.record.name);
    expect(records).toEqual(
      expect.arrayContaining([
        `${g}/_config`,
        `${g}/_members/config`,
        `${g}/members/_config`,
        `${g}/members/_members/m1`,
      ]),
    );
    expect(records.filter((n) => n.startsWith(`${g}/_buckets/`))).toHaveLength(4);
    expect(records.filter((n) => n.startsWith(`${g}/members/_buckets/`))).toHaveLength(2);
    // A plain 24 h acquire of a member's name: refused by its name (no lease has it), nothing written.
    const before = await snapshot();
    for (const name of [`${g}/_members/m9`, `${g}/members/_members/m9`]) {
      const fake = await call("POST", path(name, "/acquire"), {
        holder: "m9",
        instance: mallory,
        leaseMs: 86_400_000,
      });
      expect([fake.status, kind(fake)], name).toEqual([409, "group-record"]);
    }
    expect(await snapshot()).toEqual(before);
    // 0.1.0's member name is a plain lease now: taking it makes no member of either group.
    const old = await call("POST", path(`${g}/members/m9`, "/acquire"), {
      holder: "m9",
      instance: mallory,
      leaseMs: 86_400_000,
    });
    expect(old.status, old.text).toBe(200);
    // Each group still has its own member and bucket count, whichever heartbeats first.
    expect(await started(call, `${g}/members`, "m1", 2)).toMatchObject({ buckets: 2, members: ["m1"] });
    expect(await started(call, g, "config", 4)).toMatchObject({ buckets: 4, members: ["config"] });
  });
});

describe("a bucket is judged by its owner's session", () => {
  it("a bucket is held while its owner's session lives: GET and watch say so past the bucket's own stamps, and free once it leaves", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 3) });
    const { api, call } = harness({ clock });
    const g = group();
    const client = new LeaseholdClient({ baseUrl: api.url, fetch: api.fetch, token: TOKENS.admin, retries: 0 });
    const first = await client.heartbeat(g, "m1", { instance: memberInstance, leaseMs: 10_000, buckets: 2 });
    // Well past the bucket record's own renewedAt + leaseMs, with the session renewed all along.
    for (let i = 0; i < 6; i++) {
      await clock.advance(5000);
      await client.heartbeat(g, "m1", { instance: memberInstance, session: first.session, leaseMs: 10_000 });
    }
    const bucket = await call("GET", path(`${g}/_buckets/0`));
    expect(bucket.body.holder).toBe("m1");
    expect(bucket.body.expiresAt).toBeGreaterThan(clock.wallNow());
    expect(bucket.body.expiresAt).toBe(bucket.body.renewedAt + 30_000 + 10_000);
    // A plain acquire of the bucket is refused, not a takeover of a bucket a live member works on.
    const grab = await call("POST", path(`${g}/_buckets/0`, "/acquire"), {
      holder: "x",
      instance: "x-instance-0000000000001",
      leaseMs: 1000,
    });
    expect([grab.status, kind(grab)]).toEqual([409, "group-record"]);
    expect(grab.body.group).toBe(g);

    const stop = new AbortController();
    const events: Array<{ holder: string | null | undefined; free: boolean }> = [];
    const watching = (async () => {
      for await (const e of client.watch(`${g}/_buckets/0`, stop.signal))
        events.push({ holder: e.lease?.holder, free: e.free });
    })().catch(() => undefined);
    await until(() => events.length >= 1);
    expect(events).toEqual([{ holder: "m1", free: false }]);
    await client.leave(g, "m1", { instance: memberInstance, session: first.session });
    await until(() => events.length >= 2);
    expect(events[1]).toEqual({ holder: "m1", free: true });
    stop.abort();
    await watching;
  });
});

describe("scopes are paths", () => {
  const scoped: TokenScope[] = [
    { name: "bill", token: "bill-scope-token-0123456789", prefixes: ["adapters/bill"], verbs: ["read", "write"] },
  ];

  it("a prefix without a trailing / covers that name and the names under it, never a name that only starts the same", async () => {
    const { call } = harness({ tokens: [...TOKEN_SCOPES, ...scoped] });
    const token = scoped[0]!.token;
    const body = { holder: "h", instance: "scope-instance-0000000001", leaseMs: 60_000 };
    expect((await call("POST", path("adapters/bill", "/acquire"), body, { token })).status).toBe(200);
    expect((await call("POST", path("adapters/bill/eu", "/acquire"), body, { token })).status).toBe(200);
    for (const name of ["adapters/billboard", "adapters/bill-2", "adapters/bil"]) {
      expect((await call("POST", path(name, "/acquire"), body, { token })).status, name).toBe(403);
    }
    // A listing covers what it may return: "adapters/bill" would list adapters/billboard too.
    expect((await call("GET", "/v1/leases?prefix=adapters%2Fbill", undefined, { token })).status).toBe(403);
    const listed = await call("GET", "/v1/leases?prefix=adapters%2Fbill%2F", undefined, { token });
    expect(listed.body.leases.map((l: { name: string }) => l.name)).toEqual(["adapters/bill/eu"]);
  });

  it("a write-only token learns that it lost, not what the record holds: no lease in 409 or 412", async () => {
    const writeOnly: TokenScope = {
      name: "w",
      token: "write-only-scope-0123456789",
      prefixes: [""],
      verbs: ["write", "cas"],
    };
    const { call } = harness({ tokens: [...TOKEN_SCOPES, writeOnly] });
    const name = uniqueName("secret");
    await call("POST", path(name, "/acquire"), {
      holder: "owner",
      instance: "owner-instance-0000000001",
      leaseMs: 60_000,
      metadata: { addr: "10.0.0.9" },
    });
    const conflict = await call(
      "POST",
      path(name, "/acquire"),
      { holder: "x", instance: "other-instance-0000000001", leaseMs: 1000 },
      { token: writeOnly.token },
    );
    expect([conflict.status, kind(conflict)]).toEqual([409, "conflict"]);
    expect(conflict.body.lease).toBeUndefined();
    expect(conflict.text).not.toContain("10.0.0.9");
    const stale = await call(
      "PUT",
      path(name),
      { holder: "x", term: 2, leaseMs: 1000, metadata: {}, writeId: "w", acquiredAt: 0 },
      { token: writeOnly.token, headers: { "If-Match": '"999"', "Leasehold-Instance": "other-instance-0000000001" } },
    );
    expect(stale.status).toBe(412);
    expect(stale.body.lease).toBeUndefined();
    // A token that may read gets the record, as before.
    const readable = await call("POST", path(name, "/acquire"), {
      holder: "x",
      instance: "other-instance-0000000001",
      leaseMs: 1000,
    });
    expect(readable.body.lease).toMatchObject({ holder: "owner", metadata: { addr: "10.0.0.9" } });
  });
});

describe("tokens that cannot be right refuse to start", () => {
  const base = { name: "t", token: "good-token-0123456789", prefixes: ["jobs/"], verbs: ["read"] };
  it.each([
    ["a token with a space (it could never authenticate)", [{ ...base, token: "has a space 0123456789" }], "0.token"],
    ["a token listed twice", [base, { ...base, name: "u", verbs: ["write"] }], "1.token"],
    ["a name listed twice", [base, { ...base, token: "other-token-0123456789" }], "1.name"],
    ["a prefix with an empty segment", [{ ...base, prefixes: ["jobs//"] }], "0.prefixes.0"],
    ["a prefix with a dot segment", [{ ...base, prefixes: ["jobs/../"] }], "0.prefixes.0"],
    ["a prefix ending inside a segment", [{ ...base, prefixes: ["jobs/run-"] }], "0.prefixes.0"],
    ["an unknown verb", [{ ...base, verbs: ["admin"] }], "0.verbs.0"],
  ])("%s", (_what, tokens, field) => {
    const error = (() => {
      try {
        parseTokens(JSON.stringify(tokens));
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(LeaseValidationError);
    expect((error as LeaseValidationError).issues.map((i) => i.path)).toContain(field);
    expect((error as Error).message).not.toContain("0123456789");
  });
});

describe("the smaller items", () => {
  it("/metrics needs a token with the verb metrics once the server has tokens", async () => {
    const { call } = harness();
    expect((await call("GET", "/metrics", undefined, { token: null })).status).toBe(401);
    expect((await call("GET", "/metrics", undefined, { token: TOKENS.reader })).status).toBe(403);
    const scraped = await call("GET", "/metrics");
    expect(scraped.status).toBe(200);
    expect(scraped.text).toContain("leasehold_http_requests_total");
  });

  it("without tokens on loopback, only loopback Hosts are served (DNS rebinding)", async () => {
    const { call } = harness({ noAuth: true });
    const body = { holder: "h", instance: "rebind-instance-000000001", leaseMs: 1000 };
    const rebound = await call("POST", path("jobs/rebind", "/acquire"), body, {
      token: null,
      host: "evil.example:8787",
    });
    expect([rebound.status, kind(rebound)]).toEqual([403, "host-not-allowed"]);
    for (const host of ["127.0.0.1:8787", "localhost:8787", "[::1]:8787"]) {
      expect((await call("GET", "/healthz", undefined, { token: null, host })).status, host).toBe(200);
    }
  });

  it("the start-up line never prints credentials inside the store URL", () => {
    for (const [url, secret] of [
      ["s3://bucket?endpoint=http%3A%2F%2Fkey%3Atopsecret%40127.0.0.1%3A9000", "topsecret"],
      [
        "azblob://acct/leases?endpoint=https%3A%2F%2Facct.blob.core.windows.net%2F%3Fsv%3D2022%26sig%3DSIGSECRET",
        "SIGSECRET",
      ],
      ["s3://bucket?endpoint=http://key:pass-secret@127.0.0.1:9000&region=eu-west-1", "pass-secret"],
    ] as const) {
      const config = readServerConfig({ LEASEHOLD_STORE: url }, "node");
      const line = startupLine(config, "http://127.0.0.1:8787");
      expect(line, url).not.toContain(secret);
      expect(line).toContain("***");
    }
  });
});

async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}
