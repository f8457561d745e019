/**
 * The sharded elector's calls to its group's records (docs/sharding.md), and the bucket records as
 * it last learnt them. Every write is a compare-and-swap on a revision it read, through the one
 * write path (`CasWriter`, one per record, docs/design.md §4). At most one call per record is in
 * flight (`exclusive`), and after a write whose answer did not show the current record, that record
 * is left alone for a retry delay.
 *
 * The writes that give a bucket away or mark it (transfer, release, stamp, create) and the session
 * fence are here; the elector keeps the ones that start or end its own work (claim, hand-off).
 *
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter, type WriteOutcome } from "../elector/cas.js";
import type { Emitter } from "../elector/events.js";
import type { SessionCore } from "../elector/session-core.js";
import { LeaseCorruptError, LeaseStoreError } from "../errors.js";
import type { LeaseRecord, LeaseStore, Stored } from "../lease.js";
import { readable } from "../listing.js";
import type { BucketInfo, GroupConfig, MemberInfo } from "./layout.js";
import {
  bucketName,
  configName,
  configRecord,
  decodeBucket,
  decodeConfig,
  decodeMember,
  legacyConfigName,
  legacyGroupRefusal,
} from "./layout.js";
import { fenceRecord, freeBucketRecord, releaseRecord, stampRecord, transferRecord } from "./next-records.js";
import type { ShardedElectorEvents } from "./sharded-types.js";
import type { Tenures } from "./tenures.js";

/** The reason for aborting internal timers: a plain value, so no DOMException (and stack) is built each time. */
const DONE = "done";

export interface KnownBucket {
  info: BucketInfo;
  /** Monotonic time we learnt it (from our own write's answer, or when a listing was sent). */
  learnedAt: number;
  /** One of our writes produced it (recognised by its writeId). */
  ours: boolean;
}

export interface GroupRecordSettings {
  store: LeaseStore;
  group: string;
  identity: string;
  leaseMs: number;
  callTimeoutMs: number;
  clock: Clock;
  session: SessionCore;
  events: Emitter<ShardedElectorEvents>;
  /** A bucket given away is written only once its last tenure's work is quiet. */
  tenures: Tenures;
  retryDelay: () => number;
  /** After every call: the elector plans again. */
  onCallDone: () => void;
  /** A bucket write's outcome is unknown: the elector lists the bucket records at its next poll. */
  onUnknownOutcome: () => void;
}

export class GroupRecords {
  private readonly writers = new Map<string, CasWriter>();
  private readonly known = new Map<number, KnownBucket>();
  /** One store call per record at a time, by record name. */
  private readonly busy = new Map<string, Promise<void>>();
  /** After a write failed without telling us the current record: no new write to it before then. */
  private readonly backoff = new Map<string, number>();

  constructor(private readonly s: GroupRecordSettings) {}

  /** The newest record we know of each bucket, by index. */
  get buckets(): ReadonlyMap<number, KnownBucket> {
    return this.known;
  }

  // ---- writes: each one compare-and-swap on a revision we read ----

  transfer(current: BucketInfo, to: string, toSession: number, config: GroupConfig): void {
    const name = bucketName(this.s.group, current.index);
    this.exclusive(name, async () => {
      await this.s.tenures.quiet(current.index);
      if (this.s.session.validTerm() === undefined) return; // our session ended: the bucket is free anyway
      const wall = this.s.clock.wallNow();
      const next = transferRecord(current, { holder: to, session: toSession, epoch: config.epoch }, wall);
      const outcome = await this.write(name, next, current.stored);
      if (outcome.kind === "applied") {
        this.learnBucket(outcome.stored, this.s.clock.now());
        this.s.events.emit("handoff", { bucket: current.index, to, term: next.term });
      }
    }).catch((error: unknown) => this.s.events.emit("error", { error, during: "handoff" }));
  }

  release(current: BucketInfo, config: GroupConfig): void {
    const name = bucketName(this.s.group, current.index);
    this.exclusive(name, async () => {
      if (current.holder === this.s.identity) await this.s.tenures.quiet(current.index);
      if (this.s.session.validTerm() === undefined) return;
      const next = releaseRecord(current, config.epoch, this.s.clock.wallNow());
      const outcome = await this.write(name, next, current.stored);
      if (outcome.kind === "applied") this.learnBucket(outcome.stored, this.s.clock.now());
    }).catch((error: unknown) => this.s.events.emit("error", { error, during: "release" }));
  }

  /** Marks a record of an older epoch with ours, so no member still on the old count can take it. */
  stamp(current: BucketInfo, config: GroupConfig): void {
    const name = bucketName(this.s.group, current.index);
    this.exclusive(name, async () => {
      const outcome = await this.write(name, stampRecord(current, config.epoch), current.stored);
      if (outcome.kind === "applied") this.learnBucket(outcome.stored, this.s.clock.now());
    }).catch((error: unknown) => this.s.events.emit("error", { error, during: "stamp" }));
  }

  create(index: number, config: GroupConfig): void {
    const name = bucketName(this.s.group, index);
    this.exclusive(name, async () => {
      const next = freeBucketRecord(this.s.group, index, config.epoch, this.s.leaseMs, this.s.clock.wallNow());
      const outcome = await this.write(name, next, null);
      if (outcome.kind === "applied") this.learnBucket(outcome.stored, this.s.clock.now());
    }).catch((error: unknown) => this.s.events.emit("error", { error, during: "stamp" }));
  }

  /** Ends an expired member's session at exactly the revision we watched expire. */
  fence(m: MemberInfo, learn: (info: MemberInfo) => void): void {
    const name = m.stored.record.name;
    this.exclusive(name, async () => {
      const next = fenceRecord(m, this.s.identity, this.s.clock.wallNow());
      const outcome = await this.writerFor(name).write(next, m.stored.revision, { timeoutMs: this.s.callTimeoutMs });
      this.backOffAfter(name, outcome);
      const stored = outcome.kind === "applied" ? outcome.stored : outcome.kind === "lost" ? outcome.current : null;
      if (stored) {
        const info = decodeMember(this.s.group, stored);
        if (info) learn(info);
      }
      if (outcome.kind === "applied") this.s.events.emit("fenced", { member: m.id, term: m.term });
      else if (outcome.kind === "unknown") this.s.events.emit("error", { error: outcome.error, during: "fence" });
    }).catch((error: unknown) => this.s.events.emit("error", { error, during: "fence" }));
  }

  /** A bucket write bounded by what is left of our session window; learns what a conflict shows. */
  async write(name: string, next: LeaseRecord, expected: Stored | null): Promise<WriteOutcome> {
    const until = this.s.session.until ?? this.s.clock.now();
    const timeoutMs = Math.max(1, Math.min(this.s.callTimeoutMs, until - this.s.clock.now()));
    const outcome = await this.writerFor(name).write(next, expected?.revision ?? null, { timeoutMs });
    if (outcome.kind === "lost" && outcome.current) this.learnBucket(outcome.current, this.s.clock.now());
    this.backOffAfter(name, outcome);
    if (outcome.kind === "unknown") {
      this.s.onUnknownOutcome();
      this.s.events.emit("error", {
        error: outcome.error,
        during: next.holder === null ? "release" : next.holder === this.s.identity ? "claim" : "handoff",
      });
    }
    return outcome;
  }

  // ---- reads, and what we know ----

  /** The group's config, written first (with `buckets`) for a new group. */
  async readConfig(buckets: number): Promise<GroupConfig> {
    const { group, leaseMs, callTimeoutMs } = this.s;
    const writer = this.writerFor(configName(group));
    let stored = await writer.read({ timeoutMs: callTimeoutMs });
    if (!stored) {
      const legacy = await this.writerFor(legacyConfigName(group)).read({ timeoutMs: callTimeoutMs });
      const refusal = legacyGroupRefusal(group, legacy?.record);
      if (refusal) throw new LeaseStoreError(refusal, { ambiguous: false });
      const fresh = configRecord(group, { buckets, epoch: 1, previous: 0 }, leaseMs, this.s.clock.wallNow());
      const outcome = await writer.writeSettled(fresh, null, { timeoutMs: callTimeoutMs });
      stored = outcome.kind === "applied" ? outcome.stored : (outcome.current ?? null);
      if (!stored) throw new LeaseStoreError(`config record of group "${group}" vanished`, { ambiguous: false });
    }
    const config = decodeConfig(stored.record);
    if (!config) {
      // Never overwritten: an operator must look (or rewrite it with reshard()).
      throw new LeaseCorruptError(configName(group), [
        { path: "metadata", message: "expected buckets (1-4096), epoch (>= 1) and previous as whole numbers" },
      ]);
    }
    return config;
  }

  /** Every record under `prefix`, within the call timeout. */
  async listAll(prefix: string): Promise<Stored[]> {
    const store = this.s.store;
    const list = store.list;
    if (!list) throw new LeaseStoreError("the store cannot list records", { ambiguous: false });
    const abort = new AbortController();
    const collect = (async () => {
      const out: Stored[] = [];
      for await (const stored of readable(list.call(store, prefix))) out.push(stored);
      return out;
    })();
    collect.catch(() => undefined);
    const timeoutMs = this.s.callTimeoutMs;
    const expired = this.s.clock.sleep(timeoutMs, abort.signal).then(() => {
      if (abort.signal.aborted) return undefined as never;
      throw new LeaseStoreError(`listing "${prefix}" timed out after ${timeoutMs} ms`, { ambiguous: false });
    });
    try {
      return await Promise.race([collect, expired]);
    } finally {
      abort.abort(DONE);
    }
  }

  /** Takes a bucket record we read or wrote into account, unless we already know a newer one. */
  learnBucket(stored: Stored, learnedAt: number, ours = false): BucketInfo | undefined {
    const recognised = this.writers.get(stored.record.name)?.recognise(stored) !== undefined;
    const info = decodeBucket(this.s.group, stored);
    if (!info) return undefined;
    const known = this.known.get(info.index);
    if (known?.info.stored.revision === info.stored.revision) return known.info;
    const newer =
      !known || info.term > known.info.term || (info.term === known.info.term && learnedAt >= known.learnedAt);
    if (newer) this.known.set(info.index, { info, learnedAt, ours: ours || recognised });
    return newer ? info : known?.info;
  }

  // ---- one call per record at a time ----

  private writerFor(name: string): CasWriter {
    let writer = this.writers.get(name);
    if (!writer) {
      writer = new CasWriter({ store: this.s.store, name, clock: this.s.clock, callTimeoutMs: this.s.callTimeoutMs });
      this.writers.set(name, writer);
    }
    return writer;
  }

  /** Runs `fn` unless a call for `name` is already in flight; replans when it is done. */
  exclusive(name: string, fn: () => Promise<void>): Promise<void> {
    if (this.blocked(name)) return Promise.resolve();
    this.backoff.delete(name);
    const run = fn().finally(() => {
      this.busy.delete(name);
      this.s.onCallDone();
    });
    this.busy.set(
      name,
      run.catch(() => undefined),
    );
    return run;
  }

  /** A call for `name` is in flight, or `name` is backing off. */
  blocked(name: string): boolean {
    return this.busy.has(name) || this.s.clock.now() < (this.backoff.get(name) ?? 0);
  }

  /** After a write that did not show the current record: no new write to `name` for a retry delay. */
  private backOffAfter(name: string, outcome: WriteOutcome): void {
    if (outcome.kind === "unknown" || (outcome.kind === "lost" && !outcome.current)) {
      this.backoff.set(name, this.s.clock.now() + this.s.retryDelay());
    }
  }

  /** No call is in flight. */
  get idle(): boolean {
    return this.busy.size === 0;
  }

  /** Resolves once every call now in flight has. */
  settled(): Promise<unknown> {
    return Promise.all([...this.busy.values()]);
  }

  /** The earliest instant after `now` at which a record's back-off ends (infinity if none). */
  nextRetryAfter(now: number): number {
    let at = Number.POSITIVE_INFINITY;
    for (const retryAt of this.backoff.values()) if (retryAt > now) at = Math.min(at, retryAt);
    return at;
  }
}
