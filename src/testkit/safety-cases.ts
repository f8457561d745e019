/**
 * The store contract's safety cases (docs/design.md §2) as plain functions, with no test runner:
 * the contract suite (./store-contract.ts) runs them under vitest against every backend's server,
 * and `leasehold doctor` (src/cli/doctor.ts) runs the very same code against a user's own table,
 * bucket or container. Each case throws an Error saying what the store did wrong, or returns.
 *
 * The races are many rounds, not one: a server that checks a condition and then writes without a
 * lock (moto) lets two writers win only once in a while, and a single race passes it. Each round is
 * made as sharp as a client can make it: every writer may have a store of its own (`openWriter`: its
 * own client, so its own connection; a shared client queues writers behind its connection limit),
 * each first reads the lease on that connection (so no write waits for a connection to open), and
 * then all writes are sent in one turn of the event loop (a barrier), so they reach the server
 * together. docs/s3.md has what this catches of moto, measured.
 * Runtime-neutral.
 */
import { systemClock } from "../clock.js";
import { CasWriter, type WriteOutcome } from "../elector/cas.js";
import { isAmbiguous, isLeaseConflictError, type LeaseConflictError } from "../errors.js";
import { type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "../lease.js";

export interface SafetyContext {
  store: LeaseStore;
  /** A fresh lease name for this case (under the caller's scratch prefix), from a short base. */
  name(base?: string): string;
  /** How many rounds each race runs. */
  rounds: number;
  /** How many writers race in each round. */
  writers: number;
  /** True when a conflict always carries the current record (otherwise it may be undefined). */
  conflictCarriesCurrent?: boolean;
  /** True when the store stamps `renewedAt` itself (the HTTP API): records then differ in it. */
  stampsRenewedAt?: boolean;
  /** Waits between race rounds (a store's write-rate limit); default none. */
  pause?: () => Promise<void>;
  /**
   * Opens a store of its own for one racing writer: the same backend as `store` (same table,
   * bucket, container or file) through a client of its own, so each writer of a race has its own
   * connection. Each race opens `writers` of them and closes them when it ends. Default: every
   * writer shares `store` (right for a store that lives in this process, such as a MemoryStore).
   */
  openWriter?: () => Promise<LeaseStore>;
}

export interface SafetyCase {
  name: string;
  run(context: SafetyContext): Promise<void>;
}

/** Writes through the one write path (src/elector/cas.ts), as the elector and the API do. */
export function casWrite(store: LeaseStore, next: LeaseRecord, expected: string | null): Promise<WriteOutcome> {
  return new CasWriter({ store, name: next.name, clock: systemClock }).write(next, expected);
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

/** Throws `message` unless `ok`. */
export function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(message);
}

const show = (stored: Stored | null | undefined) =>
  stored === undefined
    ? "nothing"
    : stored === null
      ? "no record"
      : `revision ${stored.revision} (${stored.record.holder ?? "free"}, term ${stored.record.term}, writeId ${stored.record.writeId})`;

function same(a: Stored | null | undefined, b: Stored | null | undefined, c: SafetyContext): boolean {
  if (a === null || b === null || a === undefined || b === undefined) return a === b;
  const strip = (r: LeaseRecord) => (c.stampsRenewedAt ? { ...r, renewedAt: 0 } : r);
  return a.revision === b.revision && JSON.stringify(strip(a.record)) === JSON.stringify(strip(b.record));
}

/** The conflict a write must raise; anything else (success included) is the store breaking the contract. */
async function conflictOf(what: string, write: Promise<Stored>): Promise<LeaseConflictError> {
  const outcome = await write.then(
    (stored) => stored,
    (error: unknown) => error,
  );
  if (isLeaseConflictError(outcome)) return outcome;
  if (outcome instanceof Error)
    throw new Error(`${what}: expected a conflict, got ${outcome.name}: ${outcome.message}`);
  throw new Error(`${what}: expected a conflict, but the store accepted it (${show(outcome as Stored)})`);
}

function expectCurrent(what: string, error: LeaseConflictError, expected: Stored, c: SafetyContext): void {
  if (error.current === undefined && !c.conflictCarriesCurrent) return;
  check(
    same(error.current, expected, c),
    `${what}: the conflict carried ${show(error.current)}, expected ${show(expected)}`,
  );
}

/**
 * `write` must be refused as a conflict carrying `current` (when the store carries it), and the
 * store must still hold `current`: a refused write changes nothing.
 */
async function expectRefused(c: SafetyContext, what: string, write: Promise<Stored>, current: Stored): Promise<void> {
  expectCurrent(what, await conflictOf(what, write), current, c);
  await expectStored(`after ${what}`, c, current.record.name, current);
}

async function expectStored(what: string, c: SafetyContext, name: string, expected: Stored | null): Promise<void> {
  const now = await c.store.get(name);
  check(same(now, expected, c), `${what}: the store holds ${show(now)}, expected ${show(expected)}`);
}

/**
 * `writers` concurrent writes, `rounds` times: exactly one wins each round, every loser is a conflict.
 * Each writer writes through its own store when the context opens them (`openWriter`), reads the
 * round's lease first (opening its connection), and all writes leave at one barrier.
 */
async function race(
  c: SafetyContext,
  what: string,
  round: {
    setup?: (name: string) => Promise<Stored>;
    write: (store: LeaseStore, name: string, writer: number, base: Stored | null) => Promise<Stored>;
  },
): Promise<void> {
  const racers = await openRacers(c);
  try {
    for (let r = 0; r < c.rounds; r++) {
      if (r > 0) await c.pause?.();
      const name = c.name(`race-${r}`);
      const base = round.setup ? await round.setup(name) : null;
      if (round.setup) await c.pause?.();
      // Warm-up: each writer's own connection is open and idle when the writes leave.
      await Promise.all(racers.stores.map((store) => store.get(name)));
      // The barrier: every write is started in this one turn of the event loop.
      const results = await Promise.allSettled(racers.stores.map((store, i) => round.write(store, name, i, base)));
      const won = results.filter((x): x is PromiseFulfilledResult<Stored> => x.status === "fulfilled");
      const failures = results.filter((x): x is PromiseRejectedResult => x.status === "rejected").map((x) => x.reason);
      const other = failures.find((e) => !isLeaseConflictError(e));
      if (other !== undefined) {
        const kind = isAmbiguous(other) ? "an ambiguous failure" : "a failure";
        throw new Error(
          `${what}, round ${r + 1}: a loser got ${kind} instead of a conflict: ${(other as Error).message}`,
        );
      }
      check(
        won.length === 1,
        `${what}, round ${r + 1} of ${c.rounds}: ${won.length} of ${c.writers} writers were told they won`,
      );
      await expectStored(`${what}, round ${r + 1}`, c, name, won[0]!.value);
    }
  } finally {
    await racers.close();
  }
}

/** One store per writer: its own (from `openWriter`) or the shared one. */
async function openRacers(c: SafetyContext): Promise<{ stores: LeaseStore[]; close(): Promise<void> }> {
  if (c.openWriter === undefined) {
    return { stores: Array.from({ length: c.writers }, () => c.store), close: async () => {} };
  }
  const opened = await Promise.allSettled(Array.from({ length: c.writers }, () => c.openWriter!()));
  const stores = opened.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
  const close = async () => {
    await Promise.allSettled(stores.map((s) => s.close?.()));
  };
  const failed = opened.find((o): o is PromiseRejectedResult => o.status === "rejected");
  if (failed !== undefined) {
    await close();
    throw failed.reason;
  }
  return { stores, close };
}

export const SAFETY_CASES: readonly SafetyCase[] = [
  {
    name: "create if absent: a second create conflicts, carrying the first, and changes nothing",
    async run(c) {
      const name = c.name("create");
      const first = await c.store.put(makeRecord(name), null);
      await expectRefused(c, "a second create", c.store.put(makeRecord(name, { holder: "bob" }), null), first);
    },
  },
  {
    name: "a replace on the current revision applies and issues a new revision",
    async run(c) {
      const name = c.name("replace");
      const first = await c.store.put(makeRecord(name), null);
      const second = await c.store.put(makeRecord(name, { renewedAt: first.record.renewedAt + 5000 }), first.revision);
      check(second.revision !== first.revision, `the replace kept revision ${first.revision}`);
      await expectStored("after a replace", c, name, second);
    },
  },
  {
    name: "a stale revision conflicts with the current record and changes nothing",
    async run(c) {
      const name = c.name("stale");
      const first = await c.store.put(makeRecord(name), null);
      const second = await c.store.put(makeRecord(name, { renewedAt: 1 }), first.revision);
      const stale = c.store.put(makeRecord(name, { holder: "mallory" }), first.revision);
      await expectRefused(c, "a write on a stale revision", stale, second);
    },
  },
  {
    name: "ABA: a revision read at A fails after A -> B -> A' (A's fields again, a new writeId)",
    async run(c) {
      const name = c.name("aba");
      const a = await c.store.put(makeRecord(name), null);
      const b = await c.store.put(makeRecord(name, { renewedAt: a.record.renewedAt + 1 }), a.revision);
      // Content-derived revisions (S3 ETags are MD5s of the body) would bring A's revision back.
      const again = await c.store.put({ ...a.record, writeId: newWriteId() }, b.revision);
      check(again.revision !== a.revision, `A' got A's revision ${a.revision} back`);
      const onA = c.store.put(makeRecord(name, { holder: "mallory", term: 2 }), a.revision);
      await expectRefused(c, "a write on A's revision after A -> B -> A'", onA, again);
    },
  },
  {
    name: "a re-sent write that already applied conflicts carrying itself, and the write path counts it applied",
    async run(c) {
      const name = c.name("resent");
      const create = makeRecord(name);
      const first = await c.store.put(create, null);
      await expectRefused(c, "a create sent again", c.store.put(create, null), first);
      const applied = await casWrite(c.store, create, null);
      check(applied.kind === "applied", `the write path counted a create sent again as ${applied.kind}`);
      const renewal = makeRecord(name, { renewedAt: first.record.renewedAt + 1000 });
      const second = await c.store.put(renewal, first.revision);
      await expectRefused(c, "a renewal sent again", c.store.put(renewal, first.revision), second);
      const lost = await casWrite(c.store, makeRecord(name, { holder: "bob", term: 2 }), first.revision);
      check(lost.kind === "lost", `someone else's write on a replaced revision came back ${lost.kind}, expected lost`);
      await expectStored("after the re-sent writes", c, name, second);
    },
  },
  {
    name: "terms are never reused: a released record stays, so it cannot be created afresh at term 1",
    async run(c) {
      const name = c.name("terms");
      const t1 = await c.store.put(makeRecord(name, { term: 1 }), null);
      const released = await c.store.put(makeRecord(name, { holder: null, term: 1 }), t1.revision);
      await conflictOf(
        "a create over a released record",
        c.store.put(makeRecord(name, { holder: "bob", term: 1 }), null),
      );
      const t2 = await c.store.put(makeRecord(name, { holder: "bob", term: 2 }), released.revision);
      await conflictOf(
        "a second takeover of the released revision",
        c.store.put(makeRecord(name, { holder: "carol", term: 2 }), released.revision),
      );
      await expectStored("after the takeovers", c, name, t2);
    },
  },
  {
    name: "concurrent creates of one lease, many rounds: exactly one wins each round",
    async run(c) {
      await race(c, "concurrent creates", {
        write: (store, name, i) => store.put(makeRecord(name, { holder: `c${i}` }), null),
      });
    },
  },
  {
    name: "concurrent compare-and-swaps on one revision, many rounds: exactly one wins each round",
    async run(c) {
      await race(c, "concurrent compare-and-swaps", {
        // Taken from free (released), so a store that refuses to hand over a held lease (the API)
        // races the same way as every other.
        setup: async (name) => {
          const held = await c.store.put(makeRecord(name), null);
          return c.store.put(makeRecord(name, { holder: null }), held.revision);
        },
        write: (store, name, i, base) => store.put(makeRecord(name, { holder: `c${i}`, term: 2 }), base!.revision),
      });
    },
  },
];
