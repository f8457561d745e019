/**
 * The PostgreSQL store's push (LISTEN/NOTIFY, src/backends/postgres/listener.ts) against the real
 * server, in real time: a follower hears a release by NOTIFY without polling; a watch yields the
 * current record, then each newer one, whatever else is sent on the channel; a lost listener
 * connection is replaced with nothing missed; while it cannot connect, watched leases are polled;
 * push off means no NOTIFY and no `watch`.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { NOTIFY_CHANNEL } from "../src/backends/postgres/backend.js";
import { notifyPayload, PostgresListener } from "../src/backends/postgres/listener.js";
import { PostgresStore } from "../src/backends/postgres/store.js";
import { Elector } from "../src/leader/elector.js";
import type { Stored } from "../src/lease.js";
import { MAX_HOLDER_LENGTH, MAX_NAME_LENGTH } from "../src/lease.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { freePort } from "./support/server-process.js";

const url = process.env.POSTGRES_URL!;
const table = "push_leases";
const admin = new pg.Pool({ connectionString: url, max: 3 });
const closing: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const c of closing.reverse()) await c.close();
  await admin.end();
});

let apps = 0;
function store(options: { push?: boolean; watchPollMs?: number } = {}): { store: PostgresStore; app: string } {
  const app = `push-test-${apps++}`;
  const u = new URL(url);
  u.searchParams.set("application_name", app);
  const s = new PostgresStore({ connectionString: u.href, table, poolSize: 3, ...options });
  closing.push(s);
  return { store: s, app };
}

/** Follows `name` on `s`, collecting what the watch yields (holder, or "none" for no record). */
function follow(s: PostgresStore, name: string) {
  const seen: Array<Stored | null> = [];
  const stop = new AbortController();
  const done = (async () => {
    for await (const stored of s.watch!(name, stop.signal)) seen.push(stored);
  })();
  return {
    seen,
    holders: () => seen.map((x) => (x === null ? "none" : (x.record.holder ?? "free"))),
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

describe("postgres push: followers", () => {
  it("a follower hears a release by NOTIFY and takes the lease without a poll", async () => {
    const name = uniqueName("handover");
    // Polls every minute (and with a live stream only once per lease): in this test, only push can tell b.
    const common = { name, leaseMs: 60_000, renewMs: 20_000, pollMs: 60_000, jitter: 0 };
    const a = new Elector({ ...common, store: store().store, identity: "a" });
    const elected = (e: Elector) => new Promise<number>((resolve) => e.on("elected", ({ term }) => resolve(term)));
    const aElected = elected(a);
    a.start();
    expect(await aElected).toBe(1);

    const bStore = store().store;
    const tracked = new TrackedStore(bStore);
    const b = new Elector({ ...common, store: tracked, identity: "b" });
    const bElected = elected(b);
    b.start();
    await expect.poll(() => bStore.pushState.listening).toBe(true);
    await expect.poll(() => b.current.holder).toBe("a"); // it read the record: now it only listens
    const readsBefore = tracked.counts.get + tracked.counts.getMany;

    const leaseWrites = () => tracked.written.filter((r) => r.name === name);
    expect(leaseWrites()).toHaveLength(1); // b registered as a's successor
    await a.stop(); // hands the lease to b (term + 1, under b's session), or releases it
    expect(await bElected).toBe(2);
    expect(tracked.counts.get + tracked.counts.getMany).toBe(readsBefore); // no poll: the NOTIFY told it
    expect(leaseWrites()).toHaveLength(1); // handed over: nothing more for b to write
    await b.stop();
  });
});

describe("postgres push: watch", () => {
  it("yields the current record (null when none), then each change made by any process", async () => {
    const { store: watcher } = store();
    const writer = store({ push: true }).store;
    const name = uniqueName();
    const w = follow(watcher, name);
    await expect.poll(w.holders).toEqual(["none"]);
    const first = await writer.put(makeRecord(name, { holder: "alice" }), null);
    await expect.poll(w.holders).toEqual(["none", "alice"]);
    const second = await writer.put(makeRecord(name, { holder: null }), first.revision);
    await expect.poll(w.holders).toEqual(["none", "alice", "free"]);
    await writer.put(makeRecord(name, { holder: "bob", term: 2 }), second.revision);
    await expect.poll(w.holders).toEqual(["none", "alice", "free", "bob"]);
    expect(w.seen.map((s) => s?.revision ?? null)).toEqual([null, "1", "2", "3"]);
    await w.stop();
    // Nothing watched: the listener gives its connection back.
    await expect.poll(() => watcher.pushState.listening).toBe(false);
  });

  it("other tables' writes, foreign payloads and forged revisions on the channel yield nothing", async () => {
    const { store: watcher } = store();
    const name = uniqueName();
    const writer = store().store;
    const first = await writer.put(makeRecord(name), null);
    const w = follow(watcher, name);
    await expect.poll(w.holders).toEqual(["alice"]);
    // The same lease name in another table, and payloads anyone may send on the channel.
    const other = new PostgresStore({ connectionString: url, table: "push_other", poolSize: 1 });
    closing.push(other);
    await other.put(makeRecord(name, { holder: "mallory" }), null);
    for (const payload of ["not json", "{}", JSON.stringify({ t: `"${table}"`, n: name, r: 99 }), "null"]) {
      await admin.query("SELECT pg_notify($1, $2)", [NOTIFY_CHANNEL, payload]);
    }
    // The next thing it yields is this table's next write.
    await writer.put(makeRecord(name, { holder: "bob", term: 2 }), first.revision);
    await expect.poll(w.holders).toEqual(["alice", "bob"]);
    await w.stop();
  });

  it("many watchers of one lease in one process share the listener; each sees the newest record", async () => {
    const { store: watcher } = store();
    const writer = store().store;
    const name = uniqueName();
    const watches = Array.from({ length: 20 }, () => follow(watcher, name));
    for (const w of watches) await expect.poll(w.holders).toEqual(["none"]);
    let held = await writer.put(makeRecord(name), null);
    for (let i = 1; i <= 5; i++) held = await writer.put(makeRecord(name, { renewedAt: i }), held.revision);
    for (const w of watches) await expect.poll(() => w.seen.at(-1)?.revision).toBe(held.revision);
    // A watch may skip a state it was too slow to take (it yields the newest), never go back.
    for (const w of watches) {
      const revisions = w.seen.slice(1).map((s) => Number(s?.revision));
      expect(revisions).toEqual([...revisions].sort((x, y) => x - y));
    }
    expect(watcher.pushState.listens).toBe(1);
    for (const w of watches) await w.stop();
  });

  it("a listener connection the server killed is replaced, and a change made meanwhile is not missed", async () => {
    const { store: watcher, app } = store({ watchPollMs: 100 });
    const writer = store().store;
    const name = uniqueName();
    const w = follow(watcher, name);
    await expect.poll(w.holders).toEqual(["none"]);
    const first = await writer.put(makeRecord(name), null);
    await expect.poll(w.holders).toEqual(["none", "alice"]);
    expect(watcher.pushState.listens).toBe(1);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [app]);
    // Written while nobody listens: read once the listener LISTENs again, or by a poll before.
    await writer.put(makeRecord(name, { holder: null }), first.revision);
    await expect.poll(w.holders).toEqual(["none", "alice", "free"]);
    await expect.poll(() => watcher.pushState.listening).toBe(true);
    expect(watcher.pushState.listens).toBeGreaterThan(1);
    // And notifications flow again on the new connection.
    await writer.put(makeRecord(name, { holder: "bob", term: 2 }), "2");
    await expect.poll(w.holders).toEqual(["none", "alice", "free", "bob"]);
    await w.stop();
  });

  it("while the listener cannot connect, watched leases are polled; once it can, it LISTENs", async () => {
    const writer = store().store;
    const name = uniqueName();
    const live = new pg.Pool({ connectionString: url, max: 2 });
    const dead = new pg.Pool({ host: "127.0.0.1", port: await freePort(), connectionTimeoutMillis: 500 });
    closing.push({ close: () => live.end() }, { close: () => dead.end() });
    let reachable = false;
    const listener = new PostgresListener({
      // Connection refused until `reachable`: a real failed connect, as when the server is away.
      connect: () => (reachable ? live : dead).connect(),
      read: (names) => writer.getMany(names),
      channel: NOTIFY_CHANNEL,
      table: `"${table}"`,
      pollMs: 50,
      checkMs: 1000,
    });
    closing.push(listener);
    const seen: string[] = [];
    const first = await writer.put(makeRecord(name), null);
    await listener.subscribe(name, (s) => seen.push(s === null ? "none" : (s.record.holder ?? "free")));
    expect(listener.listening).toBe(false);
    await expect.poll(() => seen).toEqual(["alice"]);
    const second = await writer.put(makeRecord(name, { holder: null }), first.revision);
    await expect.poll(() => seen).toEqual(["alice", "free"]);
    reachable = true;
    await expect.poll(() => listener.listening, { timeout: 5000 }).toBe(true);
    await writer.put(makeRecord(name, { holder: "bob", term: 2 }), second.revision);
    await expect.poll(() => seen).toEqual(["alice", "free", "bob"]);
  });
});

describe("postgres push: NOTIFY", () => {
  it("a payload names table, lease and revision, far under NOTIFY's 8000 bytes at the longest", () => {
    const longest = notifyPayload(`"${"t".repeat(63)}"."${"s".repeat(63)}"`, "n".repeat(MAX_NAME_LENGTH), 2 ** 53 - 1);
    expect(new TextEncoder().encode(longest).length).toBeLessThan(500);
    expect(MAX_HOLDER_LENGTH).toBeGreaterThan(0); // holders and metadata are never in a payload
  });

  it("every write notifies once it commits; with push off, none does and the store has no watch", async () => {
    const client = new pg.Client(url);
    await client.connect();
    closing.push({ close: () => client.end() });
    const heard: string[] = [];
    client.on("notification", (m) => heard.push(m.payload ?? ""));
    await client.query(`LISTEN "${NOTIFY_CHANNEL}"`);
    const quiet = store({ push: false }).store;
    expect(quiet.watch).toBeUndefined();
    const loud = store().store;
    const name = uniqueName();
    const created = await quiet.put(makeRecord(name), null);
    await quiet.put(makeRecord(name, { renewedAt: 1 }), created.revision);
    await loud.put(makeRecord(name, { renewedAt: 2 }), "2");
    // Notifications arrive in commit order: once the third write's is here, no earlier one came.
    await expect
      .poll(() => heard.filter((p) => p.includes(name)))
      .toEqual([JSON.stringify({ t: `"${table}"`, n: name, r: 3 })]);
  });
});
