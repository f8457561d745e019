/**
 * Push for SQLite (the store's `watch`): every process on the host that shares the file hears a
 * change within `watchPollMs`, without reading any lease while nothing changes.
 *
 * SQLite has no notification, but it has a cheap change counter: `PRAGMA data_version` on a
 * connection changes whenever *another* connection commits (this process's writer thread, or any
 * other process). Reading it costs no disk read in WAL mode (it comes from the shared-memory index),
 * so one store ticks it every `watchPollMs` while any lease is watched, and only when it moved reads
 * the watched leases (the store's one `SELECT ... IN`) and hands on those whose revision changed.
 * Writes made on the reading connection itself (`:memory:`, the inline baseline) do not move its
 * counter: the store pokes the watch after each of its own writes instead.
 *
 * One ticker per store, whatever the number of watchers; it runs only while a lease is watched, and
 * it leaves at least nine tenths of the thread to the rest: a tick whose reads took d ms is followed
 * by the next after at least 9d ms (10,000 watched leases while others commit: a tick every few
 * hundred ms rather than every 25).
 * Node only (the SQLite backend is).
 */
import type { Stored } from "../../lease.js";

/** The next tick waits at least this many times what the last tick's reads took. */
const SHARE = 9;

export interface CommitWatchSource {
  /** The reading connection's `PRAGMA data_version`. */
  dataVersion(): number;
  /** One lease as `get` reads it (a corrupt record throws). */
  read(name: string): Stored | null;
  /**
   * The leases `names` as they stand (one snapshot): `null` where none exists, `undefined` where
   * the record cannot be read (it is not handed on: a watcher's own read reports it).
   */
  readMany(names: readonly string[]): Array<Stored | null | undefined>;
}

type Listener = (stored: Stored | null) => void;

interface Watched {
  listeners: Set<Listener>;
  /** The revision last handed on (`null`: no record), undefined before the first read. */
  revision: string | null | undefined;
}

export class CommitWatch {
  private readonly watched = new Map<string, Watched>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private version: number | undefined;
  private poked = false;

  constructor(
    private readonly source: CommitWatchSource,
    private readonly pollMs: number,
  ) {}

  /** Yields `name`'s record now and each time its revision changes, until `signal` aborts. */
  async *watch(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    // Only the newest record matters to a follower: one slot, which a later record replaces.
    let latest: { stored: Stored | null } | undefined;
    let wake: (() => void) | undefined;
    const listener: Listener = (stored) => {
      latest = { stored };
      wake?.();
    };
    const onAbort = () => wake?.();
    signal.addEventListener("abort", onAbort, { once: true });
    const entry = this.watched.get(name) ?? { listeners: new Set<Listener>(), revision: undefined };
    this.watched.set(name, entry);
    entry.listeners.add(listener);
    try {
      this.start();
      // The first record is read for this watcher alone: another may have been handed it already.
      // The first watcher's read is what the ticks compare with, so it is not handed on again.
      const first = this.source.read(name);
      if (entry.revision === undefined) entry.revision = first?.revision ?? null;
      yield first;
      while (!signal.aborted) {
        if (latest !== undefined) {
          const { stored } = latest;
          latest = undefined;
          yield stored;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      entry.listeners.delete(listener);
      if (entry.listeners.size === 0 && this.watched.get(name) === entry) this.watched.delete(name);
      if (this.watched.size === 0) this.stop();
    }
  }

  /** A write on the reading connection itself: look at the next tick even if the counter did not move. */
  poke(): void {
    this.poked = true;
  }

  /** Ends every tick; watchers stay until their signals abort. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.version = undefined;
  }

  private start(): void {
    if (this.timer !== undefined) return;
    this.version = this.source.dataVersion();
    this.timer = setTimeout(() => this.tick(), this.pollMs);
  }

  private tick(): void {
    this.timer = undefined;
    if (this.watched.size === 0) return;
    let spentMs = 0;
    try {
      const version = this.source.dataVersion();
      if (version !== this.version || this.poked) {
        this.version = version;
        this.poked = false;
        const started = performance.now();
        this.deliver();
        spentMs = performance.now() - started;
      }
    } catch {
      // A busy or failed read: the next tick reads again (the counter is read before, so it still differs).
      this.version = undefined;
    }
    // The counter cannot say which lease changed, so a commit costs a read of every watched lease:
    // with many watched while others commit all the time, re-reads would take the whole thread.
    // The next tick waits at least nine times what this one's reads took (at most a tenth of the
    // thread), however short watchPollMs is.
    if (this.watched.size > 0) this.timer = setTimeout(() => this.tick(), Math.max(this.pollMs, spentMs * SHARE));
  }

  private deliver(): void {
    const names = [...this.watched.keys()];
    const records = this.source.readMany(names);
    names.forEach((name, i) => {
      const entry = this.watched.get(name);
      const stored = records[i];
      if (!entry || stored === undefined) return;
      const revision = stored?.revision ?? null;
      if (entry.revision === revision) return;
      entry.revision = revision;
      for (const listener of entry.listeners) listener(stored);
    });
  }
}
