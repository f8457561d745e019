/**
 * `migrateGroup({ store, group })`: moves a sharded group made by leasehold 0.1.0 (records
 * `<group>/config`, `<group>/members/<id>`, `<group>/buckets/<i>`) to the names this version uses
 * (`<group>/_config`, `/_members/`, `/_buckets/`: docs/design.md §1 "Protocol records"), keeping
 * every bucket's fencing term. Members of this version refuse such a group until it is moved
 * (`legacyGroupRefusal`).
 *
 * 1. Refused while any member of the old group may still be live (held, and not yet expired by its
 *    stamps plus `maxSkewMs`): stop them first.
 * 2. The old config is marked moved (one CAS; its count removed), so no old member can plan with it
 *    again, then the members are checked once more (one that renewed in between refuses the move;
 *    running it again, once stopped, finishes it).
 * 3. Each old bucket record is copied free at its term (holder null, term kept), so the next owner
 *    takes it at term + 1 and fencing tokens keep growing; then the new config (same count, epoch
 *    and previous count) is created last, so a member of this version sees the group only once
 *    every bucket is there. Member records are not copied: a member's first session under the new
 *    name starts at term 1, and no bucket is held under it.
 *
 * Idempotent: a group already moved answers `moved: false`. Runtime-neutral.
 */
import { type Clock, systemClock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { LeaseStoreError } from "../errors.js";
import { type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "../lease.js";
import { readable } from "../listing.js";
import { freeByStamps } from "../tenure.js";
import {
  bucketMetadata,
  bucketName,
  configName,
  configRecord,
  decodeConfig,
  type GroupConfig,
  legacyConfigName,
  validateGroup,
} from "./layout.js";

export interface MigrateGroupOptions {
  store: LeaseStore;
  group: string;
  /** The skew bound the members ran with: a member is live until renewedAt + leaseMs + this. Default 1000. */
  maxSkewMs?: number;
  clock?: Clock;
}

export interface MigrateGroupResult {
  /** False when the group was moved already (or never existed under the old names). */
  moved: boolean;
  /** Bucket records carried over, each at its old term. */
  buckets: number;
  config: GroupConfig | undefined;
}

const legacyMembers = (group: string) => `${group}/members/`;
const legacyBuckets = (group: string) => `${group}/buckets/`;

/** The old config's metadata once moved: no count (old members cannot plan), where it went, the count it had. */
function movedMetadata(group: string, config: Record<string, string>): Record<string, string> {
  const { buckets, ...rest } = config;
  return { ...rest, moved: configName(group), movedBuckets: buckets ?? "" };
}

/** The config a group had before it was moved, read from the old record, marked or not. */
function configBefore(group: string, record: LeaseRecord): GroupConfig | undefined {
  const m = record.metadata;
  if (m.moved !== configName(group)) return decodeConfig(record);
  return decodeConfig({ ...record, metadata: { ...m, buckets: m.movedBuckets ?? "" } });
}

export async function migrateGroup(options: MigrateGroupOptions): Promise<MigrateGroupResult> {
  const { store } = options;
  const group = validateGroup(options.group);
  const clock = options.clock ?? systemClock;
  const maxSkewMs = options.maxSkewMs ?? 1000;
  const list = store.list;
  if (!list) throw new LeaseStoreError("migrating a group needs a store that can list", { ambiguous: false });
  const all = async (prefix: string): Promise<Stored[]> => {
    const out: Stored[] = [];
    for await (const s of readable(list.call(store, prefix))) out.push(s);
    return out;
  };
  const refuse = (why: string) => new LeaseStoreError(`${why}; run this again`, { ambiguous: false });
  if (await store.get(configName(group))) return { moved: false, buckets: 0, config: undefined };
  const old = await store.get(legacyConfigName(group));
  const config =
    old && old.record.holder === null && old.record.term === 0 ? configBefore(group, old.record) : undefined;
  if (!old || !config) return { moved: false, buckets: 0, config: undefined };

  const refuseLive = async () => {
    const wall = clock.wallNow();
    for (const m of await all(legacyMembers(group))) {
      const r = m.record;
      if (!freeByStamps(r, wall, maxSkewMs)) {
        throw refuse(
          `member "${r.holder}" of group "${group}" (${r.name}) may still be live (renewed at ${new Date(r.renewedAt).toISOString()}): stop every member of the group and wait out its lease`,
        );
      }
    }
  };
  await refuseLive();
  if (old.record.metadata.moved !== configName(group)) {
    const marked = { ...old.record, metadata: movedMetadata(group, old.record.metadata), writeId: newWriteId() };
    const outcome = await new CasWriter({ store, name: old.record.name, clock }).writeSettled(marked, old.revision);
    if (outcome.kind === "lost") throw refuse(`${old.record.name} changed meanwhile`);
    await refuseLive();
  }

  let buckets = 0;
  const prefix = legacyBuckets(group);
  for (const bucket of await all(prefix)) {
    const index = bucket.record.name.slice(prefix.length);
    if (!/^(0|[1-9][0-9]{0,4})$/.test(index)) continue;
    const name = bucketName(group, Number(index));
    const epoch = Number(bucket.record.metadata.epoch);
    const wall = clock.wallNow();
    const copy: LeaseRecord = {
      name,
      holder: null,
      term: bucket.record.term,
      leaseMs: bucket.record.leaseMs,
      acquiredAt: wall,
      renewedAt: wall,
      metadata: bucketMetadata(null, Number.isSafeInteger(epoch) && epoch > 0 ? epoch : config.epoch),
      writeId: newWriteId(),
    };
    const existing = await store.get(name);
    if (existing && existing.record.term >= copy.term) continue; // carried over by an earlier run
    const outcome = await new CasWriter({ store, name, clock }).writeSettled(copy, existing?.revision ?? null);
    if (outcome.kind === "lost") throw refuse(`${name} changed meanwhile`);
    buckets++;
  }
  const fresh = configRecord(group, config, old.record.leaseMs, clock.wallNow());
  const created = await new CasWriter({ store, name: fresh.name, clock }).writeSettled(fresh, null);
  return { moved: created.kind === "applied", buckets, config };
}
