/**
 * SQLite's push (src/backends/sqlite/watch.ts): a change committed by any connection, in this
 * process or another, reaches a watcher within `watchPollMs`; nothing is read while nothing
 * changes; a corrupt record is not handed on. Then the user's case, with real OS processes sharing
 * one file: a follower whose poll is a minute away takes a released lease, and leads a bound lease
 * handed to it at the handed term, because the store told it (test/support/sqlite-handover-worker.ts;
 * both processes' own output, on CLOCK_MONOTONIC).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { CommitWatch } from "../src/backends/sqlite/watch.js";
import type { Stored } from "../src/lease.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { killAfterEach, startJsonLines } from "./support/json-lines-process.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-sqlite-push-"));
const db = join(dir, "leases.db");
const stores: SqliteStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  rmSync(dir, { recursive: true, force: true });
});
function open(options: { watchPollMs?: number } = {}): SqliteStore {
  const s = new SqliteStore({ path: db, ...options });
  stores.push(s);
  return s;
}

function follow(s: SqliteStore, name: string) {
  const seen: Array<Stored | null> = [];
  const stop = new AbortController();
  const done = (async () => {
    for await (const stored of s.watch(name, stop.signal)) seen.push(stored);
  })();
  return {
    seen,
    revisions: () => seen.map((x) => x?.revision ?? null),
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

describe("sqlite push: the watch", () => {
  it("yields the record now, then each revision committed by another connection, and nothing else", async () => {
    const watcher = open({ watchPollMs: 10 });
    const writer = open();
    const name = uniqueName("watched");
    const w = follow(watcher, name);
    await expect.poll(() => w.revisions()).toEqual([null]);
    const first = await writer.put(makeRecord(name), null);
    await expect.poll(() => w.revisions()).toEqual([null, first.revision]);
    // Writes to other leases move the counter, but this lease did not change: nothing is yielded.
    for (let i = 0; i < 5; i++) await writer.put(makeRecord(uniqueName("other")), null);
    const second = await writer.put(makeRecord(name, { renewedAt: 2 }), first.revision);
    await expect.poll(() => w.revisions()).toEqual([null, first.revision, second.revision]);
    await new Promise((r) => setTimeout(r, 100));
    expect(w.revisions()).toEqual([null, first.revision, second.revision]);
    expect(w.seen.at(-1)?.record.renewedAt).toBe(2);
    await w.stop();
  });

  it("a write by another OS process is heard; its own writes too; many watchers of one lease each get it", async () => {
    const s = open({ watchPollMs: 10 });
    const name = uniqueName("foreign");
    const watchers = [follow(s, name), follow(s, name), follow(s, name)];
    for (const w of watchers) await expect.poll(() => w.revisions()).toEqual([null]);
    // A plain better-sqlite3 connection in another process, as a foreign tool would write.
    const script = `const D=require("better-sqlite3");const d=new D(${JSON.stringify(db)});d.prepare("INSERT INTO leases (name, rev, record) VALUES (?, 1, ?)").run(${JSON.stringify(name)}, ${JSON.stringify(JSON.stringify(makeRecord(name)))});d.close();`;
    await new Promise<void>((resolve, reject) =>
      spawn(process.execPath, ["-e", script], { stdio: "inherit" }).once("exit", (code) =>
        code === 0 ? resolve() : reject(new Error(`writer exited ${code}`)),
      ),
    );
    for (const w of watchers) await expect.poll(() => w.revisions()).toEqual([null, "1"]);
    const own = await s.put(makeRecord(name, { renewedAt: 9 }), "1");
    for (const w of watchers) await expect.poll(() => w.revisions()).toEqual([null, "1", own.revision]);
    for (const w of watchers) await w.stop();
  });

  it("an in-memory store hears its own writes; a corrupt record is not handed on, and the watch goes on", async () => {
    const memory = new SqliteStore({ path: ":memory:", watchPollMs: 10 });
    stores.push(memory);
    const w = follow(memory, "jobs/mem");
    await expect.poll(() => w.revisions()).toEqual([null]);
    const created = await memory.put(makeRecord("jobs/mem"), null);
    await expect.poll(() => w.revisions()).toEqual([null, created.revision]);
    await w.stop();

    const name = uniqueName("corrupt");
    const s = open({ watchPollMs: 10 });
    const c = follow(s, name);
    await expect.poll(() => c.revisions()).toEqual([null]);
    const raw = new Database(db);
    raw.prepare("INSERT INTO leases (name, rev, record) VALUES (?, 4, '{not json')").run(name);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.revisions()).toEqual([null]);
    raw.prepare("UPDATE leases SET rev = 5, record = ? WHERE name = ?").run(JSON.stringify(makeRecord(name)), name);
    raw.close();
    await expect.poll(() => c.revisions()).toEqual([null, "5"]);
    await c.stop();
  });

  it("leaves the thread at least nine tenths: a tick whose reads took d ms waits 9d before the next", async () => {
    // A source whose counter moves at every look and whose batch read takes 20 ms of the thread.
    let version = 0;
    let reads = 0;
    const busy = (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end) {}
    };
    const commits = new CommitWatch(
      {
        dataVersion: () => version++,
        read: () => null,
        readMany: (names) => {
          reads++;
          busy(20);
          return names.map(() => null);
        },
      },
      1,
    );
    const stop = new AbortController();
    const watching = (async () => {
      for await (const _ of commits.watch("jobs/busy", stop.signal));
    })();
    const started = performance.now();
    await new Promise((r) => setTimeout(r, 1000));
    const elapsed = performance.now() - started;
    stop.abort();
    await watching;
    // Each re-read (20 ms) is followed by at least 180 ms of rest: at most one per 200 ms, where a
    // 1 ms watchPollMs alone would allow about 45 in this second.
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(1 + Math.ceil(elapsed / 200));
  });

  it("refuses a watchPollMs that cannot be right", () => {
    expect(() => new SqliteStore({ path: ":memory:", watchPollMs: 0 })).toThrow(/watchPollMs.*at least 1/s);
    expect(() => new SqliteStore({ path: ":memory:", watchPollMs: 1.5 })).toThrow(/watchPollMs.*whole/s);
  });
});

// ---- two OS processes on one file ------------------------------------------------------------

const worker = join(import.meta.dirname, "support", "sqlite-handover-worker.ts");

interface Line {
  event: string;
  identity: string;
  mono: string;
  term?: number;
  holder?: string | null;
}

killAfterEach();

function start(identity: string, mode: "plain" | "bound", lease: string) {
  return startJsonLines<Line>(identity, worker, [db, identity, mode, lease]);
}

const ms = (from: Line, to: Line) => Number(BigInt(to.mono) - BigInt(from.mono)) / 1e6;

describe("sqlite push: two processes, a follower whose next poll is a minute away", () => {
  it("a default Elector's graceful stop: the other process takes the lease at term + 1, told by the store", async () => {
    const lease = uniqueName("plain");
    const a = start("a", "plain", lease);
    const aElected = await a.until((l) => l.event === "elected");
    const b = start("b", "plain", lease);
    await b.until((l) => l.event === "leader" && l.holder === "a");
    a.child.stdin?.write("stop\n");
    const stopping = await a.until((l) => l.event === "stopping");
    const bElected = await b.until((l) => l.event === "elected");
    expect(bElected.term).toBe(aElected.term! + 1);
    // Its poll was 60 s away and the lease 30 s long: only the push could tell it this soon.
    expect(ms(stopping, bElected)).toBeLessThan(20_000);
    expect(await a.exited).toBe(0);
    const store = open();
    expect((await store.get(lease))?.record).toMatchObject({ holder: "b", term: aElected.term! + 1 });
    b.child.stdin?.write("stop\n");
    expect(await b.exited).toBe(0);
  }, 60_000);

  it("a bound lease handed over: the successor leads at the handed term, without a write of its own", async () => {
    const lease = uniqueName("bound");
    const a = start("a", "bound", lease);
    const aElected = await a.until((l) => l.event === "elected");
    const b = start("b", "bound", lease);
    const store = open();
    await expect.poll(async () => (await store.get(lease))?.record.successor?.holder, { timeout: 20_000 }).toBe("b");
    a.child.stdin?.write("stop\n");
    const stopping = await a.until((l) => l.event === "stopping");
    const bElected = await b.until((l) => l.event === "elected");
    const handed = aElected.term! + 1;
    expect(bElected.term).toBe(handed);
    expect(ms(stopping, bElected)).toBeLessThan(20_000);
    expect(await a.exited).toBe(0);
    const record = (await store.get(lease))?.record;
    expect(record).toMatchObject({ holder: "b", term: handed });
    expect(record?.session?.name).toBe("_sessions/b");
    b.child.stdin?.write("stop\n");
    expect(await b.exited).toBe(0);
  }, 60_000);
});
