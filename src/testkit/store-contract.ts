/**
 * The store contract (docs/design.md §2) as one suite every backend runs against its real server.
 * A backend may declare a missing optional capability with a reason; the suite then checks the
 * declared behaviour instead. The safety cases (CAS, one winner of a race, terms) are the same for all.
 */
import { describe, expect, it } from "vitest";
import {
  isLeaseConflictError,
  isLeaseCorruptError,
  isLeaseTermRuleError,
  isLeaseValidationError,
  type LeaseCorruptError,
  type LeaseTermRuleError,
} from "../errors.js";
import { type LeaseRecord, type LeaseStore, MAX_HOLDER_LENGTH, MAX_METADATA_BYTES } from "../lease.js";
import { isUnreadable, type Listed, listedName } from "../listing.js";
import { readMany } from "../read-many.js";
import { makeRecord, SAFETY_CASES } from "./safety-cases.js";

export { casWrite, makeRecord } from "./safety-cases.js";

export interface StoreUnderTest {
  store: LeaseStore;
  dispose?: () => Promise<void>;
}

export interface StoreContractOptions {
  /** Returns a store; names are unique per test, so one shared server is fine. */
  create: () => Promise<StoreUnderTest>;
  /** Set with a reason when the backend cannot list by prefix. */
  noList?: string;
  /** True when a conflict always carries the current record (false: sometimes undefined, documented). */
  conflictCarriesCurrent?: boolean;
  /** Set with a reason when the backend stamps `renewedAt` itself (the HTTP API's server clock). */
  stampsRenewedAt?: string;
  /**
   * True for a store that refuses writes breaking the term rules itself (the HTTP API, which is a
   * trust boundary: src/term-rules.ts). Other stores write what the elector gives them.
   */
  enforcesTermRules?: boolean;
  /** Rounds of each race (concurrent creates, concurrent CAS on one revision). Default 10 (`leasehold doctor`: 30). */
  raceRounds?: number;
  /** Writers in each round of a race. Default 20. */
  raceWriters?: number;
  /**
   * Writes under `name`, past the store (as a foreign tool or a bad migration would), a record
   * leasehold cannot read (not JSON). The suite then checks that `get` reports it, that a listing
   * yields it in its place and lists the rest, and that it is replaced only by a put expecting
   * the revision the store reported for it (an operator's `release --force`).
   */
  plantUnreadable?: (name: string) => Promise<void>;
  /** Set with a reason instead, when nothing can put an unreadable record in this store. */
  cannotHoldUnreadable?: string;
}

/**
 * Expects `p` to reject with an error the guard accepts. Guards, not `instanceof`: a third-party
 * store built against another copy of leasehold throws that copy's classes (docs/design.md §2).
 */
export async function expectRejected(
  p: Promise<unknown>,
  guard: (error: unknown) => boolean,
  label = "",
): Promise<void> {
  const outcome = await p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`${label}: expected a rejection, got ${JSON.stringify(outcome.value)}`);
  if (!guard(outcome.error)) throw new Error(`${label}: expected ${guard.name}, got ${String(outcome.error)}`);
}

let seq = 0;
export function uniqueName(base = "lease"): string {
  return `t${Date.now().toString(36)}-${(seq++).toString(36)}-${Math.random().toString(36).slice(2, 6)}/${base}`;
}

export function describeStoreContract(backend: string, options: StoreContractOptions): void {
  const withStore = (fn: (store: LeaseStore) => Promise<void>) => async () => {
    const { store, dispose } = await options.create();
    try {
      await fn(store);
    } finally {
      await dispose?.();
    }
  };
  /** The record as written, but with the store's own renewedAt where the store stamps it. */
  const asStored = (written: LeaseRecord, actual: LeaseRecord | undefined): LeaseRecord => {
    if (options.stampsRenewedAt === undefined || actual === undefined) return written;
    expect(Number.isSafeInteger(actual.renewedAt)).toBe(true);
    return { ...written, renewedAt: actual.renewedAt };
  };

  describe(`store contract: ${backend}`, () => {
    // The safety cases, shared with `leasehold doctor` (./safety-cases.ts).
    for (const safety of SAFETY_CASES) {
      it(
        safety.name,
        withStore((store) =>
          safety.run({
            store,
            name: (base) => uniqueName(base),
            rounds: options.raceRounds ?? 10,
            writers: options.raceWriters ?? 20,
            ...(options.conflictCarriesCurrent ? { conflictCarriesCurrent: true } : {}),
            ...(options.stampsRenewedAt !== undefined ? { stampsRenewedAt: true } : {}),
          }),
        ),
      );
    }

    it(
      "get of a lease that never existed is null",
      withStore(async (store) => {
        expect(await store.get(uniqueName())).toBeNull();
      }),
    );

    it(
      "reads many leases in one call (getMany where the store has it): each as get reads it, in the order asked, null where none exists, names checked first",
      withStore(async (store) => {
        const root = uniqueName("many");
        const a = await store.put(makeRecord(`${root}/a`, { holder: "alice" }), null);
        const b1 = await store.put(makeRecord(`${root}/b`, { holder: "bob" }), null);
        const b = await store.put(makeRecord(`${root}/b`, { holder: null }), b1.revision);
        const asked = [`${root}/b`, `${root}/missing`, `${root}/a`, `${root}/b`];
        expect(await readMany(store, asked)).toEqual([b, null, a, b]);
        expect(await readMany(store, asked)).toEqual(await Promise.all(asked.map((n) => store.get(n))));
        // Strong: a write acknowledged before the call is what the call sees.
        const a2 = await store.put(makeRecord(`${root}/a`, { holder: "alice", term: 2 }), a.revision);
        expect(await readMany(store, [`${root}/a`])).toEqual([a2]);
        expect(await readMany(store, [])).toEqual([]);
        for (const read of [
          (names: string[]) => readMany(store, names),
          ...(store.getMany ? [(names: string[]) => store.getMany!(names)] : []),
        ]) {
          await expectRejected(read([`${root}/a`, `${root}/x/../a`]), isLeaseValidationError);
        }
      }),
    );

    if (options.enforcesTermRules) {
      it(
        "refuses a write that moves the term back, skips it, or changes holder without term + 1, changing nothing",
        withStore(async (store) => {
          const name = uniqueName();
          const held = await store.put(makeRecord(name, { holder: "alice", term: 1 }), null);
          for (const [patch, rule] of [
            [{ holder: "bob", term: 0 }, "term-decreased"],
            [{ holder: "bob", term: 1 }, "new-holder-needs-next-term"],
            [{ holder: "bob", term: 3 }, "term-skipped"],
            [{ holder: null, term: 2 }, "release-keeps-term"],
          ] as const) {
            const error = await store.put(makeRecord(name, patch), held.revision).catch((e: unknown) => e);
            expect(isLeaseTermRuleError(error), String(error)).toBe(true);
            expect((error as LeaseTermRuleError).rule).toBe(rule);
            expect(await store.get(name)).toEqual(held);
          }
          const released = await store.put(makeRecord(name, { holder: null, term: 1 }), held.revision);
          const taken = await store.put(makeRecord(name, { holder: "bob", term: 2 }), released.revision);
          expect(taken.record).toMatchObject({ holder: "bob", term: 2 });
        }),
      );
    }

    if (options.enforcesTermRules) {
      it(
        "refuses a write that moves a scheduled job's fire back, drops it or reopens a settled one, changing nothing",
        withStore(async (store) => {
          const name = uniqueName("job");
          const at = Date.UTC(2026, 0, 1, 2);
          const settled = await store.put(makeRecord(name, { holder: null, term: 3, fire: { at, done: true } }), null);
          for (const [fire, rule] of [
            [{ at: at - 1000, done: true }, "fire-rewound"],
            [undefined, "fire-rewound"],
            [{ at, done: false }, "fire-reopened"],
          ] as const) {
            const next = makeRecord(name, { holder: null, term: 3, ...(fire ? { fire } : {}) });
            const error = await store.put(next, settled.revision).catch((e: unknown) => e);
            expect(isLeaseTermRuleError(error), String(error)).toBe(true);
            expect((error as LeaseTermRuleError).rule).toBe(rule);
            expect(await store.get(name)).toEqual(settled);
          }
        }),
      );
    }

    it(
      "a scheduled job's fire (a typed field of the record) round-trips through put, get, a conflict and a listing",
      withStore(async (store) => {
        const name = uniqueName("job");
        const at = Date.UTC(2026, 0, 1, 2);
        const running = makeRecord(name, { holder: "alice", term: 1, fire: { at, done: false } });
        const first = await store.put(running, null);
        expect(first.record).toEqual(asStored(running, first.record));
        const done = makeRecord(name, { holder: null, term: 1, fire: { at, done: true } });
        const second = await store.put(done, first.revision);
        expect(second.record.fire).toEqual({ at, done: true });
        expect(await store.get(name)).toEqual(second);
        const stale = makeRecord(name, { holder: "bob", term: 2, fire: { at: at + 60_000, done: false } });
        const conflict = await store.put(stale, first.revision).catch((e: unknown) => e);
        const current = (conflict as { current?: { record: LeaseRecord } }).current;
        if (current) expect(current.record.fire).toEqual({ at, done: true });
        if (store.list) {
          const listed = [];
          for await (const s of store.list(name)) listed.push(s);
          expect(listed).toEqual([second]);
        }
      }),
    );

    it(
      "metadata, unicode and maximum-size values round-trip exactly",
      withStore(async (store) => {
        const base = uniqueName("x");
        const name = `${base}${"n".repeat(191 - base.length)}z`;
        expect(name.length).toBe(192);
        const holder = `ünïcødé-☃-🦀-${"h".repeat(MAX_HOLDER_LENGTH)}`.slice(0, MAX_HOLDER_LENGTH);
        const metadata: Record<string, string> = { addr: "10.0.0.7:8080", note: "führer-frei ✓ 日本語 🦀", empty: "" };
        // Fill metadata to exactly the byte limit.
        const used = new TextEncoder().encode(JSON.stringify({ ...metadata, pad: "" })).length;
        metadata.pad = "p".repeat(MAX_METADATA_BYTES - used);
        expect(new TextEncoder().encode(JSON.stringify(metadata)).length).toBe(MAX_METADATA_BYTES);
        const record = makeRecord(name, { holder, metadata, term: 2 ** 40, leaseMs: 24 * 3600 * 1000 });
        const stored = await store.put(record, null);
        expect(stored.record).toEqual(asStored(record, stored.record));
        expect((await store.get(name))?.record).toEqual(stored.record);
      }),
    );

    it(
      "rejects an invalid record before writing anything",
      withStore(async (store) => {
        const name = uniqueName();
        const big = { pad: "p".repeat(MAX_METADATA_BYTES) };
        await expectRejected(store.put(makeRecord(name, { metadata: big }), null), isLeaseValidationError);
        await expectRejected(store.put(makeRecord(name, { term: -1 }), null), isLeaseValidationError);
        await expectRejected(store.put(makeRecord("Bad Name"), null), isLeaseValidationError);
        expect(await store.get(name)).toBeNull();
      }),
    );

    it(
      'names with an empty, "." or ".." segment are refused before any I/O, and the names they would resolve to stay as they were',
      withStore(async (store) => {
        const root = uniqueName("paths");
        const target = await store.put(makeRecord(`${root}/b`), null);
        const moving = [
          `${root}/x/../b`,
          `${root}/./b`,
          `${root}//b`,
          `${root}/b/..`,
          `${root}/b/.`,
          `${root}/.b`,
          `${root}/b.`,
          `${root}/-b`,
          `../${root}/b`,
          `${root}/b/`,
        ];
        for (const name of moving) {
          await expectRejected(store.put(makeRecord(name, { holder: "mallory" }), null), isLeaseValidationError, name);
          await expectRejected(
            store.put(makeRecord(name, { holder: "mallory", term: 2 }), target.revision),
            isLeaseValidationError,
            name,
          );
          await expectRejected(store.get(name), isLeaseValidationError, name);
        }
        if (store.list) {
          for (const prefix of [`${root}/x/../`, `${root}//`, `${root}/./`, `../`]) {
            const listing = (async () => {
              for await (const _ of store.list!(prefix)) return;
            })();
            await expectRejected(listing, isLeaseValidationError, prefix);
          }
          const names: string[] = [];
          for await (const s of store.list(`${root}/`)) names.push(listedName(s));
          expect(names).toEqual([`${root}/b`]);
        }
        expect(await store.get(`${root}/b`)).toEqual(target);
      }),
    );

    it(
      options.plantUnreadable
        ? "a record it cannot read: get throws LeaseCorruptError naming it, a listing yields it in its place and lists the rest, and only a put expecting its reported revision replaces it"
        : `holds only records it could read, so none is unreadable (${options.cannotHoldUnreadable ?? "no reason given: pass plantUnreadable or cannotHoldUnreadable"})`,
      withStore(async (store) => {
        const plant = options.plantUnreadable;
        if (!plant) {
          expect(options.cannotHoldUnreadable, "plantUnreadable or cannotHoldUnreadable").toEqual(expect.any(String));
          return;
        }
        const root = uniqueName("unreadable");
        const [a, b, c] = [`${root}/a`, `${root}/b`, `${root}/c`];
        const first = await store.put(makeRecord(a), null);
        await plant(b);
        const third = await store.put(makeRecord(c), null);
        const error = await store.get(b).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isLeaseCorruptError(error), String(error)).toBe(true);
        expect((error as LeaseCorruptError).lease).toBe(b);
        expect((error as LeaseCorruptError).issues.length).toBeGreaterThan(0);
        // A write that does not expect the record's revision never overwrites it.
        await expectRejected(store.put(makeRecord(b), null), (e) => isLeaseCorruptError(e) || isLeaseConflictError(e));
        if (store.list) {
          const listed: Listed[] = [];
          for await (const entry of store.list(`${root}/`)) listed.push(entry);
          expect(listed.map(listedName)).toEqual([a, b, c]);
          expect(listed[0]).toEqual(first);
          expect(listed[2]).toEqual(third);
          const entry = listed[1]!;
          expect(isUnreadable(entry) && isLeaseCorruptError(entry.unreadable)).toBe(true);
          expect(isUnreadable(entry) && entry.unreadable.lease).toBe(b);
          // It counts as one entry of a page, so a page of unreadable records is bounded too.
          const page: string[] = [];
          for await (const e of store.list(`${root}/`, { limit: 2 })) page.push(listedName(e));
          expect(page).toEqual([a, b]);
          const after: string[] = [];
          for await (const e of store.list(`${root}/`, { startAfter: b })) after.push(listedName(e));
          expect(after).toEqual([c]);
        }
        const revision = (error as LeaseCorruptError).revision;
        if (revision !== undefined) {
          const cleared = await store.put(makeRecord(b, { holder: null, term: 7 }), revision);
          expect(cleared.record).toMatchObject({ name: b, holder: null, term: 7 });
          expect(await store.get(b)).toEqual(cleared);
        }
      }),
    );

    it(
      options.noList === undefined
        ? "lists by prefix in name order, with startAfter and limit"
        : `offers no list, so callers that need one (sharding, the API's list route) can refuse it up front (${options.noList})`,
      withStore(async (store) => {
        if (options.noList !== undefined) {
          expect(store.list).toBeUndefined();
          return;
        }
        const root = uniqueName("root");
        const names = [`${root}/a/2`, `${root}/a/1`, `${root}/a/10`, `${root}/b/1`];
        for (const n of names) await store.put(makeRecord(n), null);
        const list = async (prefix: string, o?: { startAfter?: string; limit?: number }) => {
          const out: string[] = [];
          for await (const s of store.list!(prefix, o)) out.push(listedName(s));
          return out;
        };
        expect(await list(`${root}/a/`)).toEqual([`${root}/a/1`, `${root}/a/10`, `${root}/a/2`]);
        expect(await list(`${root}/a/`, { startAfter: `${root}/a/1` })).toEqual([`${root}/a/10`, `${root}/a/2`]);
        expect(await list(`${root}/`, { limit: 2 })).toEqual([`${root}/a/1`, `${root}/a/10`]);
        expect(await list(`${root}/zzz`)).toEqual([]);
      }),
    );
  });
}
