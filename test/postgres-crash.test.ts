/**
 * Durable before acknowledged, on PostgreSQL: a server of this file's own (its own process group)
 * is SIGKILLed whole, postmaster and backends at once, while eight writers move their leases to the
 * next term as fast as it commits; after WAL recovery every lease holds at least the last term
 * its writer was told was written (and at most the last it tried). Twice. And a server whose
 * commits are not durable (fsync off) is refused before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../src/backends/postgres/store.js";
import { isAmbiguous, StoreContractError } from "../src/errors.js";
import type { Stored } from "../src/lease.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { type RunningPostgres, startPostgres } from "./support/postgres-server.js";
import { rejection } from "./support/rejection.js";

let server: RunningPostgres;
beforeAll(async () => {
  // After a crash PostgreSQL syncs its data folder before recovery: one syncfs of the file system is
  // seconds faster here than an fsync per file (the default), and changes nothing about what survives.
  server = await startPostgres({ crashable: true, settings: { recovery_init_sync_method: "syncfs" } });
});
afterAll(async () => {
  await server?.stop();
});

const WRITERS = 8;

interface Writer {
  name: string;
  /** The highest term a write was acknowledged for. */
  acknowledged: number;
  /** The highest term a write was sent for. */
  tried: number;
}

describe("postgres: SIGKILL of the server under load", () => {
  it("no acknowledged term is lost after the restart (two crashes)", async () => {
    const writers: Writer[] = Array.from({ length: WRITERS }, (_, i) => ({
      name: uniqueName(`crash-${i}`),
      acknowledged: 0,
      tried: 0,
    }));
    for (let round = 0; round < 2; round++) {
      const store = new PostgresStore({ connectionString: server.url, poolSize: WRITERS, statementTimeoutMs: 2000 });
      let running = true;
      const acknowledgedBefore = writers.reduce((n, w) => n + w.acknowledged, 0);
      const firstReadFailures: unknown[] = [];
      const certain: string[] = [];
      // Writes acknowledged in this round: the terms carry over from the last, so the count that says
      // the writers are under way must too (counting terms, round 2 could kill before it wrote).
      const thisRound = new Map<Writer, number>(writers.map((w) => [w, 0]));
      const load = writers.map(async (w) => {
        // A first read that fails ends this writer (and the wait below says so), never unhandled.
        let current: Stored | null;
        try {
          current = await store.get(w.name);
        } catch (error) {
          firstReadFailures.push(error);
          return;
        }
        while (running) {
          const term = (current?.record.term ?? 0) + 1;
          w.tried = Math.max(w.tried, term);
          try {
            current = await store.put(makeRecord(w.name, { holder: `h${term % 2}`, term }), current?.revision ?? null);
            w.acknowledged = Math.max(w.acknowledged, term);
            thisRound.set(w, thisRound.get(w)! + 1);
          } catch (error) {
            if (!isAmbiguous(error)) certain.push(String(error));
            return; // the server is gone: this writer stops
          }
        }
      });
      // Under load: wait until every writer had writes acknowledged, then kill the server mid-flight.
      // A failed first read shows as the value polled, with its error.
      const progress = () =>
        firstReadFailures.length > 0
          ? `round ${round}: first reads failed: ${firstReadFailures.map(String).join("; ")}`
          : writers.every((w) => thisRound.get(w)! >= 5);
      await expect.poll(progress, { timeout: 20_000 }).toBe(true);
      await server.kill9();
      await Promise.all(load);
      running = false;
      await store.close();
      // It died under load, and each writer's next write failed: "ambiguous" if it was in flight, or
      // certainly not written if its connection was found dead before sending (a starved client
      // may read the last answers, then the close: those writes were acknowledged). Which of the two
      // a writer meets is timing; a write refused for any other reason would be a bug.
      for (const message of certain) expect(message).toMatch(/\(no connection\)|no usable connection/);
      expect(writers.reduce((n, w) => n + w.acknowledged, 0)).toBeGreaterThan(acknowledgedBefore);

      await server.restart();
      const reader = new PostgresStore({ connectionString: server.url, poolSize: 2 });
      for (const w of writers) {
        const term = (await reader.get(w.name))?.record.term ?? 0;
        expect(term, w.name).toBeGreaterThanOrEqual(w.acknowledged);
        expect(term, w.name).toBeLessThanOrEqual(w.tried);
      }
      await reader.close();
    }
  });
});

describe("postgres: a server whose commits are not durable", () => {
  it("fsync off is refused before anything is written; on again, the store works", async () => {
    const admin = new PostgresStore({ connectionString: server.url, poolSize: 1 });
    const name = uniqueName();
    // The test's role is the cluster's superuser: it can change fsync with a reload, no restart.
    const pg = (await import("pg")).default;
    const client = new pg.Client(server.url);
    await client.connect();
    try {
      await client.query("ALTER SYSTEM SET fsync = off");
      await client.query("SELECT pg_reload_conf()");
      await expect.poll(async () => (await client.query("SHOW fsync")).rows[0].fsync).toBe("off");
      const store = new PostgresStore({ connectionString: server.url, poolSize: 1 });
      const error = await rejection(store.put(makeRecord(name), null));
      expect(error).toBeInstanceOf(StoreContractError);
      expect((error as Error).message).toContain('fsync is "off"');
      await store.close();
    } finally {
      await client.query("ALTER SYSTEM RESET fsync");
      await client.query("SELECT pg_reload_conf()");
    }
    await expect.poll(async () => (await client.query("SHOW fsync")).rows[0].fsync).toBe("on");
    await client.end();
    expect(await admin.get(name)).toBeNull();
    await admin.put(makeRecord(name), null);
    await admin.close();
  });
});
