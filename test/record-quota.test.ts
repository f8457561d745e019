/**
 * Quotas and listings cost O(1) per request (issue #30, item 4; the reproductions of its items
 * 3 and 6), through the API in process on SQLite:
 * - a create refused at `recordsPerPrefix` reads nothing but the lease it names, as a GET does: no
 *   listing, no write (the count is maintained in the store, not recounted);
 * - the count is shared by replicas and survives a restart: however the creates are spread over
 *   them, no more than the bound are ever created, and a restart never hands the quota out again;
 * - each token's count is its own: a member-scoped token filling its quota leaves the group's
 *   wider prefix, and an admin, untouched;
 * - the counts are the server's own records: no route names them, no listing shows them;
 * - a heartbeat lists the group's members and buckets, never what lies below them, and no new
 *   plain lease may be created below a group's member or bucket record.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { TokenScope } from "../src/api/auth.js";
import { RecordQuota } from "../src/api/limits.js";
import { isQuotaRecord, QUOTA_RECORD_PREFIX } from "../src/api/quota-records.js";
import { LeaseholdClient } from "../src/http/client.js";
import type { Listed, ListOptions, Stored } from "../src/lease.js";
import { readable } from "../src/listing.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { inProcessApi } from "./support/in-process-api.js";
import { type RawBackend, sqliteBackend } from "./support/raw-backends.js";

const ADMIN = "admin-token-0123456789abcdef";
const TEAM = "team-token-0123456789abcdef";
const MEMBER = "member-token-0123456789abcdef";
const M2 = "member2-token-0123456789abcdef";
const tokens: TokenScope[] = [
  { name: "admin", token: ADMIN, prefixes: [""], verbs: ["read", "write", "cas"] },
  { name: "team", token: TEAM, prefixes: ["team/"], verbs: ["read", "write", "cas"] },
  { name: "m1", token: MEMBER, prefixes: ["g/_members/m1", "g/members/m1"], verbs: ["read", "write", "cas"] },
  { name: "m2", token: M2, prefixes: ["g/_members/m2"], verbs: ["read", "write"] },
];
const instance = "instance-0123456789abcdef";

let backend: RawBackend | undefined;
afterEach(async () => {
  await backend?.close();
  backend = undefined;
});

/** The API in process on `store`, with `recordsPerPrefix` = `bound`. */
function api(store: ConstructorParameters<typeof TrackedStore>[0], bound: number) {
  const server = inProcessApi({
    store,
    auth: { tokens },
    limits: { recordsPerPrefix: bound, createsPerMinute: 100_000 },
  });
  const call = async (method: string, path: string, token: string, body?: unknown, headers = {}) => {
    const res = await server.fetch(`${server.url}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the tests read the answer field by field
    return { status: res.status, body: (await res.json()) as any };
  };
  const acquire = (name: string, token: string) =>
    call("POST", `${LeaseholdClient.leasePath(name)}/acquire`, token, { holder: "h", instance, leaseMs: 60_000 });
  return { server, call, acquire };
}

/** Every record of the store (the server's counts too), with its revision. */
async function records(store: RawBackend["store"]): Promise<Stored[]> {
  const out: Stored[] = [];
  for await (const s of readable(store.list!(""))) out.push(s);
  return out;
}

async function names(store: RawBackend["store"], prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const s of readable(store.list!(prefix))) out.push(s.record.name);
  return out;
}

describe("recordsPerPrefix: a maintained count", () => {
  it("a create refused at the bound reads only the lease it names, as a GET does: no listing, no write", async () => {
    backend = await sqliteBackend();
    const tracked = new TrackedStore(backend.store);
    const s = api(tracked, 20);
    for (let i = 0; i < 20; i++) expect((await s.acquire(`team/n${i}`, TEAM)).status).toBe(200);
    // The instance that took the count to the bound knows it is spent; another reads the count
    // once (then believes it for a minute). Each refusal after that reads only the lease.
    const other = api(tracked, 20);
    const full = await records(backend.store);
    expect((await other.acquire("team/over", TEAM)).status).toBe(429);
    tracked.resetCounts();
    expect((await s.call("GET", LeaseholdClient.leasePath("team/n0"), TEAM)).status).toBe(200);
    const read = { ...tracked.counts };
    expect(read).toEqual({ get: 1, put: 0, list: 0, getMany: 0 });
    for (const instance of [s, other]) {
      tracked.resetCounts();
      const refused = await instance.acquire("team/over", TEAM);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ type: "urn:leasehold:problem:over-limit", bound: "recordsPerPrefix" });
      expect(tracked.counts).toEqual(read);
    }
    expect(await records(backend.store)).toEqual(full);
    // Renewals of what exists go on.
    expect((await s.acquire("team/n3", TEAM)).status).toBe(200);
    expect(await backend.store.get("team/over")).toBeNull();
  });

  it("replicas sharing a store never create past the bound together, and a restart does not hand the quota out again", async () => {
    backend = await sqliteBackend();
    const bound = 40;
    const replicas = [api(backend.store, bound), api(backend.store, bound), api(backend.store, bound)];
    // 3 replicas x 30 concurrent creates of distinct names by one token.
    const outcomes = await Promise.all(
      replicas.flatMap((r, i) => Array.from({ length: 30 }, (_, j) => r.acquire(`team/r${i}-${j}`, TEAM))),
    );
    const created = outcomes.filter((o) => o.status === 200).length;
    expect(outcomes.every((o) => o.status === 200 || o.status === 429)).toBe(true);
    expect(created).toBeLessThanOrEqual(bound);
    expect(await names(backend.store, "team/")).toHaveLength(created);
    // Every replica, and one started afresh on the same store, refuses once the count is spent:
    // reservations a replica took and never used stay counted (the count only errs upwards).
    const restarted = api(backend.store, bound);
    for (const r of [...replicas, restarted]) {
      const next = await r.acquire(`team/after-${Math.random().toString(36).slice(2, 8)}`, TEAM);
      if (created === bound) expect(next.status).toBe(429);
      else expect([200, 429]).toContain(next.status);
    }
    expect((await names(backend.store, "team/")).length).toBeLessThanOrEqual(bound);
    // The count record says how many were counted, and for whom.
    const counts: Listed[] = [];
    for await (const e of backend.store.list!(QUOTA_RECORD_PREFIX)) counts.push(e);
    expect(counts).toHaveLength(1);
    const count = counts[0]!;
    expect("record" in count && count.record.metadata).toMatchObject({ prefix: "team/", token: "team" });
    expect("record" in count && Number(count.record.metadata.records)).toBeGreaterThanOrEqual(created);
    expect("record" in count && Number(count.record.metadata.records)).toBeLessThanOrEqual(bound);
  });

  it("each token's count is its own: a member-scoped token filling its quota leaves the wider prefix to others", async () => {
    backend = await sqliteBackend();
    const s = api(backend.store, RecordQuota.RESERVE + 4);
    let made = 0;
    for (;;) {
      const r = await s.acquire(`g/members/m1/x${made}`, MEMBER);
      if (r.status !== 200) {
        expect(r.status).toBe(429);
        break;
      }
      made++;
    }
    expect(made).toBe(RecordQuota.RESERVE + 4);
    // The admin's creates under the same first segment, and another team's, count on their own.
    expect((await s.acquire("g/other", ADMIN)).status).toBe(200);
    expect((await s.acquire("g/members/m1/by-admin", ADMIN)).status).toBe(200);
    expect((await s.acquire("team/a", TEAM)).status).toBe(200);
  });

  it("the counts are the server's own: no route names one, no listing or stream shows one", async () => {
    backend = await sqliteBackend();
    const s = api(backend.store, 100);
    expect((await s.acquire("jobs/a", ADMIN)).status).toBe(200);
    const [count] = await names(backend.store, QUOTA_RECORD_PREFIX);
    expect(count !== undefined && isQuotaRecord(count)).toBe(true);
    const path = LeaseholdClient.leasePath(count!);
    for (const [method, body] of [
      ["GET", undefined],
      ["POST", { holder: "h", instance, leaseMs: 1000 }],
    ] as const) {
      const r = await s.call(method, method === "GET" ? path : `${path}/acquire`, ADMIN, body);
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([
        { path: "name", message: expect.stringContaining("expected a name not of the form") },
      ]);
    }
    const listed = await s.call("GET", "/v1/leases?prefix=", ADMIN);
    expect(listed.body.leases.map((l: { name: string }) => l.name)).toEqual(["jobs/a"]);
    expect(listed.body.unreadable).toEqual([]);
    const under = await s.call("GET", `/v1/leases?prefix=${encodeURIComponent(QUOTA_RECORD_PREFIX)}`, ADMIN);
    expect(under.body.leases).toEqual([]);
  });
});

describe("a heartbeat lists only the group's own records", () => {
  /** A store that counts the entries its listings yield. */
  function countingListings(inner: RawBackend["store"]) {
    const tracked = new (class extends TrackedStore {
      yielded = 0;
      protected override async *listOf(prefix: string, options?: ListOptions): AsyncIterable<Listed> {
        for await (const entry of super.listOf(prefix, options)) {
          this.yielded++;
          yield entry;
        }
      }
    })(inner);
    return tracked;
  }

  it("a heartbeat reads only the group's own records; no plain lease lands among them", async () => {
    backend = await sqliteBackend();
    const store = countingListings(backend.store);
    const s = api(store, 100_000);
    const heartbeat = (member: string, token: string) =>
      s.call("POST", `/v1/groups/g/members/${member}/heartbeat`, token, {
        instance: `${instance}-${member}`,
        leaseMs: 60_000,
        buckets: 4,
      });
    expect((await heartbeat("m1", MEMBER)).status).toBe(200);
    const started = await records(backend.store);
    // A group's records live under reserved `_` segments: no lease name lies below them, whatever the token.
    for (const token of [MEMBER, ADMIN]) {
      const r = await s.acquire("g/_members/m1/junk", token);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ type: "urn:leasehold:problem:validation" });
    }
    const put = await s.call(
      "PUT",
      LeaseholdClient.leasePath("g/_buckets/0/junk"),
      ADMIN,
      { holder: "h", term: 1, leaseMs: 1000, metadata: {}, writeId: "w", acquiredAt: 0 },
      { "If-None-Match": "*", "Leasehold-Instance": instance },
    );
    expect(put.status).toBe(400);
    expect(await records(backend.store)).toEqual(started);
    // Plain leases beside the group (what an older server let a member-scoped token create below
    // its member record): 2,000 of them, never read by a heartbeat.
    for (let i = 0; i < 1000; i++) {
      await backend.store.put(makeRecord(`g/members/m1/junk-${i}`), null);
      await backend.store.put(makeRecord(`g/buckets/0/junk-${i}`), null);
    }
    store.yielded = 0;
    store.resetCounts();
    const second = await heartbeat("m2", M2);
    expect(second.status).toBe(200);
    expect(second.body.members).toEqual(["m1", "m2"]);
    // Two members and four buckets: nothing else.
    expect(store.yielded).toBeLessThanOrEqual(2 + 4);
    expect(store.counts.list).toBeLessThanOrEqual(4);
    expect((await names(backend.store, "g/members/m1/")).length).toBe(1000);
  });
});
