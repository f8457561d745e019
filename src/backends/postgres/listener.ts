/**
 * The PostgreSQL store's push (docs/postgres.md "Push"): one connection per store LISTENs on the
 * leasehold channel while any lease is watched, and every write's NOTIFY (sent by the write's own
 * statement, src/backends/postgres/store.ts) names the table, the lease and its new revision. A
 * notification is only a hint: the listener reads the lease (one read per notification per
 * watched name, shared by every watcher of it in this process) and hands the record on, so a
 * payload someone else sent on the channel can cost a read, never a wrong record.
 *
 * A lost connection (an error, the server closing it, or a check query that does not answer within
 * `checkMs`, which a half-open TCP connection never would) is replaced at once; while no
 * connection can be made, every watched lease is read every `pollMs` (in batches), and the
 * listener tries again after a pause that doubles per failure up to 30 s. Once it LISTENs again,
 * it reads every watched lease once, since notifications sent meanwhile were lost. Watchers see
 * one stream throughout.
 *
 * Revisions are the store's counters, which only grow (rows are never deleted), so a record older
 * than one already delivered is dropped: a read that was overtaken never goes backwards.
 * Runtime-neutral (node-postgres does the I/O).
 */
import type { PoolClient } from "pg";
import type { Stored } from "../../lease.js";

export interface ListenerOptions {
  /** One connection of the store's pool: the listener keeps it while any lease is watched, then destroys it. */
  connect(): Promise<PoolClient>;
  /** The current records of `names`, as strong as `get` (one batch). */
  read(names: string[]): Promise<Array<Stored | null>>;
  channel: string;
  /** The table's identity in payloads: only notifications naming it are this store's. */
  table: string;
  /** While the connection is lost, how often watched leases are read (ms). */
  pollMs: number;
  /** How often the connection is checked with `SELECT 1` (ms), which must answer within as long. */
  checkMs: number;
}

type Deliver = (stored: Stored | null) => void;

interface Feed {
  consumers: Set<Deliver>;
  /** The newest record delivered (undefined: none yet). */
  last: Stored | null | undefined;
  reading: boolean;
  /** A notification arrived while reading: read once more. */
  again: boolean;
}

/** Names per read while polling. */
const POLL_BATCH = 500;
/** The longest pause between attempts to connect again. */
const MAX_RECONNECT_MS = 30_000;

/** Whether `next` is newer than `last` by the store's growing revisions (null: no record). */
export function isNewer(next: Stored | null, last: Stored | null | undefined): boolean {
  if (last === undefined) return true;
  if (next === null) return false; // rows are never deleted: a missing row is a read that was overtaken
  return last === null || Number(next.revision) > Number(last.revision);
}

/** The payload every write notifies: table, lease, new revision. At most a few hundred bytes (NOTIFY allows 8000). */
export function notifyPayload(table: string, name: string, revision: number): string {
  return JSON.stringify({ t: table, n: name, r: revision });
}

export class PostgresListener {
  private readonly feeds = new Map<string, Feed>();
  /** Resolves once the current run's first attempt to LISTEN has settled (up or down). */
  private ready: Promise<void> = Promise.resolve();
  private running: Promise<void> | undefined;
  /** Called by close() and when the last watcher leaves: ends sleeps and the connection's wait. */
  private readonly alarm = new Set<() => void>();
  private closed = false;
  /** True while a connection LISTENs. */
  listening = false;
  /** Times the listener connected and LISTENed (tests and benchmarks watch it). */
  connections = 0;

  constructor(private readonly o: ListenerOptions) {}

  /**
   * Delivers every newer record of `name` to `deliver` until the returned function is called.
   * Resolves once the listener LISTENs (or has failed to, and polls), so a read made after it
   * misses no later change: a notification or a poll brings it.
   */
  async subscribe(name: string, deliver: Deliver): Promise<() => void> {
    let feed = this.feeds.get(name);
    if (!feed) {
      feed = { consumers: new Set(), last: undefined, reading: false, again: false };
      this.feeds.set(name, feed);
    }
    feed.consumers.add(deliver);
    const own = feed;
    const unsubscribe = () => {
      own.consumers.delete(deliver);
      if (own.consumers.size === 0 && this.feeds.get(name) === own) this.feeds.delete(name);
      if (this.feeds.size === 0) this.fire();
    };
    if (!this.running && !this.closed) this.start();
    await this.ready;
    return unsubscribe;
  }

  /** A record a watcher read itself: later notifications at or below it cost no read. */
  seen(name: string, stored: Stored | null): void {
    const feed = this.feeds.get(name);
    if (feed && isNewer(stored, feed.last)) feed.last = stored;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.fire();
    await this.running;
  }

  private start(): void {
    let settled!: () => void;
    this.ready = new Promise((resolve) => {
      settled = resolve;
    });
    this.running = this.run(settled).finally(() => {
      this.running = undefined;
      this.listening = false;
      settled();
      // A watcher that came while the run was ending: serve it (it reads every lease once it LISTENs).
      if (!this.closed && this.feeds.size > 0) this.start();
    });
  }

  /** Connects and LISTENs, follows until the connection is lost, polls while it is down; until nothing is watched. */
  private async run(settled: () => void): Promise<void> {
    let failures = 0;
    let retryAt = 0;
    while (!this.closed && this.feeds.size > 0) {
      if (Date.now() >= retryAt) {
        const began = Date.now();
        const listened = await this.follow(settled);
        if (this.closed || this.feeds.size === 0) return;
        // A connection that listened a while and was then lost is replaced at once; one that
        // could not connect, or was lost at once again, waits a pause that doubles.
        if (listened && Date.now() - began >= this.o.pollMs) {
          failures = 0;
          continue;
        }
        failures++;
        retryAt = Date.now() + Math.min(MAX_RECONNECT_MS, this.o.pollMs * 2 ** Math.min(failures - 1, 16));
        settled(); // subscribers go on: the polls below cover them
      }
      await this.sleep(this.o.pollMs);
      if (this.closed || this.feeds.size === 0) return;
      await this.pollAll();
    }
  }

  /**
   * One connection's life: LISTEN, read every watched lease once (changes made while it was not
   * listening), then hand on notifications until it is lost or no longer needed. True if it listened.
   */
  private async follow(settled: () => void): Promise<boolean> {
    let client: PoolClient;
    try {
      client = await this.o.connect();
    } catch {
      return false;
    }
    let lost!: () => void;
    const gone = new Promise<"lost">((resolve) => {
      lost = () => resolve("lost");
    });
    const onNotification = (message: { channel: string; payload?: string | undefined }) => {
      if (message.channel === this.o.channel) this.notified(message.payload);
    };
    client.on("error", lost);
    client.on("end", lost);
    client.on("notification", onNotification);
    this.alarm.add(lost);
    let listened = false;
    try {
      await client.query(`LISTEN "${this.o.channel}"`);
      listened = true;
      this.listening = true;
      this.connections++;
      settled();
      this.refreshAll();
      while (!this.closed && this.feeds.size > 0) {
        if ((await Promise.race([gone, this.check(client)])) === "lost") break;
        if ((await Promise.race([gone, this.sleep(this.o.checkMs)])) === "lost") break;
      }
    } catch {
      // LISTEN refused or the connection failed: polled until it connects again
    } finally {
      this.listening = false;
      this.alarm.delete(lost);
      client.off("notification", onNotification);
      client.off("end", lost);
      // The error listener stays: an error after release must not go unheard. The connection is
      // destroyed, never returned to the pool LISTENing.
      client.release(true);
    }
    return listened;
  }

  /** `SELECT 1` answered within checkMs: "ok"; anything else means the connection is gone. */
  private async check(client: PoolClient): Promise<"ok" | "lost"> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"lost">((resolve) => {
      timer = setTimeout(() => resolve("lost"), this.o.checkMs);
    });
    try {
      return await Promise.race([client.query("SELECT 1").then(() => "ok" as const), late]);
    } catch {
      return "lost";
    } finally {
      clearTimeout(timer);
    }
  }

  private notified(payload: string | undefined): void {
    let note: { t?: unknown; n?: unknown; r?: unknown } | null;
    try {
      note = JSON.parse(payload ?? "") as typeof note;
    } catch {
      return;
    }
    if (note === null || typeof note !== "object" || note.t !== this.o.table || typeof note.n !== "string") return;
    const feed = this.feeds.get(note.n);
    if (!feed) return;
    const last = feed.last;
    if (typeof note.r === "number" && last != null && note.r <= Number(last.revision)) return; // delivered already
    void this.refresh(note.n, feed);
  }

  /** Reads one watched lease and delivers it; one read at a time per lease, once more if notified meanwhile. */
  private async refresh(name: string, feed: Feed): Promise<void> {
    if (feed.reading) {
      feed.again = true;
      return;
    }
    feed.reading = true;
    try {
      do {
        feed.again = false;
        const [stored] = await this.o.read([name]);
        this.offer(feed, stored ?? null);
      } while (feed.again && this.feeds.get(name) === feed);
    } catch {
      // Read again after a pause while listening (while not, the polls read it).
      if (this.listening) {
        void this.sleep(this.o.pollMs).then(() => {
          if (this.listening && this.feeds.get(name) === feed) void this.refresh(name, feed);
        });
      }
    } finally {
      feed.reading = false;
    }
  }

  private refreshAll(): void {
    for (const [name, feed] of [...this.feeds]) void this.refresh(name, feed);
  }

  /** One round over every watched lease, in batches (while the connection is down). */
  private async pollAll(): Promise<void> {
    const names = [...this.feeds.keys()];
    for (let i = 0; i < names.length && !this.closed; i += POLL_BATCH) {
      const batch = names.slice(i, i + POLL_BATCH);
      let records: Array<Stored | null>;
      try {
        records = await this.o.read(batch);
      } catch {
        return; // the database is unreachable too: the next round tries again
      }
      for (const [j, name] of batch.entries()) {
        const feed = this.feeds.get(name);
        if (feed) this.offer(feed, records[j] ?? null);
      }
    }
  }

  private offer(feed: Feed, stored: Stored | null): void {
    if (!isNewer(stored, feed.last)) return;
    feed.last = stored;
    for (const deliver of [...feed.consumers]) deliver(stored);
  }

  private fire(): void {
    for (const wake of [...this.alarm]) wake();
  }

  /** Sleeps `ms`, cut short by close() or the last watcher leaving. */
  private sleep(ms: number): Promise<"slept"> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.alarm.delete(done);
        resolve("slept");
      };
      const timer = setTimeout(done, ms);
      this.alarm.add(done);
    });
  }
}
