/**
 * A remote member whose window closed never gets the terms it stopped back (docs/sharding.md,
 * "Over HTTP", issue #22 item 1): the real Node server on SQLite, on its manual clock, with the
 * default skew bound (1 s), so the server still counts a session live well after the member's own
 * window (`sentAt + leaseMs - safetyMs`) has closed.
 *
 * - The reproduction: a heartbeat, 1.3 s with a 1 s lease, a heartbeat naming the same session.
 *   It used to renew that session and list the same buckets at the same terms, which the member
 *   had stopped and may never start again: the buckets stayed idle while the status said balanced.
 * - A start names the newest session the member worked under (`ended`): the server starts the
 *   next one on top of it (term + 1, every bucket re-established at term + 1), even while it would
 *   still count it live; a start whose answer was lost, repeated or delivered late, renews the
 *   session the member never saw instead of ending it under the member's feet.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { ManualClock } from "../../src/clock.js";
import { isLeaseholdApiError } from "../../src/http/api-error.js";
import { LeaseholdClient } from "../../src/http/client.js";
import { type HeartbeatRequest, Problem } from "../../src/http/schemas.js";
import { uniqueName } from "../../src/testkit/store-contract.js";
import { startApi, TOKENS } from "../support/api-server.js";

const LEASE_MS = 1000;

const dir = mkdtempSync(join(tmpdir(), "leasehold-remote-tenure-"));
const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 4) });
let api: Awaited<ReturnType<typeof startApi>>;
let client: LeaseholdClient;
beforeAll(async () => {
  api = await startApi({ store: new SqliteStore({ path: join(dir, "api.db") }), clock });
  client = new LeaseholdClient({ baseUrl: api.url, token: TOKENS.admin, retries: 0 });
});
afterAll(async () => {
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The problem type a heartbeat was refused with. */
async function refused(call: Promise<unknown>): Promise<string> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isLeaseholdApiError(error)) throw new Error(`expected a refusal, got ${JSON.stringify(error)}`);
  return Problem.parse(error.problem).type;
}

const terms = (answer: { held: Array<{ bucket: number; term: number }> }) => answer.held.map((h) => h.term);

describe("a remote member whose window closed gets new tenures at its next heartbeat", () => {
  it("the reproduction: a heartbeat 1.3 s after the last, with a 1 s lease, does not renew the session it names", async () => {
    const group = uniqueName("repro");
    const beat = (body: Omit<HeartbeatRequest, "instance" | "leaseMs">) =>
      client.heartbeat(group, "m1", { instance: "i-1-0123456789abcdef", leaseMs: LEASE_MS, ...body });
    const first = await beat({ buckets: 4 });
    expect(first.session).toBe(1);
    expect(first.held).toEqual([0, 1, 2, 3].map((bucket) => ({ bucket, term: 1 })));

    await clock.advance(1300);
    // The member's window closed 1 s - safetyMs after it sent the first heartbeat, so it stopped
    // every bucket; its session is still live by the server's skew bound (renewedAt + 1 s + 1 s).
    expect(await refused(beat({ session: 1 }))).toBe("urn:leasehold:problem:session-ended");
    // Its next heartbeat starts the next session, naming the one it worked under.
    const next = await beat({ ended: 1 });
    expect(next.session).toBe(2);
    expect(next.held).toEqual([0, 1, 2, 3].map((bucket) => ({ bucket, term: 2 })));
  });

  it("a start on top of a live session of its own begins the next one; a lost or late start renews the one the member never saw", async () => {
    const group = uniqueName("start");
    const instance = crypto.randomUUID();
    const beat = (body: Omit<HeartbeatRequest, "instance" | "leaseMs">) =>
      client.heartbeat(group, "m1", { instance, leaseMs: LEASE_MS, ...body });
    const first = await beat({ buckets: 4 });
    // Well inside the server's view of the session (it renewed it just now), and inside the
    // member's own window: a member that had to stop (a slow answer that arrived past its
    // deadline, say) starts the next session all the same, every bucket at term + 1.
    await clock.advance(200);
    const second = await beat({ ended: first.session });
    expect(second.session).toBe(2);
    expect(terms(second)).toEqual([2, 2, 2, 2]);

    // The answer to that start was lost: the member still knows only session 1 and asks again.
    // Session 2 is one it never worked under, so it is renewed, with the terms it never started.
    const again = await beat({ ended: first.session });
    expect(again.session).toBe(2);
    expect(terms(again)).toEqual([2, 2, 2, 2]);
    // The member works under 2 now, and b joins (the buckets b should have are a's, live: b
    // asks for them and waits). A start m1 sent before (delayed on the way, ended: 1) arrives
    // late: it must not end session 2 under m1's feet (its buckets would be free for b while m1
    // works on them), so it renews session 2.
    const b = { instance: crypto.randomUUID(), leaseMs: LEASE_MS };
    expect((await client.heartbeat(group, "b", b)).held).toEqual([]);
    await clock.advance(300);
    expect((await beat({ ended: 1 })).session).toBe(2);
    expect((await client.heartbeat(group, "b", { ...b, session: 1 })).held).toEqual([]);
    expect((await beat({ session: 2 })).session).toBe(2);
    // A renewal of session 1 delivered late is refused: that session is over.
    expect(await refused(beat({ session: 1 }))).toBe("urn:leasehold:problem:session-ended");
    // `ended` older than the session named says nothing new: a renewal of session 2.
    expect((await beat({ session: 2, ended: 1 })).session).toBe(2);
    // Once session 2's window closed too, the next start is session 3: m1's buckets are free
    // once it is written, re-established at term 3, or taken by b (which renews meanwhile).
    await clock.advance(500);
    expect((await client.heartbeat(group, "b", { ...b, session: 1 })).held).toEqual([]);
    await clock.advance(800);
    const third = await beat({ ended: 2 });
    expect(third.session).toBe(3);
    const theirs = (await client.heartbeat(group, "b", { ...b, session: 1 })).held;
    expect([...third.held, ...theirs].map((h) => h.term)).toEqual([3, 3, 3, 3]);
    expect(theirs.length).toBeGreaterThan(0);
  });

  it("a member starting its next session on top of its own never left the view: hand-offs asked go on", async () => {
    const group = uniqueName("stays");
    const members = ["a", "b", "c"].map((id) => ({ id, instance: crypto.randomUUID(), session: 0 }));
    const beat = async (m: (typeof members)[number], extra: Partial<HeartbeatRequest> = {}) => {
      const answer = await client.heartbeat(group, m.id, {
        instance: m.instance,
        leaseMs: LEASE_MS,
        buckets: 4,
        ...(m.session > 0 && extra.ended === undefined ? { session: m.session } : {}),
        ...extra,
      });
      m.session = answer.session;
      return answer;
    };
    const [a, b, c] = members as [(typeof members)[number], (typeof members)[number], (typeof members)[number]];
    expect((await beat(a)).held).toHaveLength(4);
    await clock.advance(100);
    await beat(b);
    await beat(c);
    // Everyone renews; the view (a, b, c) has not changed since b and c joined.
    for (let i = 0; i < 4; i++) {
      await clock.advance(300);
      for (const m of members) await beat(m);
    }
    const before = (await client.get(`${group}/_members/c`))!;
    // c's window closed (say): it starts its next session on top of its live one.
    const restarted = await beat(c, { ended: c.session });
    expect(restarted.session).toBe(2);
    const after = (await client.get(`${group}/_members/c`))!;
    expect(after.metadata.since).toBe(before.metadata.since);
    // The view is still stable: a is asked to hand buckets to b and c at once, not a lease later.
    await beat(b);
    await beat(c);
    const asked = await beat(a);
    expect(asked.handoffs.map((h) => h.to).sort()).toEqual(["b", "c"]);
  });

  it("another process under the member id still waits for the live session to expire, whatever it names", async () => {
    const group = uniqueName("other");
    const mine = await client.heartbeat(group, "m1", {
      instance: crypto.randomUUID(),
      leaseMs: LEASE_MS,
      buckets: 2,
    });
    const other = { instance: crypto.randomUUID(), leaseMs: LEASE_MS };
    expect(await refused(client.heartbeat(group, "m1", { ...other, ended: mine.session }))).toBe(
      "urn:leasehold:problem:member-in-use",
    );
    await clock.advance(LEASE_MS + 1000 + 1);
    const taken = await client.heartbeat(group, "m1", { ...other, ended: mine.session });
    expect(taken.session).toBe(2);
    expect(terms(taken)).toEqual([2, 2]);
  });
});
