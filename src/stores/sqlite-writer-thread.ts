/**
 * The SQLite writer thread (a `node:worker_threads` Worker started by ./sqlite-writer.ts): every
 * write of every SqliteStore in this process, so that a commit's fsync never stalls the event
 * loop that parses the next requests.
 *
 * Group commit: the thread commits whatever writes are queued for a file in one transaction
 * (./sqlite-commit.ts), with one fsync. While that commit runs, new writes queue up in the
 * thread's message port; as soon as it ends they are drained (`receiveMessageOnPort`) and
 * committed together, and so on. Nothing waits on a timer: a lone write is committed at once, and
 * under load each fsync covers everything that arrived during the previous one. Each write is
 * answered only after the commit that contains it returned, that is after its fsync.
 */
import { isMainThread, parentPort, receiveMessageOnPort } from "node:worker_threads";
import type BetterSqlite3 from "better-sqlite3";
import {
  type DatabaseSettings,
  openDatabase,
  prepareStatements,
  type Statements,
  type WriteRequest,
  type WriteResult,
} from "./sqlite-commit.js";

/** Main thread to writer. `file` keys one connection; its settings come with every batch. */
export type ToWriter =
  | { type: "writes"; file: string; settings: DatabaseSettings; writes: Array<WriteRequest & { id: number }> }
  | { type: "close"; file: string; id: number };

/** Writer to main thread: the outcome of each write (by id), or that a file's connection closed. */
export type FromWriter =
  | { type: "results"; results: Array<{ id: number; result: WriteResult }> }
  | { type: "closed"; id: number };

/** At most this many writes in one transaction: bounds a commit's duration under a flood. */
export const MAX_BATCH = 1000;

if (!isMainThread && parentPort) {
  const port = parentPort;
  const { default: Database } = (await import("better-sqlite3")) as { default: typeof BetterSqlite3 };
  const connections = new Map<string, { db: BetterSqlite3.Database; statements: Statements }>();
  const queues = new Map<string, { settings: DatabaseSettings; writes: Array<WriteRequest & { id: number }> }>();
  const closes: Array<{ file: string; id: number }> = [];

  const take = (message: ToWriter) => {
    if (message.type === "close") {
      closes.push(message);
      return;
    }
    const queue = queues.get(message.file);
    if (queue) queue.writes.push(...message.writes);
    else queues.set(message.file, { settings: message.settings, writes: [...message.writes] });
  };

  const connection = (file: string, settings: DatabaseSettings) => {
    let open = connections.get(file);
    if (!open) {
      const db = openDatabase(Database, settings, true);
      open = { db, statements: prepareStatements(db, settings.table) };
      connections.set(file, open);
    }
    return open;
  };

  const commitQueued = () => {
    for (const [file, queue] of queues) {
      const batch = queue.writes.splice(0, MAX_BATCH);
      if (queue.writes.length === 0) queues.delete(file);
      let results: WriteResult[];
      try {
        results = connection(file, queue.settings).statements.commit(batch);
      } catch (error) {
        // The connection could not be opened: nothing was written.
        const code = String((error as { code?: unknown }).code ?? "");
        const failed: WriteResult = { kind: "failed", message: (error as Error).message, code, ambiguous: false };
        results = batch.map(() => failed);
      }
      const reply: FromWriter = { type: "results", results: batch.map((w, i) => ({ id: w.id, result: results[i]! })) };
      port.postMessage(reply);
    }
  };

  const closeRequested = () => {
    for (const { file, id } of closes.splice(0)) {
      connections.get(file)?.db.close();
      connections.delete(file);
      port.postMessage({ type: "closed", id } satisfies FromWriter);
    }
  };

  port.on("message", (first: ToWriter) => {
    take(first);
    // Drain what queued up during the last commit, commit it together, and again until idle.
    for (;;) {
      for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port))
        take(next.message as ToWriter);
      if (queues.size === 0) break;
      commitQueued();
    }
    closeRequested();
  });
}
