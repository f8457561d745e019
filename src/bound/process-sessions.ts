/**
 * The sessions default Electors ride on (docs/design.md §4 "The process session"): every Elector
 * of a process with the same store, scope, identity, timing, clock, randomness and lane shares one
 * session, so a thousand leases cost one store write per renewal interval, not a thousand.
 *
 * - **Scope**: the lease name up to its last `/` (`jobs/` for `jobs/billing`, none for
 *   `billing`), so the session record lies inside any prefix a token for the lease covers.
 * - **Slots**: the record is `<scope>_sessions/slot-N`, the first slot found free (missing,
 *   released, or stale by its stamps) when the session is opened. A restarted process reuses a
 *   slot its predecessor released, so the records of a scope stay as many as the processes that
 *   ran at once, not as many as ever started (no store can delete a record here).
 * - **Copies**: one session carries one lease name once. A second candidate of the same lease in
 *   the same process (tests, a blue-green pair) gets a session of its own, and, when its identity
 *   is this process's default one, its own identity (`process-x-2`), so their records tell them
 *   apart. So does a second store object (`process-x-s2`): the API counts each client a process.
 * - **Taken**: if the slot is found held by another live holder (two processes opened it at
 *   once, or it was fenced and claimed while this process was paused), this process's session
 *   there is given up and its Electors move to a new slot. They lead nothing meanwhile: a lease
 *   bound to a session term is held only while that term is.
 * - **Lifetime**: opened when the first of its Electors starts; closed (the record released) when
 *   the last one stops.
 *
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { jittered } from "../elector/follower-rules.js";
import type { Lane } from "../elector/lane.js";
import type { ResolvedTiming } from "../elector/options.js";
import type { ElectorEvents } from "../elector/types.js";
import { type LeaseStore, newWriteId, releasedRecord } from "../lease.js";
import { freeByStamps } from "../tenure.js";
import { LeaseSession } from "./session.js";

/** Slots tried before a scope counts as full: that many processes sharing one scope and timing. */
export const MAX_SLOTS = 1024;

/** The process's default identity: one per process (per module instance), drawn once. */
let processIdentity: string | undefined;
export function defaultProcessIdentity(): string {
  processIdentity ??= `process-${newWriteId().slice(0, 8)}`;
  return processIdentity;
}

export interface SessionKey {
  store: LeaseStore;
  clock: Clock;
  random: () => number;
  lane: Lane;
  /** The identity given, or `undefined` for the process's own. */
  identity: string | undefined;
  timing: ResolvedTiming;
  pollMs: number;
}

/** What an Elector is told: a session to bind to (or none for now), and errors to report. */
export interface SessionUser {
  readonly leaseName: string;
  attach(session: LeaseSession | undefined): void;
  error(error: unknown, during: ElectorEvents["error"]["during"]): void;
}

/** The scope of a lease name: up to and including its last `/`. */
export function scopeOf(leaseName: string): string {
  return leaseName.slice(0, leaseName.lastIndexOf("/") + 1);
}

/** An Elector's place in a shared session, taken at construction (its identity depends on it). */
export class Membership {
  private started = false;
  private left = false;

  constructor(
    private readonly group: SessionGroup,
    readonly identity: string,
    private readonly user: SessionUser,
  ) {}

  /** Starts receiving the session (opening it if this is its first started Elector). */
  start(): void {
    if (this.started || this.left) return;
    this.started = true;
    this.group.started(this.user);
  }

  /** The Elector begins to stop: it no longer counts as one that keeps the session renewed. */
  stopping(): void {
    this.group.stopping(this.user);
  }

  /**
   * Gives the place up, after the Elector has stopped (handed over, released, or left its lease
   * bound). While other Electors still run on the session, a lease of this one still bound to it
   * would stay held by nobody for as long as they run: it is released, or, failing that, the
   * session is ended and claimed anew. Once the last Elector has left, the session closes:
   * released (`release`), or left to run out with whatever is still bound to it.
   */
  leave(release: boolean): Promise<void> {
    if (this.left) return Promise.resolve();
    this.left = true;
    return this.group.leave(this.user, release);
  }
}

const ids = new WeakMap<object, number>();
let nextId = 1;
function idOf(o: object): number {
  let id = ids.get(o);
  if (id === undefined) {
    id = nextId++;
    ids.set(o, id);
  }
  return id;
}

/** Per store: the groups by key, and the store's ordinal. */
interface StoreSessions {
  groups: Map<string, SessionGroup>;
  /** 0 for the first store this process's Electors used, 1 for the next, ...: part of a default identity. */
  ordinal: number;
}

/**
 * The slot records this process's sessions use or are reading, by clock and name, whatever the
 * identity and store object: a slot another session of this process holds is skipped without a
 * read (a process running many identities would otherwise read every one of them at each start),
 * and two sessions of one identity on one slot (two store objects reaching one store) would each
 * take the other's record for their own. The clock tells apart simulated processes sharing one
 * real one (test/chaos).
 */
const slotsInUse = new Set<string>();

let stores = 0;

const byStore = new WeakMap<LeaseStore, StoreSessions>();

/** A place for an Elector of lease `user.leaseName` in the process session its key names. */
export function joinProcessSession(key: SessionKey, user: SessionUser): Membership {
  let sessions = byStore.get(key.store);
  if (!sessions) {
    sessions = { groups: new Map(), ordinal: stores++ };
    byStore.set(key.store, sessions);
  }
  const scope = scopeOf(user.leaseName);
  const base = JSON.stringify([
    scope,
    key.identity ?? null,
    key.timing,
    key.pollMs,
    idOf(key.clock),
    idOf(key.random),
    idOf(key.lane),
  ]);
  for (let copy = 0; ; copy++) {
    const k = `${base}#${copy}`;
    let group = sessions.groups.get(k);
    if (!group) {
      const identity = key.identity ?? defaultIdentity(sessions.ordinal, copy);
      group = new SessionGroup(key, scope, identity, () => sessions.groups.delete(k));
      sessions.groups.set(k, group);
    }
    if (group.reserve(user)) return new Membership(group, group.identity, user);
  }
}

/**
 * The process's identity, told apart for a second store object (`-s2`: a program, or a test, that
 * runs candidates through two clients, which the HTTP API sees as two processes) and for a second
 * candidate of one lease (`-2`).
 */
function defaultIdentity(ordinal: number, copy: number): string {
  const store = ordinal === 0 ? "" : `-s${ordinal + 1}`;
  return `${defaultProcessIdentity()}${store}${copy === 0 ? "" : `-${copy + 1}`}`;
}

/** One shared session: its Electors (at most one per lease name), and the session while open. */
class SessionGroup {
  /** Electors by lease name, started or not. */
  private readonly users = new Map<string, SessionUser>();
  /** Started and not left. */
  private readonly members = new Set<SessionUser>();
  /** Started and not stopping: the Electors the session is kept for. */
  private readonly running = new Set<SessionUser>();
  private session: LeaseSession | undefined;
  private claiming = false;
  private closing: Promise<void> = Promise.resolve();
  private readonly halt = new AbortController();

  constructor(
    private readonly key: SessionKey,
    private readonly scope: string,
    readonly identity: string,
    private readonly forget: () => void,
  ) {}

  private slotKey(name: string): string {
    return `${idOf(this.key.clock)}\u0000${name}`;
  }

  reserve(user: SessionUser): boolean {
    if (this.users.has(user.leaseName)) return false;
    this.users.set(user.leaseName, user);
    return true;
  }

  started(user: SessionUser): void {
    this.members.add(user);
    this.running.add(user);
    this.session?.countReleases(true);
    if (this.session) user.attach(this.session);
    else void this.claim();
  }

  stopping(user: SessionUser): void {
    this.running.delete(user);
    // The last running Elector is stopping: the session closes once it has left, which tells
    // followers of its leases what a count would (./session.ts countReleases).
    if (this.running.size === 0) this.session?.countReleases(false);
  }

  async leave(user: SessionUser, release: boolean): Promise<void> {
    this.users.delete(user.leaseName);
    this.members.delete(user);
    this.running.delete(user);
    if (this.users.size === 0) {
      this.forget();
      this.halt.abort("closed");
    }
    const session = this.session;
    if (this.running.size > 0) {
      if (session) await this.freeLease(session, user.leaseName);
      return;
    }
    // Others still stopping: the last to leave closes the session.
    if (this.members.size > 0) return;
    this.session = undefined;
    if (session) this.close(session, release);
    await this.closing;
  }

  /**
   * Releases lease `name` if it is still bound to `session`'s current term and held by this
   * identity (its Elector's release failed, or it stopped with `release: false`): the session lives
   * on for the others, and so would the lease, held by nobody. If that fails, the session is ended
   * (every lease bound to it with it, its Electors campaigning again on a new one).
   */
  private async freeLease(session: LeaseSession, name: string): Promise<void> {
    const { store, clock, timing } = this.key;
    const writer = new CasWriter({ store, name, clock, callTimeoutMs: timing.callTimeoutMs });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const stored = await writer.read();
        const r = stored?.record;
        const term = session.validTerm();
        if (!stored || !r || r.holder !== this.identity || r.session?.name !== session.name) return;
        if (term === undefined || r.session.term !== term) return; // over with that session term
        const outcome = await writer.writeSettled(
          releasedRecord(r, Math.max(clock.wallNow(), r.renewedAt)),
          stored.revision,
        );
        if (outcome.kind === "applied") return session.noteRelease(); // its followers read it
      }
    } catch {
      // Unknown: ended below, as for a release that did not land.
    }
    if (this.session === session) this.retire(session, true);
  }

  private close(session: LeaseSession, release: boolean): void {
    const name = session.name;
    const previous = this.closing;
    const forgetSlot = () => {
      if (this.session?.name !== name) slotsInUse.delete(this.slotKey(name));
    };
    this.closing = Promise.all([previous, session.close({ release })]).then(forgetSlot, forgetSlot);
  }

  /** Finds a free slot and opens the session there; retried while any Elector of it runs. */
  private async claim(): Promise<void> {
    if (this.claiming) return;
    this.claiming = true;
    try {
      while (this.running.size > 0 && !this.session) {
        let slot: string | undefined;
        try {
          await this.closing; // a slot being released is not taken again before it is
          slot = await this.freeSlot();
        } catch (error) {
          for (const u of this.running) u.error(error, "read");
        }
        if (this.running.size === 0) {
          if (slot !== undefined) slotsInUse.delete(this.slotKey(slot)); // held while read, never opened
          return;
        }
        if (slot !== undefined) {
          this.open(slot);
          return;
        }
        const wait = jittered(this.key.timing.retryMs, { jitter: this.key.timing.jitter, random: this.key.random });
        await this.key.clock.sleep(wait, this.halt.signal);
      }
    } finally {
      this.claiming = false;
    }
  }

  /** The first slot no session of this process uses and whose record is free (missing, released, stale). */
  private async freeSlot(): Promise<string | undefined> {
    const { store, clock, timing } = this.key;
    for (let n = 0; n < MAX_SLOTS; n++) {
      const name = `${this.scope}_sessions/slot-${n}`;
      const key = this.slotKey(name);
      if (slotsInUse.has(key)) continue;
      // Held for this group while it is read: no other session of this process opens it too.
      slotsInUse.add(key);
      let free = false;
      try {
        const stored = await new CasWriter({ store, name, clock, callTimeoutMs: timing.callTimeoutMs }).read();
        const r = stored?.record;
        free = !r || freeByStamps(r, clock.wallNow(), timing.maxSkewMs);
      } finally {
        if (!free) slotsInUse.delete(key);
      }
      if (free) return name;
    }
    const error = new Error(
      `no free session slot in "${this.scope}_sessions/" among ${MAX_SLOTS}: that many processes share this scope and timing; give some Electors session: false, or another scope`,
    );
    for (const u of this.running) u.error(error, "acquire");
    return undefined;
  }

  private open(slot: string): void {
    const { timing } = this.key;
    const session = new LeaseSession({
      store: this.key.store,
      name: slot,
      identity: this.identity,
      leaseMs: timing.leaseMs,
      renewMs: timing.renewMs,
      retryMs: timing.retryMs,
      safetyMs: timing.safetyMs,
      jitter: timing.jitter,
      maxSkewMs: timing.maxSkewMs,
      callTimeoutMs: timing.callTimeoutMs,
      pollMs: this.key.pollMs,
      clock: this.key.clock,
      random: this.key.random,
      lane: this.key.lane,
    });
    this.session = session;
    session.on("observed", ({ stored }) => {
      const r = stored?.record;
      // Held by another live holder: not ours to wait for (it may renew for ever): move.
      if (r && r.holder !== null && r.holder !== this.identity) {
        if (!freeByStamps(r, this.key.clock.wallNow(), timing.maxSkewMs)) this.taken(session);
      }
    });
    session.on("error", ({ error, during }) => {
      const as = during === "establish" ? "acquire" : during;
      for (const u of this.running) u.error(error, as);
    });
    for (const u of this.members) u.attach(session);
  }

  /** Another process holds our slot: give the session up (nothing is held under it) and claim again. */
  private taken(session: LeaseSession): void {
    this.retire(session, false);
  }

  /**
   * Ends `session` for this group (released when `release`: a lease bound to it is then free at
   * once) and claims a new one for the Electors still running; theirs are replaced meanwhile.
   */
  private retire(session: LeaseSession, release: boolean): void {
    if (this.session !== session) return;
    this.session = undefined;
    for (const u of this.members) u.attach(undefined);
    this.close(session, release);
    void this.claim();
  }
}
