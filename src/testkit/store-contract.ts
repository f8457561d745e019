/**
 * The store contract (docs/design.md §2) as one suite every backend runs against its real server.
 * A backend may declare a missing optional capability with a reason; the suite then checks the
 * declared behaviour instead. The safety cases (CAS, one winner of a race, terms) are the same for all.
 */
import { describe, expect, it } from "vitest";
import { systemClock } from "../clock.js";
import { CasWriter, type WriteOutcome } from "../elector/cas.js";
import { LeaseConflictError, LeaseTermRuleError, LeaseValidationError } from "../errors.js";
import {
  type LeaseRecord,
  type LeaseStore,
  MAX_HOLDER_LENGTH,
  MAX_METADATA_BYTES,
  newWriteId,
  type Stored,
} from "../lease.js";

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
}

/** Writes through the one write path (src/elector/cas.ts), as the elector and the API do. */
export function casWrite(store: LeaseStore, next: LeaseRecord, expected: string | null): Promise<WriteOutcome> {
  return new CasWriter({ store, name: next.name, clock: systemClock }).write(next, expected);
}

let seq = 0;
export function uniqueName(base = "lease"): string {
  return `t${Date.now().toString(36)}-${(seq++).toString(36)}-${Math.random().toString(36).slice(2, 6)}/${base}`;
}

export function makeRecord(name: string, patch: Partial<LeaseRecord> = {}): LeaseRecord {
  return {
    name,
    holder: "alice",
    term: 1,
    leaseMs: 15_000,
    acquiredAt: 1_700_000_000_000,
    renewedAt: 1_700_000_000_000,
    metadata: {},
    writeId: newWriteId(),
    ...patch,
  };
}

async function conflictOf(p: Promise<unknown>): Promise<LeaseConflictError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LeaseConflictError);
  return error as LeaseConflictError;
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
  const expectCurrent = (error: LeaseConflictError, expected: Stored) => {
    if (error.current === undefined && !options.conflictCarriesCurrent) return;
    expect(error.current?.record).toEqual(expected.record);
    expect(error.current?.revision).toBe(expected.revision);
  };
  /** The record as written, but with the store's own renewedAt where the store stamps it. */
  const asStored = (written: LeaseRecord, actual: LeaseRecord | undefined): LeaseRecord => {
    if (options.stampsRenewedAt === undefined || actual === undefined) return written;
    expect(Number.isSafeInteger(actual.renewedAt)).toBe(true);
    return { ...written, renewedAt: actual.renewedAt };
  };

  describe(`store contract: ${backend}`, () => {
    it(
      "get of a lease that never existed is null",
      withStore(async (store) => {
        expect(await store.get(uniqueName())).toBeNull();
      }),
    );

    it(
      "creates if absent, and a second create conflicts carrying the first",
      withStore(async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        expect(first.record).toEqual(asStored(makeRecord(name, { writeId: first.record.writeId }), first.record));
        expect(await store.get(name)).toEqual(first);
        const error = await conflictOf(store.put(makeRecord(name, { holder: "bob" }), null));
        expect(error.lease).toBe(name);
        expectCurrent(error, first);
        expect(await store.get(name)).toEqual(first);
      }),
    );

    it(
      "replaces on the current revision and issues a new one",
      withStore(async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        const next = makeRecord(name, { renewedAt: first.record.renewedAt + 5000 });
        const second = await store.put(next, first.revision);
        expect(second.revision).not.toBe(first.revision);
        expect(second.record).toEqual(asStored(next, second.record));
        expect(await store.get(name)).toEqual(second);
      }),
    );

    it(
      "a stale revision conflicts with the current record and changes nothing",
      withStore(async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        const second = await store.put(makeRecord(name, { renewedAt: 1 }), first.revision);
        const error = await conflictOf(store.put(makeRecord(name, { holder: "mallory" }), first.revision));
        expectCurrent(error, second);
        expect(await store.get(name)).toEqual(second);
      }),
    );

    it(
      "a re-sent write that already applied conflicts carrying itself, and the write path counts it applied",
      withStore(async (store) => {
        const name = uniqueName();
        const create = makeRecord(name);
        const first = await store.put(create, null);
        const again = await conflictOf(store.put(create, null));
        expectCurrent(again, first);
        expect(await casWrite(store, create, null)).toMatchObject({ kind: "applied", stored: first });
        const renewal = makeRecord(name, { renewedAt: first.record.renewedAt + 1000 });
        const second = await store.put(renewal, first.revision);
        expectCurrent(await conflictOf(store.put(renewal, first.revision)), second);
        expect(await casWrite(store, renewal, first.revision)).toMatchObject({ kind: "applied", stored: second });
        // Someone else's write on that revision is a loss, carrying the record that won.
        const lost = await casWrite(store, makeRecord(name, { holder: "bob", term: 2 }), first.revision);
        expect(lost).toEqual({ kind: "lost", current: second });
        expect(await store.get(name)).toEqual(second);
      }),
    );

    it(
      "50 concurrent CAS attempts on one revision: exactly one wins",
      withStore(async (store) => {
        const name = uniqueName();
        // Taken from free (released), so a store that refuses to hand over a held lease (the API)
        // races the same way as every other.
        const held = await store.put(makeRecord(name), null);
        const base = await store.put(makeRecord(name, { holder: null }), held.revision);
        const attempts = Array.from({ length: 50 }, (_, i) =>
          store.put(makeRecord(name, { holder: `c${i}`, term: 2 }), base.revision),
        );
        const results = await Promise.allSettled(attempts);
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r) => r.status === "rejected");
        expect(won).toHaveLength(1);
        for (const r of lost) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(LeaseConflictError);
        const winner = (won[0] as PromiseFulfilledResult<Stored>).value;
        expect(await store.get(name)).toEqual(winner);
      }),
    );

    it(
      "50 concurrent creates of one lease: exactly one wins",
      withStore(async (store) => {
        const name = uniqueName();
        const results = await Promise.allSettled(
          Array.from({ length: 50 }, (_, i) => store.put(makeRecord(name, { holder: `c${i}` }), null)),
        );
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(LeaseConflictError);
      }),
    );

    it(
      "terms are never reused: a released record stays, so it cannot be created afresh at term 1",
      withStore(async (store) => {
        const name = uniqueName();
        const t1 = await store.put(makeRecord(name, { term: 1 }), null);
        const released = await store.put(makeRecord(name, { holder: null, term: 1 }), t1.revision);
        expect((await store.get(name))?.record).toMatchObject({ holder: null, term: 1 });
        await conflictOf(store.put(makeRecord(name, { holder: "bob", term: 1 }), null));
        const t2 = await store.put(makeRecord(name, { holder: "bob", term: 2 }), released.revision);
        expect((await store.get(name))?.record).toMatchObject({ holder: "bob", term: 2 });
        await conflictOf(store.put(makeRecord(name, { holder: "carol", term: 2 }), released.revision));
        expect((await store.get(name))?.revision).toBe(t2.revision);
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
            expect(error).toBeInstanceOf(LeaseTermRuleError);
            expect((error as LeaseTermRuleError).rule).toBe(rule);
            expect(await store.get(name)).toEqual(held);
          }
          const released = await store.put(makeRecord(name, { holder: null, term: 1 }), held.revision);
          const taken = await store.put(makeRecord(name, { holder: "bob", term: 2 }), released.revision);
          expect(taken.record).toMatchObject({ holder: "bob", term: 2 });
        }),
      );
    }

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
        await expect(store.put(makeRecord(name, { metadata: big }), null)).rejects.toBeInstanceOf(LeaseValidationError);
        await expect(store.put(makeRecord(name, { term: -1 }), null)).rejects.toBeInstanceOf(LeaseValidationError);
        await expect(store.put(makeRecord("Bad Name"), null)).rejects.toBeInstanceOf(LeaseValidationError);
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
          await expect(store.put(makeRecord(name, { holder: "mallory" }), null), name).rejects.toBeInstanceOf(
            LeaseValidationError,
          );
          await expect(
            store.put(makeRecord(name, { holder: "mallory", term: 2 }), target.revision),
            name,
          ).rejects.toBeInstanceOf(LeaseValidationError);
          await expect(store.get(name), name).rejects.toBeInstanceOf(LeaseValidationError);
        }
        if (store.list) {
          for (const prefix of [`${root}/x/../`, `${root}//`, `${root}/./`, `../`]) {
            const listing = (async () => {
              for await (const _ of store.list!(prefix)) return;
            })();
            await expect(listing, prefix).rejects.toBeInstanceOf(LeaseValidationError);
          }
          const names: string[] = [];
          for await (const s of store.list(`${root}/`)) names.push(s.record.name);
          expect(names).toEqual([`${root}/b`]);
        }
        expect(await store.get(`${root}/b`)).toEqual(target);
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
          for await (const s of store.list!(prefix, o)) out.push(s.record.name);
          return out;
        };
        expect(await list(`${root}/a/`)).toEqual([`${root}/a/1`, `${root}/a/10`, `${root}/a/2`]);
        expect(await list(`${root}/a/`, { startAfter: `${root}/a/1` })).toEqual([`${root}/a/10`, `${root}/a/2`]);
        expect(await list(`${root}/`, { limit: 2 })).toEqual([`${root}/a/1`, `${root}/a/10`]);
        expect(await list(`${root}/zzz`)).toEqual([]);
      }),
    );

    it(
      "ABA: a revision read at A fails after A -> B -> A' (A's fields again, with a new writeId)",
      withStore(async (store) => {
        const name = uniqueName();
        const a = await store.put(makeRecord(name), null);
        const b = await store.put(makeRecord(name, { renewedAt: a.record.renewedAt + 1 }), a.revision);
        // Content-derived revisions (S3 ETags are MD5s of the body) would bring A's revision back
        // for A's exact bytes; the writeId keeps every body, and so every revision, unique.
        const again = await store.put({ ...a.record, writeId: newWriteId() }, b.revision);
        expect(again.revision).not.toBe(a.revision);
        const error = await conflictOf(store.put(makeRecord(name, { holder: "mallory", term: 2 }), a.revision));
        expectCurrent(error, again);
        expect(await store.get(name)).toEqual(again);
      }),
    );
  });
}
