/**
 * A sharded group made by leasehold 0.1.0 (records `<group>/config`, `/members/`, `/buckets/`) is
 * refused by this version's members, naming how to move it; `migrateGroup` moves it only once no
 * old member may be live, and every bucket then goes on above its old term (src/sharding/migrate.ts).
 */
import { describe, expect, it } from "vitest";
import { type LeaseRecord, newWriteId } from "../../src/lease.js";
import { bucketName, configName, decodeConfig, legacyConfigName } from "../../src/sharding/layout.js";
import { migrateGroup } from "../../src/sharding/migrate.js";
import { Group, TIMING } from "./group-harness.js";

const { leaseMs, settleMs } = TIMING;

const old = (name: string, patch: Partial<LeaseRecord>): LeaseRecord => ({
  name,
  holder: null,
  term: 0,
  leaseMs,
  acquiredAt: 0,
  renewedAt: 0,
  metadata: {},
  writeId: newWriteId(),
  ...patch,
});

/** The records 0.1.0 left for group "g" of 4 buckets: bucket i at term 10 + i, held by a's ended session. */
async function legacyGroup(g: Group): Promise<void> {
  await g.store.put(old(legacyConfigName("g"), { metadata: { buckets: "4", epoch: "1", previous: "0" } }), null);
  await g.store.put(old("g/members/a", { term: 3, metadata: { fenced: "b" } }), null);
  for (let i = 0; i < 4; i++) {
    const metadata = { session: "3", held: "1", epoch: "1" };
    await g.store.put(old(`g/buckets/${i}`, { holder: "a", term: 10 + i, metadata }), null);
  }
}

describe("a 0.1.0 group", () => {
  it("is refused by this version's members, naming the command that moves it; nothing is written", async () => {
    const g = new Group(4);
    await legacyGroup(g);
    g.join("a");
    await g.until(() => g.errors.length > 0, 2 * leaseMs);
    expect(g.errors[0]).toContain('group "g" was made by leasehold 0.1.0');
    expect(g.errors[0]).toContain("leasehold migrate-group g --store <url>");
    expect(await g.store.get(configName("g"))).toBeNull();
    expect(g.assignments).toEqual([]);
  });

  it("moves only once no old member may be live, then every bucket goes on above its old term", async () => {
    const g = new Group(4);
    await legacyGroup(g);
    const live = await g.store.put(
      old("g/members/b", { holder: "b", term: 2, renewedAt: g.clock.wallNow(), metadata: {} }),
      null,
    );
    const before = (await g.store.get(legacyConfigName("g")))!;
    await expect(migrateGroup({ store: g.store, group: "g", clock: g.clock })).rejects.toThrow(
      /member "b" of group "g" \(g\/members\/b\) may still be live/,
    );
    expect(await g.store.get(legacyConfigName("g"))).toEqual(before);
    expect(await g.store.get(configName("g"))).toBeNull();

    await g.store.put({ ...live.record, holder: null, writeId: newWriteId() }, live.revision);
    const moved = await migrateGroup({ store: g.store, group: "g", clock: g.clock });
    expect(moved).toMatchObject({ moved: true, buckets: 4, config: { buckets: 4, epoch: 1, previous: 0 } });
    // The old config can no longer be planned with; a second run has nothing to do.
    const marked = (await g.store.get(legacyConfigName("g")))!.record;
    expect(decodeConfig(marked)).toBeUndefined();
    expect(marked.metadata.moved).toBe(configName("g"));
    expect(await migrateGroup({ store: g.store, group: "g", clock: g.clock })).toMatchObject({ moved: false });
    for (let i = 0; i < 4; i++) {
      expect((await g.store.get(bucketName("g", i)))!.record).toMatchObject({ holder: null, term: 10 + i });
    }

    g.join("a");
    g.join("b");
    await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
    for (let i = 0; i < 4; i++) {
      const first = g.assignments.find((a) => a.bucket === i);
      expect(first?.term, `bucket ${i}`).toBe(10 + i + 1);
    }
    expect(g.violations).toEqual([]);
  });
});
