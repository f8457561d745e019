/**
 * The PostgreSQL store's connections against the real server: backends killed with
 * pg_terminate_backend while idle in the pool and in the middle of a statement, a statement
 * cancelled by statement_timeout, a network that stops answering (a freezing TCP forwarder), an
 * aborted call, and writers renewing through the one write path while their connections are killed
 * again and again. What a write's caller is told must match what the server then holds.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../src/backends/postgres/store.js";
import { systemClock } from "../src/clock.js";
import { CasWriter } from "../src/elector/cas.js";
import { isAmbiguous, LeaseStoreError } from "../src/errors.js";
import type { Stored } from "../src/lease.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { rejection } from "./support/rejection.js";
import { startTcpProxy } from "./support/tcp-proxy.js";

const url = process.env.POSTGRES_URL!;
const table = "connection_leases";
const admin = new pg.Pool({ connectionString: url, max: 4 });
const stores: PostgresStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await admin.end();
});

let apps = 0;
/** A store whose connections carry an application_name of their own, so the test can find and kill them. */
function store(options: { statementTimeoutMs?: number; poolSize?: number; port?: number } = {}) {
  const app = `conn-test-${apps++}`;
  const u = new URL(url);
  if (options.port !== undefined) u.port = String(options.port);
  u.searchParams.set("application_name", app);
  const s = new PostgresStore({
    connectionString: u.href,
    table,
    poolSize: options.poolSize ?? 4,
    ...(options.statementTimeoutMs === undefined ? {} : { statementTimeoutMs: options.statementTimeoutMs }),
  });
  stores.push(s);
  return { store: s, app };
}

async function backends(app: string): Promise<Array<{ pid: number; state: string; waiting: boolean }>> {
  const { rows } = await admin.query(
    "SELECT pid, state, wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE application_name = $1",
    [app],
  );
  return rows;
}

async function terminate(app: string, which: "all" | "waiting" = "all"): Promise<number> {
  const { rows } = await admin.query(
    `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 ${
      which === "waiting" ? "AND wait_event_type = 'Lock'" : ""
    }`,
    [app],
  );
  return rows[0].n;
}

/** Holds the row of `name` locked (SELECT ... FOR UPDATE in an open transaction) until `release`. */
async function lockRow(name: string): Promise<{ release: () => Promise<void> }> {
  const client = await admin.connect();
  await client.query("BEGIN");
  await client.query(`SELECT 1 FROM ${table} WHERE name = $1 FOR UPDATE`, [name]);
  return {
    release: async () => {
      await client.query("ROLLBACK");
      client.release();
    },
  };
}

const rowOf = async (name: string) =>
  (await admin.query(`SELECT rev::text AS rev, record->>'writeId' AS "writeId" FROM ${table} WHERE name = $1`, [name]))
    .rows[0];

describe("postgres: connections the server killed", () => {
  it("idle in the pool: noticed and replaced; the next reads and writes succeed", async () => {
    const { store: s, app } = store();
    const name = uniqueName();
    let held = await s.put(makeRecord(name), null);
    await Promise.all([s.get(name), s.get(name), s.get(name), s.get(name)]); // four connections open
    const before = (await backends(app)).map((b) => b.pid);
    expect(before.length).toBeGreaterThanOrEqual(2);
    expect(await terminate(app)).toBe(before.length);
    await expect.poll(async () => (await backends(app)).length).toBe(0);
    for (let i = 0; i < 5; i++) expect(await s.get(name)).toEqual(held);
    for (let i = 0; i < 5; i++) held = await s.put(makeRecord(name, { renewedAt: i }), held.revision);
    const after = (await backends(app)).map((b) => b.pid);
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((pid) => before.includes(pid))).toEqual([]);
  });

  it("in the middle of a write: ambiguous, and the write did not apply; the store goes on", async () => {
    const { store: s, app } = store();
    const name = uniqueName();
    const first = await s.put(makeRecord(name), null);
    const lock = await lockRow(name);
    const pending = rejection(s.put(makeRecord(name, { renewedAt: 7 }), first.revision));
    await expect.poll(async () => (await backends(app)).some((b) => b.waiting)).toBe(true);
    expect(await terminate(app, "waiting")).toBe(1);
    const error = await pending;
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((error as Error).message).toContain("connection lost");
    await lock.release();
    expect(await rowOf(name)).toEqual({ rev: "1", writeId: first.record.writeId });
    expect((await s.put(makeRecord(name, { renewedAt: 8 }), first.revision)).revision).toBe("2");
  });

  it("in the middle of a read: sent again on another connection, and answered", async () => {
    const { store: s, app } = store();
    const name = uniqueName();
    const written = await s.put(makeRecord(name), null);
    const client = await admin.connect();
    await client.query("BEGIN");
    await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    const read = s.get(name);
    await expect.poll(async () => (await backends(app)).filter((b) => b.waiting).length).toBe(1);
    const killed = (await backends(app)).find((b) => b.waiting)!.pid;
    expect(await terminate(app, "waiting")).toBe(1);
    // Sent again: it waits for the lock on a new connection.
    await expect.poll(async () => (await backends(app)).filter((b) => b.waiting && b.pid !== killed).length).toBe(1);
    await client.query("COMMIT");
    client.release();
    expect(await read).toEqual(written);
  });
});

describe("postgres: statements that do not finish", () => {
  it("statement_timeout cancels a write waiting on a lock: ambiguous (the store cannot tell a cancel from a late commit), not applied", async () => {
    const { store: s } = store({ statementTimeoutMs: 300 });
    const name = uniqueName();
    const first = await s.put(makeRecord(name), null);
    const lock = await lockRow(name);
    try {
      const error = await rejection(s.put(makeRecord(name, { renewedAt: 9 }), first.revision));
      expect(error).toBeInstanceOf(LeaseStoreError);
      expect(isAmbiguous(error)).toBe(true);
      expect((error as Error).message).toContain("SQLSTATE 57014");
    } finally {
      await lock.release();
    }
    expect(await rowOf(name)).toEqual({ rev: "1", writeId: first.record.writeId });
  });

  it("a network that stops answering: a write is given up as ambiguous, a read as a plain failure; new connections work after", async () => {
    const proxy = await startTcpProxy(Number(new URL(url).port));
    try {
      const { store: s } = store({ statementTimeoutMs: 300, port: proxy.port, poolSize: 2 });
      const name = uniqueName();
      const first = await s.put(makeRecord(name), null);
      proxy.freeze();
      const write = await rejection(s.put(makeRecord(name, { renewedAt: 1 }), first.revision));
      expect(write).toBeInstanceOf(LeaseStoreError);
      expect(isAmbiguous(write)).toBe(true);
      expect((write as Error).message).toContain("given up");
      const read = await rejection(s.get(name));
      expect(read).toBeInstanceOf(LeaseStoreError);
      expect(isAmbiguous(read)).toBe(false);
      proxy.thaw();
      expect((await s.get(name))?.record.writeId).toBe(first.record.writeId);
    } finally {
      await proxy.close();
    }
  });

  it("an aborted write is ambiguous once sent, and here it does land after the abort; one aborted before sending is not", async () => {
    const { store: s, app } = store();
    const name = uniqueName();
    const first = await s.put(makeRecord(name), null);
    const lock = await lockRow(name);
    const controller = new AbortController();
    const late = makeRecord(name, { renewedAt: 3 });
    const pending = rejection(s.put(late, first.revision, { signal: controller.signal }));
    await expect.poll(async () => (await backends(app)).some((b) => b.waiting)).toBe(true);
    controller.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    // Its connection was closed, but the server notices only when it answers: the statement still
    // waits for the lock, and commits once it frees. "Ambiguous" is the truth; the write path
    // recognises the late write by its writeId.
    await lock.release();
    await expect.poll(async () => (await rowOf(name))?.writeId).toBe(late.writeId);
    const early = await rejection(s.put(makeRecord(name), "2", { signal: AbortSignal.abort() }));
    expect(early).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(early)).toBe(false);
    expect(await rowOf(name)).toEqual({ rev: "2", writeId: late.writeId });
  });
});

describe("postgres: writers whose connections are killed again and again", () => {
  it("every write a writer was told applied is the one the server holds, none applied twice", async () => {
    const { store: s, app } = store({ poolSize: 6 });
    const writers = 6;
    const names = Array.from({ length: writers }, (_, i) => uniqueName(`killed-${i}`));
    let killing = true;
    let killed = 0;
    const killer = (async () => {
      while (killing) {
        await new Promise((r) => setTimeout(r, 40));
        killed += await terminate(app);
      }
    })();
    const outcomes = { applied: 0, settledApplied: 0, settledLost: 0, failed: 0 };
    const results = await Promise.all(
      names.map(async (name) => {
        const writer = new CasWriter({ store: s, name, clock: systemClock });
        let current: Stored | null = null;
        let applied = 0;
        let lastApplied = "";
        // 1.5 s of writes, longer if needed until this writer has two applied: on a busy
        // machine the killer can take every connection a writer opens for a while. Past 20 s it
        // stops regardless, and a writer that never applied must have left no row.
        const deadline = Date.now() + 1500;
        const giveUp = Date.now() + 20_000;
        while ((Date.now() < deadline || applied < 2) && Date.now() < giveUp) {
          const next = makeRecord(name, { renewedAt: applied });
          let outcome: Awaited<ReturnType<CasWriter["writeSettled"]>>;
          try {
            outcome = await writer.writeSettled(next, current?.revision ?? null);
          } catch {
            outcomes.failed++; // the settling read failed too: still unknown, read again
            current = await writer.read().catch(() => current);
            const mine = writer.recognise(current);
            if (mine) {
              applied++;
              lastApplied = mine.stored.record.writeId;
            }
            continue;
          }
          if (outcome.kind === "applied") {
            if (outcome.resent) outcomes.settledApplied++;
            else outcomes.applied++;
            applied++;
            lastApplied = outcome.stored.record.writeId;
            current = outcome.stored;
          } else {
            // Nobody else writes this lease: a lost write is one that did not apply.
            outcomes.settledLost++;
            expect(outcome.current?.record.writeId ?? null).toBe(current?.record.writeId ?? null);
            current = outcome.current ?? null;
          }
        }
        return { name, applied, lastApplied };
      }),
    );
    killing = false;
    await killer;
    expect(killed).toBeGreaterThan(0);
    expect(outcomes.applied).toBeGreaterThan(0);
    for (const r of results) {
      // rev counts every applied write (the first created rev 1): none lost, none applied twice.
      const expected = r.applied === 0 ? undefined : { rev: String(r.applied), writeId: r.lastApplied };
      expect(await rowOf(r.name)).toEqual(expected);
    }
  });
});
