/**
 * Property-based test of the API's trust rules (issue 30, docs/security.md): random sequences of
 * acquire, renew, release, raw PUT (takes and successor registrations), group heartbeats, GETs
 * and listings, from several tokens (scoped by prefix and by verb) and several instances, with
 * hostile names, holders and metadata, in process on a MemoryStore with a manual clock. After
 * every step:
 * - no record outside the acting token's prefixes changed (the server's own quota counts aside; a
 *   member's heartbeat may write its group's own records, as docs/sharding.md has it);
 * - a term still held is continued (renewed, released, rewritten) only by the instance that took
 *   it, and passes to another process only as a hand-over to the successor it registered; another
 *   process may only register itself as that successor;
 * - no request answers 5xx, and no listing a token may read fails (another tenant's record never
 *   breaks one);
 * - every refusal (4xx) changed nothing.
 * 250 sequences in `npm test` (about 10 s); `npm run fuzz` runs 5,000 (FUZZ_RUNS sets how many,
 * FUZZ_SEED repeats a run). MemoryStore cannot hold a record it cannot read, so 60 more sequences
 * (FUZZ_SQLITE_RUNS) run on SQLite, each with an unreadable record planted in one tenant's prefix
 * directly in the database: every listing, another tenant's and the admin's, still answers 200, the
 * bad record a row of its own exactly where the prefix covers it, its bytes never changed. The generator reaches takes, renewals, releases, raw PUT creates and
 * conflicts between instances, member heartbeats and listings; a successor registration is only
 * ever refused here (no process session is made), test/api-trust.test.ts has the hand-over itself.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { covers, type TokenScope } from "../src/api/auth.js";
import { instanceDigest } from "../src/api/instance.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseholdClient } from "../src/http/client.js";
import type { LeaseRecord, LeaseStore, Stored } from "../src/lease.js";
import { isUnreadable } from "../src/listing.js";
import { inProcessApi } from "./support/in-process-api.js";
import { sqliteBackend } from "./support/raw-backends.js";

const MAX_SKEW_MS = 500;

const TOKENS: TokenScope[] = [
  { name: "admin", token: "prop-admin-token-0123456789", prefixes: [""], verbs: ["read", "write", "cas"] },
  { name: "a", token: "prop-a-token-0123456789abcd", prefixes: ["a/"], verbs: ["read", "write", "cas"] },
  { name: "b-write", token: "prop-b-token-0123456789abcd", prefixes: ["b/"], verbs: ["read", "write"] },
  { name: "a-ro", token: "prop-a-ro-token-0123456789ab", prefixes: ["a/", "b/x"], verbs: ["read"] },
  { name: "group", token: "prop-group-token-0123456789", prefixes: ["g/"], verbs: ["read", "write", "cas"] },
  { name: "member", token: "prop-member-token-012345678", prefixes: ["g/_members/m1"], verbs: ["read", "write"] },
];

const INSTANCES = ["prop-instance-one-000000000", "prop-instance-two-000000000", "prop-instance-three-0000000"];

/** Names a caller may send: plain ones in each tenant, protocol records' names, and hostile ones. */
const NAMES = [
  "a/x",
  "a/y",
  "a/y/z",
  "b/x",
  "b/xy",
  "g/x",
  "c/x",
  "a/_config",
  "g/_members/m1",
  "g/_buckets/0",
  "g/_config",
  "a/_sessions/s1",
  "_quota/q-00000000000000000000000000000000",
  "a/../b/x",
  "a//x",
  "A/x",
  "a/x/",
  "a/\u202ex",
];

const HOLDERS = ["h1", "h2", "\u202e1h", "a\nb", "pod\u200e", "", "h".repeat(300)];

/** Metadata bodies as sent (raw JSON text, so a "__proto__" key reaches the server). */
const METADATA = [
  undefined,
  "{}",
  '{"addr":"10.0.0.7"}',
  '{"__proto__":"x"}',
  '{"constructor":"x"}',
  '{"leasehold.instance":"x"}',
  '{"proxied.leasehold.session":"NOT A NAME@1"}',
  '{"proxied.leasehold.next":"a/../../x@1"}',
  '{"k":"\\u202e"}',
  '{"k":1}',
];

type Step =
  | {
      kind: "acquire";
      token: number;
      instance: number;
      holder: string;
      name: string;
      leaseMs: number;
      metadata?: string | undefined;
    }
  | {
      kind: "renew" | "release";
      token: number;
      instance: number;
      holder: string;
      name: string;
      termShift: number;
      /** Sent by the token, instance and holder of the sequence's latest take, on its lease. */
      again: boolean;
    }
  | {
      kind: "put";
      token: number;
      instance: number;
      holder: string;
      name: string;
      termShift: number;
      create: boolean;
      metadata?: string | undefined;
    }
  | { kind: "register"; token: number; instance: number; holder: string; name: string; session: string }
  | { kind: "heartbeat"; token: number; instance: number; member: string; buckets?: number | undefined }
  | { kind: "get"; token: number; name: string }
  | { kind: "list"; token: number; prefix: string }
  | { kind: "tick"; ms: number };

const token = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, 1, 4) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: TOKENS.length - 1 }) },
);
const instance = fc.integer({ min: 0, max: INSTANCES.length - 1 });
// Mostly names, holders and metadata that can succeed, so sequences reach held and handed-over
// states; the hostile ones often enough that each meets every state.
const name = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom("a/x", "a/y", "b/x", "g/x", "c/x") },
  { weight: 2, arbitrary: fc.constantFrom(...NAMES) },
);
const holder = fc.oneof({ weight: 6, arbitrary: fc.constantFrom("h1", "h2") }, fc.constantFrom(...HOLDERS));
const metadata = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(undefined, "{}", '{"addr":"10.0.0.7"}') },
  { weight: 2, arbitrary: fc.constantFrom(...METADATA) },
);
const termShift = fc.constantFrom(0, 0, 0, 1, -1);

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      token,
      instance,
      holder,
      name,
      leaseMs: fc.constantFrom(1_000, 5_000, 60_000),
      metadata,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom("renew" as const, "release" as const),
      token,
      instance,
      holder,
      name,
      termShift,
      again: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("put" as const),
      token,
      instance,
      holder,
      name,
      termShift,
      create: fc.boolean(),
      metadata,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("register" as const),
      token,
      instance,
      holder,
      name,
      session: fc.constantFrom("a/_sessions/s1", "_sessions/s1", "b/x", "a/../x"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("heartbeat" as const),
      token,
      instance,
      member: fc.constantFrom("m1", "m2", "_config", "M1"),
      buckets: fc.constantFrom(undefined, 4),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("get" as const), token, name }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("list" as const),
      token,
      prefix: fc.constantFrom("", "a/", "b/", "b/x", "g/", "a/../", "g/_members/"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.constantFrom(500, 2_000, 10_000) }) },
);

const runs = Number(process.env.FUZZ_RUNS ?? 250);
const seed = Number(process.env.FUZZ_SEED ?? 20261205);
/** Sequences on SQLite with an unreadable record planted (each opens its own database file). */
const sqliteRuns = Number(process.env.FUZZ_SQLITE_RUNS ?? 60);

/** Every readable record of the store, by name (a planted unreadable one is checked byte for byte). */
async function snapshot(store: LeaseStore): Promise<Map<string, Stored>> {
  const out = new Map<string, Stored>();
  for await (const s of store.list!("")) if (!isUnreadable(s)) out.set(s.record.name, s);
  return out;
}

const path = (n: string, suffix = "") => `${LeaseholdClient.leasePath(n)}${suffix}`;

/** What the caller's request sends, and what it may change. */
function request(s: Exclude<Step, { kind: "tick" }>, current: Map<string, Stored>) {
  const auth = { Authorization: `Bearer ${TOKENS[s.token]!.token}` };
  const json = { ...auth, "Content-Type": "application/json" };
  const inst = "instance" in s ? INSTANCES[s.instance]! : "";
  switch (s.kind) {
    case "acquire": {
      const body = `{"holder":${JSON.stringify(s.holder)},"instance":"${inst}","leaseMs":${s.leaseMs}${s.metadata ? `,"metadata":${s.metadata}` : ""}}`;
      return { method: "POST", url: path(s.name, "/acquire"), headers: json, body };
    }
    case "renew":
    case "release": {
      const term = Math.max(0, (current.get(s.name)?.record.term ?? 1) + s.termShift);
      const body = JSON.stringify({ holder: s.holder, instance: inst, term });
      return { method: "POST", url: path(s.name, `/${s.kind}`), headers: json, body };
    }
    case "put": {
      const now = current.get(s.name);
      const term = Math.max(0, (now?.record.term ?? 0) + 1 + s.termShift);
      const record = `{"holder":${JSON.stringify(s.holder)},"term":${term},"leaseMs":60000,"metadata":${s.metadata ?? "{}"},"writeId":"${crypto.randomUUID()}","acquiredAt":0}`;
      const condition: Record<string, string> =
        s.create || !now ? { "If-None-Match": "*" } : { "If-Match": `"${now.revision}"` };
      return {
        method: "PUT",
        url: path(s.name),
        headers: { ...json, ...condition, "Leasehold-Instance": inst },
        body: record,
      };
    }
    case "register": {
      const now = current.get(s.name);
      const base: Partial<LeaseRecord> = now?.record ?? {
        holder: s.holder,
        term: 1,
        leaseMs: 60_000,
        metadata: {},
        acquiredAt: 0,
      };
      const {
        holderDigest: _h,
        successorDigest: _s,
        upstream: _u,
        name: _n,
        renewedAt: _r,
        ...rest
      } = base as LeaseRecord;
      const record = { ...rest, successor: { holder: s.holder, session: { name: s.session, term: 1 } } };
      const condition: Record<string, string> = now ? { "If-Match": `"${now.revision}"` } : { "If-None-Match": "*" };
      return {
        method: "PUT",
        url: path(s.name),
        headers: { ...json, ...condition, "Leasehold-Instance": inst },
        body: JSON.stringify(record),
      };
    }
    case "heartbeat": {
      const body = JSON.stringify({ instance: inst, leaseMs: 5_000, ...(s.buckets ? { buckets: s.buckets } : {}) });
      return {
        method: "POST",
        url: `/v1/groups/g/members/${encodeURIComponent(s.member)}/heartbeat`,
        headers: json,
        body,
      };
    }
    case "get":
      return { method: "GET", url: path(s.name), headers: auth };
    case "list":
      return { method: "GET", url: `/v1/leases?prefix=${encodeURIComponent(s.prefix)}`, headers: auth };
  }
}

const isQuota = (n: string) => n.startsWith("_quota/");
const same = (a: Stored | undefined, b: Stored | undefined) => a?.revision === b?.revision;

/** The names of a listing's unreadable rows. */
const unreadableRows = (text: string): string[] =>
  (JSON.parse(text) as { unreadable: Array<{ name: string }> }).unreadable.map((u) => u.name);

/** A record no store can read, planted past the store, and its bytes as planted. */
interface Planted {
  name: string;
  before: unknown;
  bytes(): Promise<unknown>;
}

/** One sequence of steps through the API in process on `store`, checked after every step. */
async function runSequence(steps: Step[], store: LeaseStore, digests: string[], planted?: Planted): Promise<void> {
  const clock = new ManualClock();
  const api = inProcessApi({ store, clock, auth: { tokens: TOKENS }, maxSkewMs: MAX_SKEW_MS });
  let latest: { token: number; instance: number; holder: string; name: string } | undefined;
  for (const s of steps) {
    if (s.kind === "tick") {
      await clock.advance(s.ms);
      continue;
    }
    if ("again" in s && s.again && latest) Object.assign(s, latest);
    const before = await snapshot(store);
    const r = request(s, before);
    const res = await api.fetch(`${api.url}${r.url}`, {
      method: r.method,
      headers: r.headers,
      ...(r.body === undefined ? {} : { body: r.body }),
    });
    const text = await res.text();
    const after = await snapshot(store);
    const what = `${JSON.stringify(s)} -> ${res.status} ${text.slice(0, 300)}`;
    expect(res.status, what).toBeLessThan(500);
    if ((s.kind === "acquire" || s.kind === "put") && res.status < 300) {
      latest = { token: s.token, instance: s.instance, holder: s.holder, name: s.name };
    }

    const changed = [...new Set([...before.keys(), ...after.keys()])].filter((n) => !same(before.get(n), after.get(n)));
    // Every refusal changes nothing, not even the server's own counts.
    if (res.status >= 400) expect(changed, what).toEqual([]);
    // Nothing outside the acting token's prefixes changes. A member's heartbeat is the group's
    // machinery (docs/sharding.md): it may write the group's own records (config, buckets,
    // an expired member's fencing), never a plain lease.
    const scope = TOKENS[s.token]!;
    const groupRecord = (n: string) => s.kind === "heartbeat" && /^g\/_(config$|buckets\/|members\/)/.test(n);
    for (const n of changed.filter((n) => !isQuota(n))) {
      expect(scope.prefixes.some((p) => covers(p, n)) || groupRecord(n), `${what}: changed ${n}`).toBe(true);
    }
    // A held term is the instance's that took it.
    const actor = "instance" in s ? digests[s.instance] : undefined;
    for (const n of changed.filter((n) => !isQuota(n) && !n.includes("/_"))) {
      const was = before.get(n)?.record;
      const now = after.get(n)?.record;
      if (!was || was.holder === null || !now) continue;
      // Held for certain: before `renewedAt + leaseMs` (every rule of the server, by the record's
      // stamps with maxSkewMs or by its own clock for a revision it wrote, holds it that long).
      const live = was.renewedAt + was.leaseMs > clock.wallNow();
      if (now.term === was.term) {
        if (actor !== was.holderDigest) {
          // Another process may only register itself as the successor: nothing else moves.
          expect(
            { ...now, successor: undefined, successorDigest: undefined, writeId: "" },
            `${what}: ${n} continued by another process`,
          ).toEqual({ ...was, successor: undefined, successorDigest: undefined, writeId: "" });
        }
      } else if (live && now.holderDigest !== was.holderDigest) {
        // A live term passes to another process only as the holder's hand-over to its successor.
        expect(actor, `${what}: ${n} taken while held`).toBe(was.holderDigest);
        expect(now.holderDigest, `${what}: ${n} handed to a non-successor`).toBe(was.successorDigest);
      }
    }
    // Listings a token may read never fail because of anyone's record.
    if (s.kind === "list" && (s.prefix === "" || /^[a-z]/.test(s.prefix)) && !s.prefix.includes("..")) {
      const mayList =
        scope.verbs.includes("read") &&
        scope.prefixes.some((p) => p === "" || (s.prefix.startsWith(p) && p.endsWith("/")));
      if (mayList) expect(res.status, what).toBe(200);
    }
    // The planted record is a row of its own in every listing that covers it, and in no other.
    if (planted && s.kind === "list" && res.status === 200) {
      expect(unreadableRows(text), what).toEqual(planted.name.startsWith(s.prefix) ? [planted.name] : []);
    }
    const all = await api.fetch(`${api.url}/v1/leases?prefix=`, {
      headers: { Authorization: `Bearer ${TOKENS[0]!.token}` },
    });
    expect(all.status, `${what}: the admin's listing`).toBe(200);
    const allText = await all.text();
    if (planted) {
      expect(unreadableRows(allText), `${what}: the admin's listing`).toEqual([planted.name]);
      expect(await planted.bytes(), `${what}: the planted record`).toEqual(planted.before);
    }
  }
}

describe("the API's trust rules hold over random sequences of hostile requests", () => {
  it(
    `${runs} sequences: scope, ownership, listings whole, refusals change nothing`,
    async () => {
      const digests = await Promise.all(INSTANCES.map((i) => instanceDigest(i)));
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), (steps) =>
          runSequence(steps, new MemoryStore(), digests),
        ),
        { numRuns: runs, seed },
      );
    },
    Math.max(120_000, runs * 200),
  );

  // MemoryStore cannot hold a record it cannot read: on SQLite, one is planted in one tenant's
  // prefix directly in the database before each sequence. Every listing still answers 200 (another
  // tenant's, the admin's), with the bad record as a row of its own where it is in scope.
  it(
    `${sqliteRuns} sequences on SQLite with an unreadable record in one tenant's prefix: no listing fails because of it`,
    async () => {
      const digests = await Promise.all(INSTANCES.map((i) => instanceDigest(i)));
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom("a/corrupt", "b/corrupt", "c/corrupt", "g/corrupt"),
          fc.array(step, { minLength: 1, maxLength: 30 }),
          async (name, steps) => {
            const backend = await sqliteBackend();
            try {
              await backend.write(name, '{"name": "not json');
              const bytes = () => backend.read(name);
              await runSequence(steps, backend.store, digests, { name, before: await bytes(), bytes });
            } finally {
              await backend.close();
            }
          },
        ),
        { numRuns: sqliteRuns, seed },
      );
    },
    Math.max(120_000, sqliteRuns * 1000),
  );
});
