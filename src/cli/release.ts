/**
 * `leasehold release NAME --holder ID --term N`: an operator's release, by compare-and-swap on the
 * revision just read, and only if holder and term are the ones named. It keeps the term (docs/design.md
 * §1). A live holder learns of it at its next renewal (a conflict) and steps down; until then it
 * may still act, which is what the fencing token is for: use this for stuck or dead holders.
 */
import { systemClock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { ReleaseRefusedError } from "../errors.js";
import { type LeaseStore, releasedRecord, type Stored, validateName } from "../lease.js";
import { openStore } from "../open-store.js";
import { type CliIo, statusOf } from "./output.js";

export interface ReleaseOptions {
  store: string;
  name: string;
  holder: string;
  term: number;
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

export async function releaseCommand(o: ReleaseOptions, io: CliIo): Promise<number> {
  const name = validateName(o.name);
  // A missing database holds no lease to release: never create one.
  const store = await openStore(o.store, { env: io.env, create: false });
  try {
    const outcome = await releaseLease(store, name, o.holder, o.term);
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

function report(io: CliIo, json: boolean, result: object): void {
  if (json) io.out(JSON.stringify(result));
}
