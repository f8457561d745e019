/**
 * What one process knows of other processes' sessions (docs/design.md §4 "Bound leases"): a
 * follower of a bound lease judges the lease by the session its record names. Observations are
 * shared by every bound elector of the process, so a thousand leases of one dead session cost one
 * read of its record per look and one fence, not a thousand.
 *
 * The rules are the elector's (docs/design.md §3), applied to the session record:
 * - a tenure is over when the record shows a later term of the session, or the same term released
 *   (holder null: its owner left, or someone fenced it);
 * - a live-looking tenure has expired once its revision is unchanged from the read that first
 *   showed it to a read started `leaseMs` later (observed time; revisions are unique, so the same
 *   revision means no write in between), or at once when its own stamps say so
 *   (`renewedAt + leaseMs + maxSkewMs` in the past);
 * - an expired tenure is fenced before any of its leases is taken: one compare-and-swap on exactly
 *   the revision observed writes `holder: null` (term kept), so a renewal of the old session still
 *   in flight conflicts, and its owner's session (and every lease bound to it) ends. Without the
 *   fence a late renewal could extend a session whose lease had already been given away.
 *
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { type Lane, openLane } from "../elector/lane.js";
import { type LeaseStore, releasedRecord, type Stored } from "../lease.js";
import { nextLookAt } from "./look-schedule.js";
import type { SessionRef } from "./refs.js";

/** The library's default renewMs / leaseMs. */
const DEFAULT_RENEW_SHARE = 1 / 3;

export interface Observation {
  stored: Stored | null;
  /** Monotonic instant this revision was first seen (the end of the read that showed it). */
  at: number;
  /** Monotonic instant the latest read that still showed it was sent. */
  readAt: number;
  /**
   * Monotonic instant the session's current count of `releases` (and term) was first seen: a
   * follower whose lease was read after it knows of every release it counts.
   */
  releasesSince: number;
}

/** What a tenure's record says: over (take its leases), expired (fence first), or live (look again at `lookAt`). */
export type Verdict = { kind: "over" } | { kind: "expired"; stored: Stored } | { kind: "live"; lookAt: number };

interface Entry {
  obs: Observation | undefined;
  reading: { startedAt: number; done: Promise<Observation> } | undefined;
  writer: CasWriter;
  fencing: Promise<void> | undefined;
  /** The last fence's outcome is unknown or was refused: the next look reads, whatever it asks. */
  mustRead: boolean;
}

/** At most this many sessions are remembered; the least recently used is forgotten (it is only re-read). */
const MAX_SESSIONS = 10_000;

export class SessionObserver {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly s: {
      store: LeaseStore;
      clock: Clock;
      maxSkewMs: number;
      callTimeoutMs: number;
      /** A live session is looked at no more than once in this many ms (./look-schedule.ts). */
      pollMs: number;
      /** The lane a look asks first, as a follower's poll does. */
      lane?: Lane;
      /** Owners' renewal interval as a share of their lease (renewMs / leaseMs; default 1/3). */
      renewShare?: number;
      /** Who fences: written into the fenced record as `fenced`, for status. */
      identity: string;
    },
  ) {}

  /** The latest observation of session `name`, if any, without a read. */
  known(name: string): Observation | undefined {
    return this.entries.get(name)?.obs;
  }

  /**
   * An observation of session `name` from a read sent at or after `freshAfter` (monotonic): the
   * one already made, a read in flight that qualifies, or a new read. Throws what the store threw.
   */
  async look(name: string, freshAfter: number): Promise<Observation> {
    const e = this.entry(name);
    if (e.obs && e.obs.readAt >= freshAfter && !e.mustRead) return e.obs;
    if (e.reading && e.reading.startedAt >= freshAfter) return e.reading.done;
    // Stamped before the lane admits it: the read is sent later, so this only makes it look older.
    const startedAt = this.s.clock.now();
    e.mustRead = false;
    const done = this.admitted(() => e.writer.read()).then((stored) => this.note(e, stored, startedAt));
    const reading = { startedAt, done };
    e.reading = reading;
    const clear = () => {
      if (e.reading === reading) e.reading = undefined;
    };
    done.then(clear, clear);
    return done;
  }

  /**
   * The tenure `ref` judged on `obs` (see the header); `fallbackMs` is the lease's own leaseMs for a
   * missing record; `namedSince` is when the lease record naming `ref` was first seen (monotonic).
   */
  verdict(ref: SessionRef, obs: Observation, fallbackMs: number, namedSince: number): Verdict {
    const r = obs.stored?.record;
    if (r && (r.term > ref.term || (r.term === ref.term && r.holder === null))) return { kind: "over" };
    if (!r || r.term < ref.term) {
      // A read sent before the lease was seen naming this tenure may predate the tenure itself
      // (its owner re-established the session since, at the next term): it says nothing about
      // it. Look again now; only a read sent after that instant can show the tenure missing.
      if (obs.readAt < namedSince) return { kind: "live", lookAt: namedSince };
      // No record of that tenure (deleted, or replaced outside the library): its owner cannot
      // renew it (a renewal is a compare-and-swap on its own revision), so once this state has
      // stood for a lease since the tenure was named it is over; nothing to fence.
      const lookAt = Math.max(obs.at, namedSince) + fallbackMs;
      return obs.readAt >= lookAt ? { kind: "over" } : { kind: "live", lookAt };
    }
    const stored = obs.stored!;
    if (r.renewedAt + r.leaseMs + this.s.maxSkewMs < this.s.clock.wallNow()) return { kind: "expired", stored };
    const expiresAt = obs.at + r.leaseMs;
    if (obs.readAt >= expiresAt) return { kind: "expired", stored };
    // Looked at just after a renewal is due, at most once a poll, and at its expiry (one read per
    // session per process, whatever the leases): ./look-schedule.ts.
    const lookAt = nextLookAt({
      now: this.s.clock.now(),
      wallNow: this.s.clock.wallNow(),
      renewedAt: r.renewedAt,
      leaseMs: r.leaseMs,
      firstSeen: obs.at,
      readAt: obs.readAt,
      pollMs: this.s.pollMs,
      maxSkewMs: this.s.maxSkewMs,
      renewShare: this.s.renewShare ?? DEFAULT_RENEW_SHARE,
      counts: r.releases !== undefined,
    });
    return { kind: "live", lookAt };
  }

  /**
   * Ends the expired tenure `stored` by one compare-and-swap on its revision (shared by every
   * elector of the process asking at once). Afterwards the observation says what the store holds:
   * the fence (over), the record that beat it (look again), or nothing new (the write's outcome is
   * unknown: the next look reads it).
   */
  fence(stored: Stored): Promise<void> {
    const e = this.entry(stored.record.name);
    if (e.fencing) return e.fencing;
    const fencing = (async () => {
      const next = releasedRecord(stored.record, this.s.clock.wallNow(), { fenced: this.s.identity });
      const sentAt = this.s.clock.now();
      const outcome = await e.writer.write(next, stored.revision);
      if (outcome.kind === "applied") this.note(e, outcome.stored, outcome.sentAt);
      else if (outcome.kind === "lost" && outcome.current !== undefined) this.note(e, outcome.current, sentAt);
      else {
        // Refused, or unknown (the fence may have landed): the next look reads again.
        e.mustRead = true;
        if (outcome.kind === "unknown") throw outcome.error;
      }
    })();
    e.fencing = fencing;
    const clear = () => {
      if (e.fencing === fencing) e.fencing = undefined;
    };
    fencing.then(clear, clear);
    return fencing;
  }

  /** A look is a follower's poll: it asks the lane first (renewals first, ../elector/lane.ts). */
  private async admitted<T>(call: () => Promise<T>): Promise<T> {
    const done = await (this.s.lane ?? openLane).admit("poll");
    try {
      return await call();
    } finally {
      done();
    }
  }

  private note(e: Entry, stored: Stored | null, readAt: number): Observation {
    const now = this.s.clock.now();
    const recognised = e.writer.recognise(stored);
    const same = e.obs !== undefined && (e.obs.stored?.revision ?? null) === (stored?.revision ?? null);
    // A read that started before the observation we hold cannot confirm more than it does.
    const before = e.obs?.stored?.record;
    const counted =
      before !== undefined &&
      stored !== null &&
      stored.record.term === before.term &&
      stored.record.releases === before.releases;
    const obs: Observation = same
      ? { ...e.obs!, readAt: Math.max(e.obs!.readAt, readAt) }
      : { stored, at: now, readAt, releasesSince: counted ? e.obs!.releasesSince : now };
    if (recognised) obs.stored = recognised.stored;
    e.obs = obs;
    return obs;
  }

  private entry(name: string): Entry {
    let e = this.entries.get(name);
    if (e) {
      // Most recently used last, so the first key is the one to forget.
      this.entries.delete(name);
      this.entries.set(name, e);
      return e;
    }
    e = {
      obs: undefined,
      reading: undefined,
      fencing: undefined,
      mustRead: false,
      writer: new CasWriter({ store: this.s.store, name, clock: this.s.clock, callTimeoutMs: this.s.callTimeoutMs }),
    };
    this.entries.set(name, e);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= MAX_SESSIONS) break;
      this.entries.delete(oldest);
    }
    return e;
  }
}
