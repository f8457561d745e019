/**
 * `reshard({ store, group, buckets })`: the one documented way to change a group's bucket count
 * (docs/sharding.md, "Changing the bucket count"). Names carry no count, so nothing is renamed; no
 * record is left owned.
 *
 * 1. The config record gets the new count, epoch + 1, and the old count as `previous` (one CAS).
 * 2. Every bucket record of an older epoch is stamped with the new epoch (one CAS each, holder and
 *    term kept), and any record missing below the old count is created free and stamped. After
 *    this no member still on the old count can take or move a bucket: its write would be on a
 *    revision from before the stamp, and a record newer than its config sends it to read the config.
 *
 * The members do the rest on their own (their next poll reads the new config): each stops work on
 * its buckets and releases them; once no bucket is held under the old epoch by a session that may
 * live (the epoch barrier), buckets are taken again under the new count, each with term + 1.
 * Records at or beyond the new count stay free (released by their owner, or by any member once
 * their session is over). Running it again with the same count only completes step 2, so a step
 * interrupted half-way is finished by running it again (the members also finish step 2 themselves).
 * Runtime-neutral.
 */
import { type Clock, systemClock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { LeaseCorruptError, LeaseStoreError } from "../errors.js";
import type { LeaseStore, Stored } from "../lease.js";
import { readable } from "../listing.js";
import { validateBucketCount } from "./bucket-of.js";
import {
  bucketIndexOf,
  bucketName,
  bucketsPrefix,
  configName,
  configRecord,
  decodeBucket,
  decodeConfig,
  type GroupConfig,
  validateGroup,
} from "./layout.js";
import { freeBucketRecord, stampRecord } from "./next-records.js";

export interface ReshardOptions {
  store: LeaseStore;
  group: string;
  /** The new bucket count. */
  buckets: number;
  clock?: Clock;
  /** Longest one store call may take. Default 10 s. */
  callTimeoutMs?: number;
}

export interface ReshardResult {
  /** The count before, and now. */
  from: number;
  to: number;
  /** The config epoch now in force. */
  epoch: number;
  /** Bucket records stamped or created with that epoch by this call. */
  stamped: number;
}

const ATTEMPTS = 5;

export async function reshard(options: ReshardOptions): Promise<ReshardResult> {
  const group = validateGroup(options.group);
  const buckets = validateBucketCount(options.buckets, "buckets", "reshard options");
  const { store } = options;
  if (!store.list) throw new LeaseStoreError("reshard needs a store that can list records", { ambiguous: false });
  const clock = options.clock ?? systemClock;
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  const writer = (name: string) => new CasWriter({ store, name, clock, callTimeoutMs });

  // 1. The config.
  const configWriter = writer(configName(group));
  let from = 0;
  let config: GroupConfig | undefined;
  for (let attempt = 0; attempt < ATTEMPTS && !config; attempt++) {
    const current = await configWriter.read();
    const before = current ? decodeConfig(current.record) : undefined;
    if (current && !before) {
      throw new LeaseCorruptError(configName(group), [
        { path: "metadata", message: "expected buckets (1-4096), epoch (>= 1) and previous as whole numbers" },
      ]);
    }
    from = before?.buckets ?? 0;
    if (before && before.buckets === buckets) {
      config = before;
      break;
    }
    const next: GroupConfig = before
      ? { buckets, epoch: before.epoch + 1, previous: before.buckets }
      : { buckets, epoch: 1, previous: 0 };
    const outcome = await configWriter.writeSettled(
      { ...configRecord(group, next, current?.record.leaseMs ?? 15_000, clock.wallNow()) },
      current?.revision ?? null,
    );
    if (outcome.kind === "applied") config = next;
  }
  if (!config)
    throw new LeaseStoreError(`the config of group "${group}" kept changing; try again`, { ambiguous: false });

  // 2. Stamp older records; create missing ones below the previous count.
  const seen = new Set<number>();
  let stamped = 0;
  const records: Stored[] = [];
  for await (const stored of readable(store.list(bucketsPrefix(group)))) records.push(stored);
  for (const stored of records) {
    const index = bucketIndexOf(group, stored.record.name);
    if (index === undefined) continue;
    seen.add(index);
    if (await stampOne(group, writer(stored.record.name), stored, config.epoch)) stamped++;
  }
  for (let index = 0; index < config.previous; index++) {
    if (seen.has(index)) continue;
    const w = writer(bucketName(group, index));
    const outcome = await w.writeSettled(freeBucketRecord(group, index, config.epoch, 15_000, clock.wallNow()), null);
    if (outcome.kind === "applied") stamped++;
    else if (outcome.current && (await stampOne(group, w, outcome.current, config.epoch))) stamped++;
  }
  return { from, to: config.buckets, epoch: config.epoch, stamped };
}

/** Stamps `stored` with `epoch` unless it already carries it (or a newer one); retries on conflict. */
async function stampOne(group: string, writer: CasWriter, stored: Stored, epoch: number): Promise<boolean> {
  let current: Stored | null | undefined = stored;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (!current) current = await writer.read();
    if (!current) return false;
    const info = decodeBucket(group, current);
    if (!info || info.epoch >= epoch) return false;
    const outcome = await writer.writeSettled(stampRecord(info, epoch), current.revision);
    if (outcome.kind === "applied") return true;
    current = outcome.current;
  }
  throw new LeaseStoreError(`bucket record "${stored.record.name}" kept changing; run reshard again`, {
    ambiguous: false,
  });
}
