/**
 * `leasehold release NAME --holder ID --term N`: an operator's release, by compare-and-swap on the
 * revision just read, and only if holder and term are the ones named. It keeps the term (docs/design.md
 * §1). A live holder learns of it at its next renewal (a conflict) and steps down; until then it
 * may still act, which is what the fencing token is for: use this for stuck or dead holders.
 */
import { systemClock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { ReleaseRefusedError } from "../errors.js";
import { newWriteId, validateName } from "../lease.js";
import { openStore } from "../open-store.js";
import { type CliIo, viewOf } from "./output.js";

export interface ReleaseOptions {
  store: string;
  name: string;
  holder: string;
  term: number;
  json: boolean;
}

export async function releaseCommand(o: ReleaseOptions, io: CliIo): Promise<number> {
  const name = validateName(o.name);
  // A missing database holds no lease to release: never create one.
  const store = await openStore(o.store, { env: io.env, create: false });
  try {
    const current = await store.get(name);
    if (!current) throw new ReleaseRefusedError(`lease "${name}" does not exist; nothing changed`);
    const r = current.record;
    if (r.holder === null) {
      if (r.term !== o.term) {
        throw new ReleaseRefusedError(
          `lease "${name}" is already released, in term ${r.term} (not ${o.term}); nothing changed`,
        );
      }
      report(io, o.json, { released: false, alreadyReleased: true, ...viewOf(current, Date.now()) });
      if (!o.json) io.say(`lease "${name}" was already released (term ${r.term})`);
      return 0;
    }
    if (r.holder !== o.holder || r.term !== o.term) {
      throw new ReleaseRefusedError(
        `lease "${name}" is held by ${r.holder} in term ${r.term}, not by ${o.holder} in term ${o.term}; nothing changed`,
      );
    }
    // Through the one write path: a conflict that shows this very release (an SDK retry of a
    // write that applied) is a success, not "changed while releasing".
    const outcome = await new CasWriter({ store, name, clock: systemClock }).writeSettled(
      { ...r, holder: null, renewedAt: Math.max(Date.now(), r.renewedAt), writeId: newWriteId() },
      current.revision,
    );
    if (outcome.kind === "lost") {
      throw new ReleaseRefusedError(
        `lease "${name}" changed while releasing it (renewed or taken over); nothing changed`,
      );
    }
    report(io, o.json, { released: true, alreadyReleased: false, ...viewOf(outcome.stored, Date.now()) });
    if (!o.json) io.say(`released "${name}" (term ${r.term}, was held by ${r.holder})`);
    return 0;
  } finally {
    await store.close?.();
  }
}

function report(io: CliIo, json: boolean, result: object): void {
  if (json) io.out(JSON.stringify(result));
}
