/**
 * The sharding routes over real HTTP to the Node server, on the server's manual clock
 * (docs/sharding.md, "Over HTTP"): remote members heartbeat, are asked for hand-offs, confirm
 * them, leave, crash and come back, through `LeaseholdClient`. Every record the server writes is
 * recorded underneath it, and the tests check from that history that each bucket's terms only
 * grow with one member per term, and from the answers that no bucket is ever listed as held by
 * two members at once.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { ManualClock } from "../../src/clock.js";
import { isLeaseholdApiError } from "../../src/http/api-error.js";
import { LeaseholdClient } from "../../src/http/client.js";
import type { HeartbeatView } from "../../src/http/schemas.js";
import { Problem } from "../../src/http/schemas.js";
import type { CallOptions, LeaseRecord, Revision, Stored } from "../../src/lease.js";
import { bucketIndexOf, decodeMember, memberName } from "../../src/sharding/layout.js";
import { reshard } from "../../src/sharding/reshard.js";
import { checkTermRules } from "../../src/term-rules.js";
import { uniqueName } from "../../src/testkit/store-contract.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";
import { startApi, TOKENS } from "../support/api-server.js";
import { inProcessApi } from "../support/in-process-api.js";

const LEASE_MS = 10_000;
const MAX_SKEW_MS = 500;

/** Every record the server's store applied, in order. */
class RecordingStore extends StoreWrapper {
  readonly applied: LeaseRecord[] = [];
  readonly broken: string[] = [];
  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const current = expected === null ? null : ((await this.inner.get(next.name))?.record ?? null);
    const stored = await this.inner.put(next, expected, options);
    const violation = checkTermRules(current, next);
    if (violation) this.broken.push(`${next.name}: ${violation.message}`);
    this.applied.push(stored.record);
    return stored;
  }
}

const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 2) });
const store = new RecordingStore(new MemoryStore());
let api: Awaited<ReturnType<typeof startApi>>;
let client: LeaseholdClient;
beforeAll(async () => {
  api = await startApi({ store, clock, maxSkewMs: MAX_SKEW_MS });
  client = new LeaseholdClient({ baseUrl: api.url, token: TOKENS.admin, retries: 0 });
});
afterAll(() => api.close());

/** No bucket term for two members, no term going down: from every record the store applied. */
function bucketHistory(group: string): string[] {
  const out: string[] = [];
  const seen = new Map<number, { term: number; holder: string | null }>();
  const winners = new Map<string, string>();
  for (const r of store.applied) {
    const bucket = bucketIndexOf(group, r.name);
    if (bucket === undefined) continue;
    const last = seen.get(bucket);
    if (last && r.term < last.term) out.push(`bucket ${bucket}: term ${r.term} after ${last.term}`);
    if (r.holder !== null) {
      const key = `${bucket}/${r.term}`;
      const winner = winners.get(key);
      if (winner !== undefined && winner !== r.holder)
        out.push(`bucket ${bucket} term ${r.term}: ${winner} and ${r.holder}`);
      winners.set(key, r.holder);
    }
    seen.set(bucket, { term: r.term, holder: r.holder });
  }
  return out;
}

/** A remote member as an adapter in another language would run it, minus the work itself. */
class Remote {
  readonly instance = crypto.randomUUID();
  session: number | undefined;
  last: HeartbeatView | undefined;

  constructor(
    readonly group: string,
    readonly id: string,
    readonly api: LeaseholdClient = client,
  ) {}

  async beat(extra: { buckets?: number } = { buckets: 16 }): Promise<HeartbeatView> {
    const answer = await this.api.heartbeat(this.group, this.id, {
      instance: this.instance,
      leaseMs: LEASE_MS,
      ...(this.session === undefined ? {} : { session: this.session }),
      ...extra,
    });
    this.session = answer.session;
    this.last = answer;
    return answer;
  }

  /** Stops what it was asked to give up (nothing runs here) and confirms each. */
  async handOff(): Promise<void> {
    for (const h of this.last?.handoffs ?? []) {
      await this.api.confirmHandoff(this.group, this.id, {
        instance: this.instance,
        session: this.session!,
        bucket: h.bucket,
        term: h.term,
      });
    }
  }

  held(): number[] {
    return (this.last?.held ?? []).map((h) => h.bucket);
  }
}

/** The problem a call was refused with. */
async function refusal(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isLeaseholdApiError(error)) throw new Error(`expected a refusal, got ${String(error)}`);
  const problem = Problem.parse(error.problem);
  expect(problem.status).toBe(error.status);
  return problem;
}

/** Every member's last answer lists disjoint buckets. */
function disjoint(...members: Remote[]): void {
  const owner = new Map<number, string>();
  for (const m of members) {
    for (const b of m.held()) {
      expect(owner.get(b), `bucket ${b} listed for ${owner.get(b)} and ${m.id}`).toBeUndefined();
      owner.set(b, m.id);
    }
  }
}

beforeEach(() => {
  expect(store.broken).toEqual([]);
});

describe("a remote member's session and buckets", () => {
  it("the first member starts the group and holds every bucket at term 1", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const a = new Remote(group, "a");
    const first = await a.beat();
    expect(first).toMatchObject({
      group,
      member: "a",
      session: 1,
      leaseMs: LEASE_MS,
      buckets: 16,
      epoch: 1,
      handoffs: [],
      members: ["a"],
      unowned: 0,
      settled: true,
    });
    expect(first.held).toEqual(Array.from({ length: 16 }, (_, bucket) => ({ bucket, term: 1 })));
    // Renewing keeps everything; the count sent later does not change the group's.
    const again = await a.beat({ buckets: 4 });
    expect(again).toMatchObject({ session: 1, buckets: 16, held: first.held, settled: true });
    expect(bucketHistory(group)).toEqual([]);
  });

  it("a second member gets half by hand-off once the view has settled, never a bucket held twice", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const a = new Remote(group, "a");
    const b = new Remote(group, "b");
    await a.beat();
    await b.beat();
    expect(b.last).toMatchObject({ held: [], members: ["a", "b"], settled: false });
    // Not settled yet: nobody is asked for anything.
    await a.beat();
    expect(a.last?.handoffs).toEqual([]);
    let rounds = 0;
    while (a.held().length !== 8 || b.held().length !== 8) {
      if (++rounds > 20) throw new Error(`not balanced: a=${a.held()} b=${b.held()}`);
      await clock.advance(LEASE_MS / 4);
      await b.beat();
      await a.beat();
      disjoint(a, b);
      // At most ceil(16 / 8) = 2 asked at a time.
      expect(a.last!.handoffs.length).toBeLessThanOrEqual(2);
      for (const h of a.last!.handoffs) expect(h).toMatchObject({ to: "b", reason: "handoff" });
      await a.handOff();
      await b.beat();
      disjoint(a, b);
    }
    // Every moved bucket is b's at term 2 (term + 1 on the transfer); a's own stay at term 1.
    for (const h of b.last!.held) expect(h.term).toBe(2);
    for (const h of a.last!.held) expect(h.term).toBe(1);
    await a.beat();
    await b.beat();
    expect(a.last).toMatchObject({ settled: true, unowned: 0, members: ["a", "b"] });
    expect(b.last).toMatchObject({ settled: true });
    expect(bucketHistory(group)).toEqual([]);
  });

  it("a graceful leave frees every bucket at once; the old session is refused", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const a = new Remote(group, "a");
    const b = new Remote(group, "b");
    await a.beat();
    await b.beat();
    const left = await client.leave(group, "a", { instance: a.instance, session: 1 });
    expect(left).toEqual({ group, member: "a", session: 1 });
    // Idempotent.
    expect(await client.leave(group, "a", { instance: a.instance, session: 1 })).toEqual(left);
    const taken = await b.beat();
    expect(taken.held).toEqual(Array.from({ length: 16 }, (_, bucket) => ({ bucket, term: 2 })));
    expect(taken.members).toEqual(["b"]);
    const refused = await refusal(a.beat());
    expect(refused).toMatchObject({ status: 409, type: "urn:leasehold:problem:session-ended" });
    expect(refused.detail).toContain("it was left");
    // Starting again is a new session (2), which joins like any new member.
    a.session = undefined;
    expect(await a.beat()).toMatchObject({ session: 2, held: [] });
    expect(bucketHistory(group)).toEqual([]);
  });

  it("a crashed member is fenced once its session expires by the server's clock, then its buckets are taken with term + 1", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const c = new Remote(group, "c");
    const d = new Remote(group, "d");
    await c.beat();
    await d.beat();
    // c stops heartbeating (d goes on). Not expired at renewedAt + leaseMs + maxSkewMs exactly...
    await clock.advance(LEASE_MS / 2);
    await d.beat();
    await clock.advance(LEASE_MS / 2 + MAX_SKEW_MS);
    await d.beat();
    expect(d.held()).toEqual([]);
    // ...but one millisecond later it is: d fences c and takes everything.
    await clock.advance(1);
    const taken = await d.beat();
    expect(taken.held).toEqual(Array.from({ length: 16 }, (_, bucket) => ({ bucket, term: 2 })));
    const fenced = decodeMember(group, (await store.get(`${group}/_members/c`))!);
    expect(fenced).toMatchObject({ holder: null, term: 1, fencedBy: "d" });
    const refused = await refusal(c.beat());
    expect(refused).toMatchObject({ status: 409, type: "urn:leasehold:problem:session-ended" });
    expect(refused.detail).toContain('"d" ended it after it expired');
    expect(bucketHistory(group)).toEqual([]);
  });

  it("a renewal after the session expired is refused, even before anyone fenced it", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const a = new Remote(group, "a");
    await a.beat();
    await clock.advance(LEASE_MS + MAX_SKEW_MS + 1);
    const refused = await refusal(a.beat());
    expect(refused).toMatchObject({ status: 409, type: "urn:leasehold:problem:session-ended" });
    expect(refused.detail).toContain("expired");
    // A new session re-establishes every bucket by compare-and-swap with term + 1.
    a.session = undefined;
    const again = await a.beat();
    expect(again.session).toBe(2);
    expect(again.held).toEqual(Array.from({ length: 16 }, (_, bucket) => ({ bucket, term: 2 })));
    expect(bucketHistory(group)).toEqual([]);
  });

  it("another process with the same member id waits until the live session expires; a lost start answer is recognised", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const first = new Remote(group, "m");
    await first.beat();
    // The same process starting again (its first answer lost) gets its own session back, renewed.
    const retry = new Remote(group, "m");
    Object.assign(retry, { instance: first.instance });
    expect(await retry.beat()).toMatchObject({ session: 1 });
    const second = new Remote(group, "m");
    const busy = await refusal(second.beat());
    expect(busy).toMatchObject({ status: 409, type: "urn:leasehold:problem:member-in-use" });
    // Naming the session does not help: it is the other process's.
    second.session = 1;
    expect(await refusal(second.beat())).toMatchObject({ type: "urn:leasehold:problem:member-in-use" });
    second.session = undefined;
    await clock.advance(LEASE_MS + MAX_SKEW_MS + 1);
    const taken = await second.beat();
    expect(taken.session).toBe(2);
    expect(taken.held.every((h) => h.term === 2)).toBe(true);
    expect(await refusal(first.beat())).toMatchObject({ type: "urn:leasehold:problem:member-in-use" });
    expect(bucketHistory(group)).toEqual([]);
  });

  it("a changed bucket count asks for every bucket back; confirmed, they are released and taken under the new count", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const a = new Remote(group, "a");
    await a.beat();
    await reshard({ store: api.store, group, buckets: 8, clock });
    const asked = await a.beat();
    expect(asked).toMatchObject({ buckets: 8, epoch: 2, held: [] });
    expect(asked.handoffs).toEqual(
      Array.from({ length: 16 }, (_, bucket) => ({ bucket, term: 1, to: null, reason: "resharded" })),
    );
    for (const h of asked.handoffs) {
      const done = await client.confirmHandoff(group, "a", {
        instance: a.instance,
        session: a.session!,
        bucket: h.bucket,
        term: h.term,
      });
      expect(done).toEqual({ bucket: h.bucket, outcome: "released", holder: null, term: 1 });
    }
    const after = await a.beat();
    expect(after).toMatchObject({ buckets: 8, epoch: 2, handoffs: [], settled: true });
    expect(after.held).toEqual(Array.from({ length: 8 }, (_, bucket) => ({ bucket, term: 2 })));
    expect(bucketHistory(group)).toEqual([]);
  });
});

describe("refusals", () => {
  const post = async (path: string, body: unknown, token: string | null = TOKENS.admin) => {
    const res = await fetch(`${api.url}${path}`, {
      method: "POST",
      headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the tests read the answer field by field
    return { status: res.status, type: res.headers.get("content-type"), body: (await res.json()) as any };
  };
  const beat = (group: string, member: string, body: unknown, token?: string | null) =>
    post(`${LeaseholdClient.memberPath(group, member)}/heartbeat`, body, token);
  const ok = { instance: "instance-000000000001", leaseMs: LEASE_MS, buckets: 4 };

  it("an unknown group without a count is 404; a confirmation for a group that does not exist too", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const res = await beat(group, "a", { instance: "instance-000000000001", leaseMs: LEASE_MS });
    expect(res).toMatchObject({ status: 404, type: "application/problem+json" });
    expect(res.body.detail).toContain("send buckets");
    const handoff = await post(`${LeaseholdClient.memberPath(group, "a")}/handoff`, {
      instance: "instance-000000000001",
      session: 1,
      bucket: 0,
      term: 1,
    });
    expect(handoff.status).toBe(404);
  });

  it("400 names the field: group, member, instance, bucket, term, unknown fields", async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ["Adapters/x", "a", ok, "group"],
      [`adapters/${"x".repeat(200)}`, "a", ok, "group"],
      ["adapters/x", "A b", ok, "member"],
      ["adapters/x", "a", { ...ok, instance: "has space" }, "instance"],
      ["adapters/x", "a", { ...ok, buckets: 4097 }, "buckets"],
      ["adapters/x", "a", { ...ok, session: 0 }, "session"],
      ["adapters/x", "a", { ...ok, colour: "red" }, "colour"],
    ];
    for (const [group, member, body, field] of cases) {
      const res = await beat(group, member, body);
      expect(res.status, JSON.stringify([group, member, body])).toBe(400);
      expect(res.body.type).toBe("urn:leasehold:problem:validation");
      expect(
        res.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(field);
    }
    const handoff = await post(`${LeaseholdClient.memberPath("adapters/x", "a")}/handoff`, {
      instance: "instance-000000000001",
      session: 1,
      bucket: -1,
      term: 1,
    });
    expect(handoff.body.errors).toEqual([{ path: "bucket", message: "expected a bucket number of at least 0" }]);
  });

  it("the token must cover the group's records: 401 without one, 403 outside its prefixes or verbs", async () => {
    expect((await beat("adapters/x", "a", ok, null)).status).toBe(401);
    expect((await beat("billing/x", "a", ok, TOKENS.adapters)).body.type).toBe("urn:leasehold:problem:forbidden");
    expect((await beat("adapters/x", "a", ok, TOKENS.reader)).body.type).toBe("urn:leasehold:problem:forbidden");
    const group = `adapters/${uniqueName("g")}`;
    expect((await beat(group, "a", ok, TOKENS.adapters)).status).toBe(200);
  });

  it("a token scoped to one member acts for that member alone; another member's id is 403 and changes nothing", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const m1Token = "member-m1-token-0123456789";
    const scoped = inProcessApi({
      store,
      clock,
      maxSkewMs: MAX_SKEW_MS,
      auth: {
        tokens: [{ name: "m1", token: m1Token, prefixes: [`${group}/_members/m1`], verbs: ["read", "write"] }],
      },
    });
    const m1 = new LeaseholdClient({ baseUrl: scoped.url, fetch: scoped.fetch, token: m1Token, retries: 0 });
    const instance = crypto.randomUUID();
    const first = await m1.heartbeat(group, "m1", { instance, leaseMs: LEASE_MS, buckets: 4 });
    expect(first.held).toHaveLength(4);
    const m2 = new Remote(group, "m2");
    await m2.beat();
    const before = store.applied.length;
    for (const [route, body] of [
      ["heartbeat", { instance, leaseMs: LEASE_MS }],
      ["handoff", { instance, session: 1, bucket: 0, term: 1 }],
      ["leave", { instance, session: 1 }],
    ] as const) {
      const res = await scoped.fetch(`${scoped.url}${LeaseholdClient.memberPath(group, "m2")}/${route}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${m1Token}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status, route).toBe(403);
      expect(((await res.json()) as { type: string }).type).toBe("urn:leasehold:problem:forbidden");
    }
    // Nor a member whose id only starts the same: the prefix is a path.
    const lookalike = await scoped.fetch(`${scoped.url}${LeaseholdClient.memberPath(group, "m10")}/heartbeat`, {
      method: "POST",
      headers: { Authorization: `Bearer ${m1Token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ instance, leaseMs: LEASE_MS }),
    });
    expect(lookalike.status).toBe(403);
    expect(store.applied.length).toBe(before);
    await m1.leave(group, "m1", { instance, session: first.session });
  });

  it("a group-wide token still cannot act for a member without its instance: leave, hand-off and heartbeat are 409", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const a = new Remote(group, "a");
    await a.beat({ buckets: 4 });
    const record = (await store.inner.get(memberName(group, "a")))!.record;
    // The member record keeps the instance's digest only; no answer shows either.
    expect(JSON.stringify(record)).not.toContain(a.instance);
    expect(record.holderDigest).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const shown = await client.get(memberName(group, "a"));
    expect(shown?.metadata).toEqual({ since: String(record.acquiredAt) });
    const before = store.applied.length;
    const thief = "thief-instance-0000000001";
    expect(await refusal(client.leave(group, "a", { instance: thief, session: 1 }))).toMatchObject({
      status: 409,
      type: "urn:leasehold:problem:member-in-use",
    });
    expect(
      await refusal(client.confirmHandoff(group, "a", { instance: thief, session: 1, bucket: 0, term: 1 })),
    ).toMatchObject({ status: 409, type: "urn:leasehold:problem:member-in-use" });
    expect(
      await refusal(client.heartbeat(group, "a", { instance: thief, session: 1, leaseMs: 24 * 3600 * 1000 })),
    ).toMatchObject({ status: 409, type: "urn:leasehold:problem:member-in-use" });
    expect(store.applied.length).toBe(before);
  });

  it("a confirmation for a bucket not held at that term is 409 bucket-not-held and changes nothing", async () => {
    const group = `adapters/${uniqueName("g")}`;
    const a = new Remote(group, "a");
    await a.beat({ buckets: 4 });
    const before = store.applied.length;
    const wrong = await refusal(
      client.confirmHandoff(group, "a", { instance: a.instance, session: 1, bucket: 2, term: 7 }),
    );
    expect(wrong).toMatchObject({ status: 409, type: "urn:leasehold:problem:bucket-not-held" });
    expect(wrong.detail).toContain('held by "a" at term 1');
    const stranger = await refusal(
      client.confirmHandoff(group, "a", { instance: "someone-else-00000001", session: 1, bucket: 2, term: 1 }),
    );
    expect(stranger).toMatchObject({ type: "urn:leasehold:problem:member-in-use" });
    const old = await refusal(
      client.confirmHandoff(group, "a", { instance: a.instance, session: 2, bucket: 2, term: 1 }),
    );
    expect(old).toMatchObject({ type: "urn:leasehold:problem:session-ended" });
    expect(store.applied.length).toBe(before);
  });
});
