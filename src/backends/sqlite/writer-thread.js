// @ts-check
/**
 * The SQLite writer thread (a `node:worker_threads` Worker started by ./writer.ts): every
 * write of every SqliteStore in this process, so that a commit's fsync never stalls the event
 * loop that parses the next requests. JavaScript for the reason ./commit.js gives.
 *
 * Group commit: the thread commits whatever writes are queued for a file in one transaction
 * (./commit.js), with one fsync. While that commit runs, new writes queue up in the
 * thread's message port; as soon as it ends they are drained (`receiveMessageOnPort`) and
 * committed together, and so on. Nothing waits on a timer: a lone write is committed at once, and
 * under load each fsync covers everything that arrived during the previous one. Each write is
 * answered only after the commit that contains it returned, that is after its fsync.
 */
import { isMainThread, parentPort, receiveMessageOnPort } from "node:worker_threads";
import { openDatabase, prepareStatements } from "./commit.js";

/**
 * Main thread to writer. `file` keys one connection; its settings come with every batch.
 * @typedef {{ type: "writes", file: string, settings: import("./commit.js").DatabaseSettings,
 *   writes: Array<import("./commit.js").WriteRequest & { id: number }> }
 *   | { type: "close", file: string, id: number }} ToWriter
 */

/**
 * Writer to main thread: that it is ready for writes, the outcome of each write (by id), or that
 * a file's connection closed.
 * @typedef {{ type: "ready" }
 *   | { type: "results", results: Array<{ id: number, result: import("./commit.js").WriteResult }> }
 *   | { type: "closed", id: number }} FromWriter
 */

/** At most this many writes in one transaction: bounds a commit's duration under a flood. */
export const MAX_BATCH = 1000;

if (!isMainThread && parentPort) {
  const port = parentPort;
  const { default: Database } = await import("better-sqlite3");
  port.postMessage(/** @type {FromWriter} */ ({ type: "ready" }));
  /** @type {Map<string, import("./commit.js").Statements & { db: import("better-sqlite3").Database }>} */
  const connections = new Map();
  /** @type {Map<string, { settings: import("./commit.js").DatabaseSettings, writes: Array<import("./commit.js").WriteRequest & { id: number }> }>} */
  const queues = new Map();
  /** @type {Array<{ file: string, id: number }>} */
  const closes = [];

  /** @param {ToWriter} message */
  const take = (message) => {
    if (message.type === "close") {
      closes.push(message);
      return;
    }
    const queue = queues.get(message.file);
    if (queue) queue.writes.push(...message.writes);
    else queues.set(message.file, { settings: message.settings, writes: [...message.writes] });
  };

  /**
   * @param {string} file
   * @param {import("./commit.js").DatabaseSettings} settings
   */
  const connection = (file, settings) => {
    let open = connections.get(file);
    if (!open) {
      const db = openDatabase(Database, settings, true);
      open = { db, ...prepareStatements(db, settings.table) };
      connections.set(file, open);
    }
    return open;
  };

  const commitQueued = () => {
    for (const [file, queue] of queues) {
      const batch = queue.writes.splice(0, MAX_BATCH);
      if (queue.writes.length === 0) queues.delete(file);
      /** @type {import("./commit.js").WriteResult[]} */
      let results;
      try {
        results = connection(file, queue.settings).commit(batch);
      } catch (error) {
        // The connection could not be opened: nothing was written.
        const code = String(/** @type {{ code?: unknown }} */ (error).code ?? "");
        const message = /** @type {Error} */ (error).message;
        results = batch.map(() => ({ kind: /** @type {const} */ ("failed"), message, code, ambiguous: false }));
      }
      /** @type {FromWriter} */
      const reply = {
        type: "results",
        // One result per write, in order (commit returns exactly that).
        results: batch.map((w, i) => ({
          id: w.id,
          result: /** @type {import("./commit.js").WriteResult} */ (results[i]),
        })),
      };
      port.postMessage(reply);
    }
  };

  const closeRequested = () => {
    for (const { file, id } of closes.splice(0)) {
      connections.get(file)?.db.close();
      connections.delete(file);
      port.postMessage(/** @type {FromWriter} */ ({ type: "closed", id }));
    }
  };

  port.on("message", (/** @type {ToWriter} */ first) => {
    take(first);
    // Drain what queued up during the last commit, commit it together, and again until idle.
    for (;;) {
      for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port)) take(next.message);
      if (queues.size === 0) break;
      commitQueued();
    }
    closeRequested();
  });
}
