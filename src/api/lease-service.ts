/**
 * What the stateless API does with a store: acquire / renew / release with server-stamped
 * times, judged by `renewedAt + leaseMs + maxSkewMs` against this instance's wall clock
 * (docs/design.md §3), and the raw compare-and-swap the HTTP store uses. Every write goes through
 * the one write path (src/elector/cas.ts) and is checked against the term rules
 * (src/term-rules.ts) whatever the caller's token allows. A lost race is re-decided on the fresh
 * record (bounded); an ambiguous write is settled by reading back its writeId.
 *
 * The holding rules, the same for the plain routes and the raw PUT (docs/security.md): a lease is
 * renewed, released or re-acquired only by the instance that took it (the record keeps the
 * digest of its `instance`, src/api/instance.ts); a lease still held is never given to another
 * holder, nor to the same holder name from another process; a term is never continued by a
 * process that did not take it; one exception, a bound lease's hand-over to the successor another
 * process registered (src/api/bound-leases.ts). A record of a sharded group is written only by its
 * group routes (src/api/group-records.ts).
 */

import type { Clock } from "../clock.js";
import { CasWriter, type WriteOutcome } from "../elector/cas.js";
import { isLeaseValidationError } from "../errors.js";
import { MAX_CREATED_TERM, type RecordWrite } from "../http/schemas.js";
import { type LeaseRecord, type LeaseStore, newWriteId, releasedRecord, type Stored } from "../lease.js";
import { isUnreadable, type Listed, listedName } from "../listing.js";
import { msUntilPast } from "../tenure.js";
import { checkTermRules } from "../term-rules.js";
import { boundSession, refused, type SessionCheck, sessionRefusal, succession } from "./bound-leases.js";
import { digestOf, instanceDigest } from "./instance.js";
import { type LeaseViews, storeProblem, toView } from "./lease-views.js";
import type { CallerKey, RecordQuota } from "./limits.js";
import { type ApiLogger, silentLogger } from "./log.js";
import { ProblemError } from "./problems.js";
import { withSignal } from "./store-deadline.js";

const ATTEMPTS = 4;
/** Records per listing call of `children`. */
const PAGE = 100;

export interface LeaseOutcome {
  leader: boolean;
  stored: Stored;
  created?: boolean;
}

/** Who asks, as the service needs to know: for the log, and for the quota on new records. */
export interface Caller {
  /** The token's name (never the token), "anyone" without auth: logged with holder changes. */
  by: string;
  /** Whose quota a create counts against. */
  key: CallerKey;
  /** The prefix the caller's records are counted under (its covering scope prefix). */
  quotaPrefix: string;
  /** Whether the caller's token lets it write `name` too (a session a bound lease names). */
  mayWrite: (name: string) => boolean;
  /**
   * Set when the request was admitted on the share of the server reserved for current holders
   * (src/api/admission.ts) though its route could also be an acquisition (acquire, the raw PUT):
   * the refusal to answer, before anything is written, when it turns out not to be one.
   */
  renewalsOnly?: ProblemError | undefined;
  /** The request's deadline: no store call for it runs past it, no write is sent after it (src/api/store-deadline.ts). */
  deadline?: AbortSignal | undefined;
}

export interface LeaseServiceOptions {
  /** The store, already metered (src/api/metered-store.ts). */
  store: LeaseStore;
  clock: Clock;
  /** The server's rule for free records, and what callers see (src/api/lease-views.ts). */
  views: LeaseViews;
  /** Every record this service reads or writes, for the watch streams (WatchHub.publish). */
  publish: (name: string, stored: Stored | null) => void;
  quota: RecordQuota;
  log?: ApiLogger;
}

export class LeaseService {
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly views: LeaseViews;
  private readonly publish: LeaseServiceOptions["publish"];
  private readonly quota: RecordQuota;
  private readonly log: ApiLogger;

  constructor(options: LeaseServiceOptions) {
    ({ store: this.store, clock: this.clock, views: this.views, publish: this.publish, quota: this.quota } = options);
    this.log = options.log ?? silentLogger;
  }

  /** Free by the server's rule (src/api/lease-views.ts). */
  isFree(record: LeaseRecord, wallNow = this.clock.wallNow()): boolean {
    return this.views.isFree(record, wallNow);
  }

  async get(name: string, deadline?: AbortSignal): Promise<Stored | null> {
    let stored: Stored | null;
    try {
      stored = await this.store.get(name, deadline ? { signal: deadline } : undefined);
    } catch (error) {
      throw storeProblem("get", error);
    }
    this.publish(name, stored);
    return stored;
  }

  /** A page of records in name order, an unreadable one in its place (src/listing.ts). */
  async *list(prefix: string, startAfter: string | undefined, limit: number): AsyncIterable<Listed> {
    if (!this.store.list) throw new ProblemError("not-found", "this store cannot list leases");
    try {
      yield* this.store.list(prefix, startAfter === undefined ? { limit } : { startAfter, limit });
    } catch (error) {
      throw storeProblem("list", error);
    }
  }

  /**
   * The records one segment under `prefix` (a sharded group's members or buckets), in name order,
   * at most `limit`, in pages. Whatever lies below one of them (`<prefix><child>/...`) is skipped
   * by listing again after it, so it costs one more listing call, never its records. A child the
   * store cannot read fails the call (a group is judged from all of its records).
   */
  async children(prefix: string, limit: number): Promise<Stored[]> {
    const list = this.store.list?.bind(this.store);
    if (!list) throw new ProblemError("not-found", "this store cannot list leases");
    const out: Stored[] = [];
    let startAfter: string | undefined;
    try {
      for (;;) {
        let listed = 0;
        let skipTo: string | undefined;
        for await (const entry of list(prefix, { ...(startAfter === undefined ? {} : { startAfter }), limit: PAGE })) {
          listed++;
          const rest = listedName(entry).slice(prefix.length);
          const slash = rest.indexOf("/");
          // Below a child: every name there sorts before `<child>/~`, and every later child after it.
          if (slash !== -1) {
            skipTo = `${prefix}${rest.slice(0, slash)}/~`;
            break;
          }
          if (isUnreadable(entry)) throw entry.unreadable;
          out.push(entry);
          startAfter = entry.record.name;
          if (out.length >= limit) return out;
        }
        if (skipTo !== undefined) startAfter = skipTo;
        else if (listed < PAGE) return out;
      }
    } catch (error) {
      throw storeProblem("list", error);
    }
  }

  /** Refuses (429) a new record for `caller` when it is over its quota. */
  async admitCreate(caller: Caller): Promise<void> {
    try {
      await this.quota.admitCreate(caller.key, caller.quotaPrefix);
    } catch (error) {
      throw storeProblem("count", error);
    }
  }

  /**
   * A compare-and-swap decided elsewhere (the sharding routes): checked against the term rules,
   * then written through the write path like every other write of this service.
   */
  async writeChecked(
    name: string,
    next: LeaseRecord,
    current: Stored | null,
    by = "server",
  ): Promise<Exclude<WriteOutcome, { kind: "unknown" }>> {
    enforceTermRules(name, current, next);
    return this.write(name, next, current, by);
  }

  async acquire(
    name: string,
    req: { holder: string; instance: string; leaseMs: number; metadata?: Record<string, string> | undefined },
    caller: Caller,
  ): Promise<LeaseOutcome> {
    const digest = await instanceDigest(req.instance);
    return this.decide(name, caller, async (current, wall) => {
      const r = current?.record;
      const held = current ? await this.heldState(current, wall) : undefined;
      if (r && r.holder === req.holder && held && !held.free) {
        if (digestOf(r) !== digest) throw holderInUse(name, current!);
        return {
          ...r,
          leaseMs: req.leaseMs,
          metadata: req.metadata ?? r.metadata,
          holderDigest: digest,
          renewedAt: wall,
          writeId: newWriteId(),
        };
      }
      // Not a renewal: refused here when only current holders' renewals are admitted now.
      if (caller.renewalsOnly) throw caller.renewalsOnly;
      // Held by someone else: 409 with Retry-After, when the server expects it free (as the raw PUT).
      if (held && !held.free) throw heldBy(name, current!, held.freeInMs);
      return {
        name,
        holder: req.holder,
        term: nextTerm(name, current),
        leaseMs: req.leaseMs,
        acquiredAt: wall,
        renewedAt: wall,
        metadata: req.metadata ?? {},
        holderDigest: digest,
        writeId: newWriteId(),
      };
    });
  }

  async renew(name: string, req: { holder: string; instance: string; term: number }, caller: Caller) {
    const digest = await instanceDigest(req.instance);
    return this.decide(name, caller, (current, wall) => {
      const r = current?.record;
      if (!r) throw new ProblemError("not-found", `lease "${name}" does not exist: acquire it first`);
      if (r.holder !== req.holder || r.term !== req.term || this.isFree(r, wall)) return undefined;
      if (digestOf(r) !== digest) throw holderInUse(name, current!);
      return { ...r, renewedAt: wall, writeId: newWriteId() };
    });
  }

  async release(name: string, req: { holder: string; instance: string; term: number }, caller: Caller) {
    const digest = await instanceDigest(req.instance);
    return this.decide(name, caller, (current, wall) => {
      const r = current?.record;
      if (!r) throw new ProblemError("not-found", `lease "${name}" does not exist`);
      // Idempotent: a repeated release of the same term, by the instance that released it.
      if (r.holder === null && r.term === req.term) return digestOf(r) === digest ? "unchanged" : undefined;
      if (r.holder !== req.holder || r.term !== req.term) return undefined;
      if (digestOf(r) !== digest) throw holderInUse(name, current!);
      return releasedRecord(r, wall);
    });
  }

  /**
   * The raw CAS of the HTTP store, by the process `instance`. `renewedAt` (the only time the
   * API's decisions use) is stamped here; `acquiredAt` is the writer's, informational, and refused
   * when in the future. The record is read first: a stale revision is answered 412 with the
   * current record, a write that breaks a term rule 409 naming it, and one that breaks the holding
   * rules 409 (`conflict`, `holder-in-use`), before anything is written.
   */
  async put(
    name: string,
    body: RecordWrite & { acquiredAt: number },
    expected: string | null,
    instance: string,
    caller: Caller,
  ): Promise<Stored> {
    const received = this.clock.wallNow();
    if (body.acquiredAt > received + this.views.maxSkewMs) {
      throw new ProblemError("validation", "acquiredAt is in the future of this server's clock", {
        errors: [{ path: "acquiredAt", message: `expected at most ${received + this.views.maxSkewMs}` }],
      });
    }
    const digest = await instanceDigest(instance);
    const current = await this.get(name, caller.deadline);
    // Stamped once the record is read, just before it is written: not when the request arrived (a
    // request held up by a slow store would otherwise write a record already expired).
    const wall = this.clock.wallNow();
    const next: LeaseRecord = { name, ...(body as Omit<LeaseRecord, "name">), holderDigest: digest, renewedAt: wall };
    const held = current ? await this.heldState(current, wall) : undefined;
    // A successor's registration, or the holder's hand-over to it (src/api/bound-leases.ts).
    const write = succession(current?.record, next, digest, held !== undefined && !held.free);
    // Admitted only as a renewal (src/api/admission.ts): refused first if it is none. A hand-over
    // is the holder's release to its successor, admitted as its release would be.
    if (caller.renewalsOnly && write.kind !== "hand-over" && !this.holdersOwnWrite(current, next, digest, held)) {
      throw caller.renewalsOnly;
    }
    if ((current?.revision ?? null) !== expected) throw notAtRevision(name, current);
    enforceTermRules(name, current, write.record);
    if (current === null && next.term > MAX_CREATED_TERM) {
      throw new ProblemError("validation", `a new lease starts at most at term ${MAX_CREATED_TERM}`, {
        errors: [{ path: "term", message: `expected at most ${MAX_CREATED_TERM} for a new lease` }],
      });
    }
    for (const check of write.checks) await this.checkSession(check, caller);
    if (write.replaces && (await this.sessionRefusalOf(write.replaces)) === undefined) {
      throw refused("successor", "another process's successor is registered, and its session lives");
    }
    if (write.kind === "other") this.enforceHolding(name, current, next, digest, held);
    if (current === null) await this.admitCreate(caller);
    const outcome = await this.write(name, write.record, current, caller.by, caller.deadline);
    if (outcome.kind === "lost") throw notAtRevision(name, outcome.current);
    return outcome.stored;
  }

  /**
   * Refuses (409 protocol-field) a write naming a session the writing process does not hold, or one
   * outside the caller's scope (src/api/bound-leases.ts): one read of that session record.
   */
  private async checkSession(check: SessionCheck, caller: Caller): Promise<void> {
    if (!caller.mayWrite(check.ref.name)) {
      throw refused(check.field, `the session record "${check.ref.name}" is outside this token's prefixes`);
    }
    const why = await this.sessionRefusalOf(check);
    if (why !== undefined) throw refused(check.field, why);
  }

  private async sessionRefusalOf(check: SessionCheck): Promise<string | undefined> {
    const session = (await this.get(check.ref.name))?.record;
    return sessionRefusal(check, session, session === undefined || this.isFree(session));
  }

  /** Throws a 400 naming `header` when `revision` cannot be one this store issued. */
  checkRevision(header: string, revision: string): void {
    try {
      this.store.checkRevision?.(revision);
    } catch (error) {
      if (!isLeaseValidationError(error)) throw error;
      throw new ProblemError("validation", `${header} names no revision this server could have issued`, {
        errors: error.issues.map((i) => ({ path: header, message: i.message })),
      });
    }
  }

  /**
   * Whether `stored` is free by the server's rule and, held, in how long it will be: by its own
   * stamps, or a bound lease by its process session's record (src/api/bound-leases.ts; one more read).
   */
  private async heldState(stored: Stored, wall: number): Promise<{ free: boolean; freeInMs: number }> {
    if (!boundSession(stored.record)) return this.views.freeState(stored, wall);
    const state = await this.views.state(stored);
    return {
      free: state.free,
      freeInMs: state.free ? 0 : msUntilPast(state.expiresAt, wall, this.views.maxSkewMs),
    };
  }

  /** A raw write by the live holder's own process that renews or releases its term (src/api/admission.ts). */
  private holdersOwnWrite(
    current: Stored | null,
    next: LeaseRecord,
    digest: string,
    held: { free: boolean } | undefined,
  ): boolean {
    const r = current?.record;
    if (!r || r.holder === null || !held || held.free || digestOf(r) !== digest) return false;
    return next.term === r.term && (next.holder === null || next.holder === r.holder);
  }

  /**
   * The holding rules for a raw write replacing `current` with `next` by the process whose
   * instance digest is `digest` (the plain routes keep them by construction).
   */
  private enforceHolding(
    name: string,
    current: Stored | null,
    next: LeaseRecord,
    digest: string,
    held: { free: boolean; freeInMs: number } | undefined,
  ): void {
    if (!current || !held) return;
    const r = current.record;
    const live = !held.free;
    const sameProcess = digestOf(r) === digest;
    const continues = next.holder !== null && next.holder === r.holder && next.term === r.term;
    if (next.holder === null || continues || next.holder === r.holder) {
      // A release, a renewal, a re-acquisition by the same holder name: only its own process while
      // it holds; a term is never continued by another process, held or not.
      if ((live || continues) && r.holder !== null && !sameProcess) throw holderInUse(name, current);
      if (continues && !live) {
        throw new ProblemError(
          "conflict",
          `lease "${name}" expired in term ${r.term}: it is re-acquired at term ${r.term + 1}, never renewed`,
          { lease: toView(current), leader: false },
        );
      }
      return;
    }
    if (live) throw heldBy(name, current, held.freeInMs);
  }

  /**
   * Reads, lets `next` decide the write (or `undefined`: refused, "unchanged": nothing to do),
   * writes with CAS, and on a lost race decides again on the record that won. A record of a
   * sharded group is refused first; a new record counts against the caller's quota.
   */
  private async decide(
    name: string,
    caller: Caller,
    next: (
      current: Stored | null,
      wall: number,
    ) => LeaseRecord | undefined | "unchanged" | Promise<LeaseRecord | undefined | "unchanged">,
  ): Promise<LeaseOutcome> {
    let current = await this.get(name, caller.deadline);
    let admitted = false;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const record = await next(current, this.clock.wallNow());
      if (record === "unchanged") return { leader: false, stored: current! };
      if (record === undefined) {
        throw new ProblemError("conflict", `lease "${name}" is held by another holder or the term has moved on`, {
          lease: toView(current!),
          leader: false,
        });
      }
      enforceTermRules(name, current, record);
      if (current === null && !admitted) {
        await this.admitCreate(caller);
        admitted = true;
      }
      const outcome = await this.write(name, record, current, caller.by, caller.deadline);
      if (outcome.kind === "applied") {
        return { leader: outcome.stored.record.holder !== null, stored: outcome.stored, created: current === null };
      }
      current = outcome.current === undefined ? await this.get(name, caller.deadline) : outcome.current;
      if (current) this.publish(name, current);
    }
    throw new ProblemError("store-unavailable", `lease "${name}" changed ${ATTEMPTS} times while deciding; retry`, {
      retryAfter: 1,
    });
  }

  /**
   * One write through the write path: applied (published to watchers), or lost; an unknown
   * outcome is settled by one read when the write landed, and is a 503 otherwise (the client
   * repeats the call, which is idempotent for the same holder and instance).
   */
  private async write(
    name: string,
    next: LeaseRecord,
    current: Stored | null,
    by: string,
    deadline?: AbortSignal,
  ): Promise<Exclude<WriteOutcome, { kind: "unknown" }>> {
    const writer = new CasWriter({ store: withSignal(this.store, deadline), name, clock: this.clock });
    const outcome = await writer.writeSettled(next, current?.revision ?? null).catch((error: unknown) => {
      throw storeProblem("put", error);
    });
    if (outcome.kind === "applied") {
      this.views.ownWrites.note(outcome.stored, outcome.sentAt);
      this.publish(name, outcome.stored);
      const from = current?.record.holder ?? null;
      const to = outcome.stored.record.holder;
      if (from !== to || outcome.stored.record.term !== current?.record.term) {
        this.log.info("lease holder changed", { lease: name, from, to, term: outcome.stored.record.term, by });
      }
    }
    return outcome;
  }
}

/** term + 1 for a new tenure, or 409 `term-exhausted` when that is past what JSON carries exactly. */
function nextTerm(name: string, current: Stored | null): number {
  const term = (current?.record.term ?? 0) + 1;
  if (term > Number.MAX_SAFE_INTEGER) {
    throw new ProblemError(
      "term-exhausted",
      `lease "${name}" is at term ${current?.record.term}, the largest a JSON number carries exactly: it can never pass on; use another name`,
    );
  }
  return term;
}

function holderInUse(name: string, current: Stored): ProblemError {
  const r = current.record;
  return new ProblemError(
    "holder-in-use",
    `lease "${name}" is held by ${JSON.stringify(r.holder)} (term ${r.term}) from another process (another instance): a second process with the same holder name never shares its term; it may take the lease once it is free, at term ${r.term + 1}`,
    { lease: toView(current), leader: false },
  );
}

/** 409 for a lease still held: Retry-After in whole seconds, and `freeInMs` to the millisecond. */
function heldBy(name: string, current: Stored, freeInMs: number): ProblemError {
  const r = current.record;
  return new ProblemError(
    "conflict",
    `lease "${name}" is held by ${JSON.stringify(r.holder)} (term ${r.term}) until this server counts it free (leaseMs after this instance wrote it, by its own clock; renewedAt + leaseMs + maxSkewMs for a record another instance wrote): another holder takes it only after that`,
    { lease: toView(current), leader: false, retryAfter: Math.max(1, Math.ceil(freeInMs / 1000)), freeInMs },
  );
}

function notAtRevision(name: string, current: Stored | null | undefined): ProblemError {
  return new ProblemError("precondition-failed", `lease "${name}" is not at that revision`, {
    ...(current ? { lease: toView(current) } : {}),
  });
}

/** The server's own check of every write, whatever the token: see src/term-rules.ts. */
function enforceTermRules(name: string, current: Stored | null, next: LeaseRecord): void {
  const violation = checkTermRules(current?.record ?? null, next);
  if (!violation) return;
  throw new ProblemError("term-rule", `lease "${name}": ${violation.message}; nothing was written`, {
    rule: violation.rule,
    ...(current ? { lease: toView(current) } : {}),
  });
}
