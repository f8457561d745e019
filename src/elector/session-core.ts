/**
 * The session core: one record whose terms carry other records, the primitive both process
 * sessions (src/bound/session.ts, `<scope>/_sessions/<id>`) and sharded members
 * (`<group>/_members/<id>`, docs/sharding.md "Sessions") stand on. Every lease or bucket held under
 * a session term is valid exactly as long as that term is, as etcd and ZooKeeper sessions carry
 * their keys; one write renews them all.
 *
 * A session is a term of its record held by the lease-holder core (./holder.ts), the same core a
 * self-renewing `Elector` runs on; this module only names its events:
 * - a session is valid until `sentAt + leaseMs - safetyMs` (monotonic clock), checked when asked
 *   (`validTerm()`), with a watchdog behind it;
 * - a renewal is one conditional write and no read, carrying the record's metadata (a member's
 *   hand-off requests), so changing it costs a write only when it changes;
 * - a conflict on renewal means another process fenced this session after it expired by their
 *   observed time ("fenced"): the session is over, and so is everything held under it;
 * - a new session is always term + 1 by compare-and-swap, at once on a record this process wrote
 *   or a released one (after the back-off that follows a lost session), otherwise once the record
 *   has expired by observed time; a session term, once ended, is never held again;
 * - a release writes holder null and empty metadata, keeping the term;
 * - with `countsReleases` (a process session), each term carries `releases`, the count of records
 *   bound to it that were given up, which `noteRelease` raises and writes at once.
 *
 * Runtime-neutral.
 */
import type { LeaseRecord, Stored } from "../lease.js";
import { Emitter, type Listener } from "./events.js";
import { type HolderLossReason, type HolderSettings, LeaseHolder } from "./holder.js";

/**
 * The member record's name (`name`), the member id it names (`identity`), and the timing, clock and
 * randomness of the group's options; `lane` admits the session's reads and establishing writes.
 */
export type SessionSettings = Omit<HolderSettings, "metadata" | "clearMetadataOnRelease" | "watch">;

/** Why a session ended: its window closed unrenewed, another member fenced it, it was released, or stopped. */
export type SessionLossReason = "expired" | "fenced" | "released" | "stopped";

export interface SessionEvents {
  established: { term: number };
  renewed: { term: number };
  lost: { term: number; reason: SessionLossReason };
  error: { error: unknown; during: "read" | "establish" | "renew" | "release" };
  /** The record as seen while no session is held (read, pushed, or the answer to a lost write). */
  observed: { stored: Stored | null };
}

const LOSS: Record<HolderLossReason, SessionLossReason> = {
  expired: "expired",
  conflict: "fenced",
  released: "released",
  stopped: "stopped",
};

export class SessionCore {
  private readonly core: LeaseHolder;
  private readonly events = new Emitter<SessionEvents>();

  constructor(settings: SessionSettings) {
    this.core = new LeaseHolder({ ...settings, clearMetadataOnRelease: true });
    this.core.on("established", ({ stored }) => this.events.emit("established", { term: stored.record.term }));
    this.core.on("renewed", ({ term }) => this.events.emit("renewed", { term }));
    this.core.on("lost", ({ term, reason }) => this.events.emit("lost", { term, reason: LOSS[reason] }));
    this.core.on("observed", ({ stored }) => this.events.emit("observed", { stored }));
    this.core.on("error", ({ error, during }) =>
      this.events.emit("error", { error, during: during === "acquire" ? "establish" : during }),
    );
  }

  on<K extends keyof SessionEvents>(type: K, listener: Listener<SessionEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /**
   * The session term while the session is valid at this instant, else `undefined`. A closed window
   * found here ends the session at once (the `lost` event fires now, not when the watchdog runs).
   */
  validTerm(): number | undefined {
    return this.core.validTerm();
  }

  /** Monotonic instant the current session's window closes without a renewal. */
  get until(): number | undefined {
    return this.core.peek()?.until;
  }

  /** The held session, whether or not its window is still open, with no side effect (for snapshots). */
  peek(): { term: number; until: number } | undefined {
    const held = this.core.peek();
    return held && { term: held.term, until: held.until };
  }

  /** The member record as this session last wrote it, while held. */
  get record(): LeaseRecord | undefined {
    return this.core.peek()?.record;
  }

  /** Metadata for the next write; a change is written at once rather than at the next renewal. */
  setMetadata(metadata: Record<string, string>): void {
    this.core.setMetadata(metadata);
  }

  /** With `countsReleases`: one more record bound to this term was given up; written at once. */
  noteRelease(): void {
    this.core.noteRelease();
  }

  start(): void {
    this.core.start();
  }

  /** Stops renewing; with `release` (default) the record is released (holder null, term kept) first. */
  stop(options: { release?: boolean } = {}): Promise<void> {
    return this.core.stop(options);
  }
}
