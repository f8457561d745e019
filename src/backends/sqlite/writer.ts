/**
 * The main thread's side of the SQLite writer thread (./writer-thread.js): one thread per
 * process, shared by every SqliteStore, one connection there per database file. `write` resolves
 * once the transaction holding the write has committed, that is after its fsync, and never
 * blocks this thread: the event loop stays free while the disk syncs.
 *
 * Writes issued in the same turn of the event loop travel in one message. The thread holds the
 * process open only while writes or closes are outstanding (it is unref'd when idle). If it dies,
 * every write it had not answered is reported ambiguous (it may have committed), and the next
 * write starts a new thread. Until a thread has booted (tens of milliseconds, far more on a busy
 * machine), writes commit on the caller's thread instead, one at a time and just as durable: a
 * process's first writes do not wait for a thread to start.
 */
import { Worker } from "node:worker_threads";
import type { DatabaseSettings, WriteRequest, WriteResult } from "./commit.js";
import type { FromWriter, ToWriter } from "./writer-thread.js";

/** Writes waiting for the thread, at most: beyond it a write is refused at once (nothing written). */
export const MAX_WAITING_WRITES = 10_000;

type Pending = (result: WriteResult) => void;

class WriterThread {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly waiting = new Map<number, Pending>();
  private readonly closing = new Map<number, () => void>();
  private outbox = new Map<string, Extract<ToWriter, { type: "writes" }>>();
  private flushScheduled = false;
  private stopped: string | undefined;
  /** True once the thread can take writes. */
  ready = false;

  constructor(private readonly onStopped: () => void) {
    this.worker = startThread();
    this.worker.unref();
    this.worker.on("message", (message: FromWriter) => this.receive(message));
    this.worker.on("error", (error) => this.stop(`the SQLite writer thread failed: ${error.message}`));
    this.worker.on("exit", (code) => this.stop(`the SQLite writer thread exited (code ${code})`));
  }

  write(file: string, settings: DatabaseSettings, request: WriteRequest): Promise<WriteResult> {
    if (this.stopped !== undefined) return Promise.resolve(failed(this.stopped, false));
    if (this.waiting.size >= MAX_WAITING_WRITES) {
      return Promise.resolve(
        failed(`${MAX_WAITING_WRITES} writes are already waiting for the disk; this one was not sent`, false),
      );
    }
    const id = this.nextId++;
    let batch = this.outbox.get(file);
    if (!batch) {
      batch = { type: "writes", file, settings, writes: [] };
      this.outbox.set(file, batch);
    }
    batch.writes.push({ ...request, id });
    this.busy();
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(() => this.flush());
    }
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }

  /** Closes the thread's connection to `file` (after the writes already sent to it). */
  close(file: string): Promise<void> {
    if (this.stopped !== undefined) return Promise.resolve();
    this.flush();
    const id = this.nextId++;
    this.busy();
    this.worker.postMessage({ type: "close", file, id } satisfies ToWriter);
    return new Promise((resolve) => this.closing.set(id, resolve));
  }

  private flush(): void {
    this.flushScheduled = false;
    for (const batch of this.outbox.values()) this.worker.postMessage(batch satisfies ToWriter);
    this.outbox = new Map();
  }

  private receive(message: FromWriter): void {
    if (message.type === "ready") {
      this.ready = true;
      return;
    }
    if (message.type === "closed") {
      this.closing.get(message.id)?.();
      this.closing.delete(message.id);
    } else {
      for (const { id, result } of message.results) {
        this.waiting.get(id)?.(result);
        this.waiting.delete(id);
      }
    }
    if (this.waiting.size === 0 && this.closing.size === 0) this.worker.unref();
  }

  private busy(): void {
    this.worker.ref();
  }

  private stop(reason: string): void {
    if (this.stopped !== undefined) return;
    this.stopped = reason;
    this.onStopped();
    // Sent writes may have committed before the thread died.
    for (const resolve of this.waiting.values())
      resolve(failed(`${reason}: the write may or may not have applied`, true));
    this.waiting.clear();
    for (const resolve of this.closing.values()) resolve();
    this.closing.clear();
    void this.worker.terminate();
  }
}

function failed(message: string, ambiguous: boolean): WriteResult {
  return { kind: "failed", message, code: "", ambiguous };
}

/** The thread runs ./writer-thread.js, plain JavaScript beside this module in the sources and the package alike. */
function startThread(): Worker {
  return new Worker(new URL("./writer-thread.js", import.meta.url));
}

let shared: WriterThread | undefined;
/** Open stores per file: the thread keeps a file's connection until the last of them closes. */
const users = new Map<string, number>();

/** A handle on the process's writer thread for one store of `file`; `release` once, on close. */
export function attachWriter(
  file: string,
  settings: DatabaseSettings,
  /** Commits one write on the caller's thread, until the writer thread is ready. */
  commitHere: (request: WriteRequest) => WriteResult,
) {
  users.set(file, (users.get(file) ?? 0) + 1);
  // Started now, so that the first write does not wait for a thread to boot; again after one died.
  const thread = () =>
    (shared ??= new WriterThread(() => {
      shared = undefined;
    }));
  thread();
  let released = false;
  return {
    /** Resolves with the write's outcome once its transaction committed (or failed). */
    write(request: WriteRequest): Promise<WriteResult> {
      if (released) return Promise.resolve(failed("the store is closed", false));
      const writer = thread();
      return writer.ready ? writer.write(file, settings, request) : Promise.resolve(commitHere(request));
    },
    async release(): Promise<void> {
      if (released) return;
      released = true;
      const left = (users.get(file) ?? 1) - 1;
      if (left > 0) {
        users.set(file, left);
        return;
      }
      users.delete(file);
      await shared?.close(file);
    },
  };
}
