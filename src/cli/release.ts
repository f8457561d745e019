/**
 * `leasehold release NAME --holder ID --term N`: an operator's release, by compare-and-swap on the
 * revision just read, and only if holder and term are the ones named. It keeps the term (docs/design.md
 * §1). A live holder learns of it at its next renewal (a conflict) and steps down; until then it
 * may still act, which is what the fencing token is for: use this for stuck or dead holders.
 *
 * A lease bound to a process session is not renewed on its own, so its holder would never learn of
 * a release of the lease alone: the session record is rewritten first (the same holder and term, a
 * new revision), so the holder's next session renewal conflicts and it steps down from every lease
 * bound to that session, which its Electors then campaign for again. The session is not released:
 * the other leases bound to it stay held, by followers' judgement, until it has expired by their
 * observed time (by then the holder's own window has closed), so only the named lease is given
 * before the holder has heard. Then the lease is released.
 */

import { clearedRecord } from "../api/force-release.js";
import { sameRef } from "../bound/refs.js";
import { systemClock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { isLeaseCorruptError, LeaseValidationError, ReleaseRefusedError } from "../errors.js";
import { type LeaseStore, newWriteId, releasedRecord, type SessionRef, type Stored, validateName } from "../lease.js";
import { openStore } from "../open-store.js";
import { type CliIo, statusOf } from "./output.js";

export interface ReleaseOptions {
  store: string;
  name: string;
  /** The holder expected; not with `force`. */
  holder?: string | undefined;
  /** The term expected; with `force`, the term a record nobody can read is cleared at. */
  term?: number | undefined;
  /** Clear a record leasehold cannot read (or, through the API, judge) instead. */
  force?: boolean;
  json: boolean;
}

/**
 * A live holder renews about three times a lease: a release read between two renewals can meet
 * one. These many renewals in a row by the named holder, in the named term, are retried over.
 */
const MAX_ATTEMPTS = 5;

export type ReleaseOutcome = { released: true; stored: Stored } | { released: false; stored: Stored };

/**
 * Releases `name` if `holder` holds it in `term` (`released: true`, the record written), or finds
 * it already released in that term (`released: false`). A renewal by that holder in that term
 * between the read and the write changes only the revision: the release is tried again on the
 * record the conflict showed. Anything else is a ReleaseRefusedError, and nothing changed.
 */
export async function releaseLease(
  store: LeaseStore,
  name: string,
  holder: string,
  term: number,
): Promise<ReleaseOutcome> {
  const writer = new CasWriter({ store, name, clock: systemClock });
  let current = await store.get(name);
  /** The session tenure already interrupted: a retry of the release does not write it again. */
  let interrupted: SessionRef | undefined;
  for (let attempt = 1; ; attempt++) {
    if (!current) throw new ReleaseRefusedError(`lease "${name}" does not exist; nothing changed`);
    const r = current.record;
    if (r.holder === null) {
      if (r.term !== term) {
        throw new ReleaseRefusedError(
          `lease "${name}" is already released, in term ${r.term} (not ${term}); nothing changed`,
        );
      }
      return { released: false, stored: current };
    }
    if (r.holder !== holder || r.term !== term) {
      throw new ReleaseRefusedError(
        `lease "${name}" is held by ${r.holder} in term ${r.term}, not by ${holder} in term ${term}; nothing changed`,
      );
    }
    if (r.session && !sameRef(r.session, interrupted)) {
      await interruptSession(store, r.session, r.holder);
      interrupted = r.session;
    }
    // Through the one write path: a conflict that shows this very release (an SDK retry of a
    // write that applied) is a success, not "changed while releasing".
    const outcome = await writer.writeSettled(releasedRecord(r, Math.max(Date.now(), r.renewedAt)), current.revision);
    if (outcome.kind === "applied") return { released: true, stored: outcome.stored };
    if (attempt === MAX_ATTEMPTS) {
      throw new ReleaseRefusedError(
        `lease "${name}" changed ${MAX_ATTEMPTS} times while releasing it (renewed by ${holder} in term ${term} each time); nothing changed`,
      );
    }
    current = outcome.current === undefined ? await store.get(name) : outcome.current;
  }
}

/**
 * Makes the holder of session tenure `ref` step down: the session record rewritten unchanged but
 * for a new revision (`renewedAt` now, and one more of its `releases` where it counts them, so its
 * followers read their leases), by compare-and-swap, retried over its renewals; nothing if
 * that tenure is over already. Its next renewal conflicts and ends the session; followers, seeing
 * a new revision of a live tenure, wait out a whole lease of observed time before they fence it.
 */
async function interruptSession(store: LeaseStore, ref: SessionRef, holder: string): Promise<void> {
  const writer = new CasWriter({ store, name: ref.name, clock: systemClock });
  let current = await store.get(ref.name);
  for (let attempt = 1; ; attempt++) {
    const r = current?.record;
    if (!current || !r || r.holder !== holder || r.term !== ref.term) return; // not that tenure any more
    // A session that counts its releases counts this one, so followers read the lease at once.
    const releases = r.releases === undefined ? {} : { releases: r.releases + 1 };
    const touched = { ...r, ...releases, renewedAt: Math.max(Date.now(), r.renewedAt), writeId: newWriteId() };
    const outcome = await writer.writeSettled(touched, current.revision);
    if (outcome.kind === "applied") return;
    if (attempt === MAX_ATTEMPTS) {
      throw new ReleaseRefusedError(
        `session "${ref.name}" that the lease is bound to changed ${MAX_ATTEMPTS} times while interrupting it (renewed by ${holder} each time); nothing else changed`,
      );
    }
    current = outcome.current === undefined ? await store.get(ref.name) : outcome.current;
  }
}

/** A store that can clear a record it cannot judge itself (the HTTP store: the API does it, audited). */
interface ForceReleasing {
  forceRelease(name: string, term: number | undefined): Promise<Stored>;
}
const forceReleasing = (store: LeaseStore): store is LeaseStore & ForceReleasing =>
  typeof (store as Partial<ForceReleasing>).forceRelease === "function";

/**
 * `release --force`: replaces a record the store cannot read with a released one at `term`, by
 * compare-and-swap on the revision the store reported for it. A record that reads is refused:
 * its holder releases it (`--holder`, `--term`), or it expires. Through the API, the API decides,
 * judges what a record names as well, and logs who cleared it.
 */
export async function forceReleaseLease(
  store: LeaseStore,
  name: string,
  term: number | undefined,
): Promise<{ stored: Stored; why: string | undefined }> {
  if (forceReleasing(store)) return { stored: await store.forceRelease(name, term), why: undefined };
  let current: Stored | null;
  try {
    current = await store.get(name);
  } catch (error) {
    if (!isLeaseCorruptError(error)) throw error;
    if (error.revision === undefined) {
      throw new ReleaseRefusedError(
        `${error.message}; the store could not read its revision either, so no compare-and-swap can replace it: remove it with the store's own tools`,
      );
    }
    if (term === undefined) {
      throw new ReleaseRefusedError(
        `${error.message}; its term cannot be read: pass --term N, at least the highest term anything downstream fenced with under this name (0 if nothing fences with it); nothing changed`,
      );
    }
    const outcome = await new CasWriter({ store, name, clock: systemClock }).writeSettled(
      clearedRecord(name, term, Date.now()),
      error.revision,
    );
    if (outcome.kind !== "applied") {
      throw new ReleaseRefusedError(`lease "${name}" changed while it was being cleared; nothing changed`);
    }
    return { stored: outcome.stored, why: error.message };
  }
  if (!current) throw new ReleaseRefusedError(`lease "${name}" does not exist; nothing changed`);
  const r = current.record;
  throw new ReleaseRefusedError(
    `lease "${name}" reads (${r.holder === null ? "released" : `held by ${r.holder}`}, term ${r.term}): --force clears only a record leasehold cannot read; release it with --holder and --term, or let it expire; nothing changed`,
  );
}

export async function releaseCommand(o: ReleaseOptions, io: CliIo): Promise<number> {
  const name = validateName(o.name);
  if (o.force) return forceCommand(o, name, io);
  if (o.holder === undefined || o.term === undefined) {
    throw new LeaseValidationError("release options", [
      {
        path: o.holder === undefined ? "--holder" : "--term",
        message:
          "expected --holder and --term (the holder and term to release), or --force for a record leasehold cannot read",
      },
    ]);
  }
  const holder = o.holder;
  const term = o.term;
  // A missing database holds no lease to release: never create one.
  const store = await openStore(o.store, { env: io.env, create: false });
  try {
    const outcome = await releaseLease(store, name, holder, term);
    const r = outcome.stored.record;
    report(io, o.json, {
      released: outcome.released,
      alreadyReleased: !outcome.released,
      ...statusOf(outcome.stored, Date.now()),
    });
    if (!o.json) {
      io.say(
        outcome.released
          ? `released "${name}" (term ${r.term}, was held by ${o.holder})`
          : `lease "${name}" was already released (term ${r.term})`,
      );
    }
    return 0;
  } finally {
    await store.close?.();
  }
}

async function forceCommand(o: ReleaseOptions, name: string, io: CliIo): Promise<number> {
  if (o.holder !== undefined) {
    throw new LeaseValidationError("release options", [
      {
        path: "--holder",
        message: "expected no --holder with --force: a record nobody can read has no holder to check",
      },
    ]);
  }
  const store = await openStore(o.store, { env: io.env, create: false });
  try {
    const { stored, why } = await forceReleaseLease(store, name, o.term);
    report(io, o.json, { released: true, forced: true, ...(why ? { was: why } : {}), ...statusOf(stored, Date.now()) });
    if (!o.json) io.say(`cleared "${name}": released at term ${stored.record.term}${why ? ` (it was: ${why})` : ""}`);
    return 0;
  } finally {
    await store.close?.();
  }
}

function report(io: CliIo, json: boolean, result: object): void {
  if (json) io.out(JSON.stringify(result));
}
