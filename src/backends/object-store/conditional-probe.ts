/**
 * Does this server keep the conditional-write contract? Checked once per process and store
 * location, before the first lease is written, on objects of the probe's own under the store's
 * prefix (names no lease can have, so `list` never shows them):
 *
 *   1. `<prefix>.leasehold-probe.json` is created if absent (If-None-Match: *), or read;
 *   2. a second create of it must be refused;
 *   3. a replace on its current revision (If-Match) must succeed,
 *   4. and the same replace again, now stale, must be refused;
 *   5. an If-Match on a key that does not exist must be refused and create nothing.
 *
 * A server that accepts 2, 4 or 5, or answers `501 Not Implemented` to a conditional write, is
 * refused with a `StoreContractError` naming the server and what failed, remembered for the
 * process. Any other failure (the network, permissions) is reported as such and the next write
 * checks again. The probe object stays (a few hundred bytes); the refused step 5 leaves nothing.
 * Runtime-neutral.
 */
import { isLeaseStoreError, isStoreContractError, LeaseStoreError, StoreContractError } from "../../errors.js";
import { newWriteId } from "../../lease.js";
import type { ObjectService } from "./store.js";

const checked = new Map<string, Promise<void>>();

export function probeConditionalWrites(service: ObjectService, prefix: string, server: string): Promise<void> {
  const key = `${prefix}.leasehold-probe.json`;
  const id = `${server}\n${service.where(key)}`;
  let probe = checked.get(id);
  if (probe === undefined) {
    probe = new Probe(service, key, server).run();
    checked.set(id, probe);
    probe.catch((error: unknown) => {
      if (!isStoreContractError(error)) checked.delete(id);
    });
  }
  return probe;
}

/** What a conditional write the probe sent came to. */
type Outcome = { kind: "applied"; revision: string } | { kind: "refused" };

class Probe {
  constructor(
    private readonly service: ObjectService,
    private readonly key: string,
    private readonly server: string,
  ) {}

  async run(): Promise<void> {
    let revision = await this.current();
    if (revision === undefined) {
      const created = await this.write("create", null, "a PUT with If-None-Match: *");
      revision = created.kind === "applied" ? created.revision : await this.current();
    }
    if ((await this.write("second create", null, "a PUT with If-None-Match: *")).kind === "applied") {
      throw this.broken("it accepted a PUT with If-None-Match: * on an object that exists (a second create)");
    }
    // Another process probing at once may replace the object first: read again and retry.
    for (let attempt = 0; ; attempt++) {
      if (revision === undefined) throw this.failed("the probe object vanished while it was being checked");
      const replaced = await this.write("replace", revision, "a PUT with If-Match");
      if (replaced.kind === "applied") break;
      if (attempt === 4) throw this.failed("another writer kept replacing the probe object");
      revision = await this.current();
    }
    if ((await this.write("stale replace", revision, "a PUT with If-Match")).kind === "applied") {
      throw this.broken("it accepted a PUT with a stale If-Match (an ETag that had been replaced)");
    }
    const absent = `${this.key.slice(0, -".json".length)}-absent-${newWriteId()}.json`;
    if (
      (await this.write("if-match on nothing", '"leasehold-probe"', "a PUT with If-Match", absent)).kind === "applied"
    ) {
      throw this.broken("it created an object for a PUT with If-Match on a key that did not exist");
    }
  }

  /** The probe object's revision, or undefined when it does not exist. */
  private async current(): Promise<string | undefined> {
    try {
      return (await this.service.read(this.key))?.revision;
    } catch (error) {
      const failure = this.service.describe(error);
      const advice = this.service.readAdvice?.(failure);
      throw this.failed(`${this.service.words.read} failed: ${failure.message}${advice ? `: ${advice}` : ""}`, error);
    }
  }

  private async write(step: string, expected: string | null, request: string, key = this.key): Promise<Outcome> {
    const body = JSON.stringify({ leaseholdProbe: step, writeId: newWriteId() });
    try {
      const revision = await this.service.write(key, body, expected);
      if (revision === undefined) throw this.failed(`the ${step} answered without ${this.service.words.revision}`);
      return { kind: "applied", revision };
    } catch (error) {
      if (isLeaseStoreError(error)) throw error;
      const failure = this.service.describe(error);
      if (failure.status === 501) {
        throw this.broken(
          `it answered ${request} with 501 Not Implemented: it does not support conditional writes`,
          error,
        );
      }
      if (this.service.refusal(failure, expected) !== undefined) return { kind: "refused" };
      throw this.failed(`the ${step} (${request}) failed: ${failure.message}`, error);
    }
  }

  /** The server breaks the contract: refused for good. */
  private broken(what: string, cause?: unknown): StoreContractError {
    return new StoreContractError(
      `${this.server} does not keep the conditional-write contract leasehold relies on: ${what}. No lease was written; use a server that refuses such writes (docs/s3.md lists those checked) (checked on ${this.service.where(this.key)})`,
      cause === undefined ? {} : { cause },
    );
  }

  /** The check itself could not finish: nothing is concluded, the next write checks again. */
  private failed(what: string, cause?: unknown): LeaseStoreError {
    return new LeaseStoreError(
      `${this.service.service} conditional-write check of ${this.server} on ${this.service.where(this.key)}: ${what}; no lease was written`,
      { ambiguous: false, ...(cause === undefined ? {} : { cause }) },
    );
  }
}
