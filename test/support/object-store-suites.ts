/**
 * What the object stores (GCS, S3, Azure Blob) must do alike, written once and run by each test
 * file against its own server: corrupt and foreign objects are never overwritten, listing yields
 * lease-name order although keys sort as `<name>.json`; and, for the stores behind the shared fault
 * proxy (S3, Azure), the request count of a renewal, SDK retries of conditional writes, and faults
 * with the store's own client. What only one backend has stays in its own test file.
 */
import { describe, expect, it } from "vitest";
import { isAmbiguous, LeaseConflictError, LeaseCorruptError, LeaseStoreError } from "../../src/errors.js";
import type { LeaseStore, Listed, ListOptions, Stored } from "../../src/lease.js";
import { listedName } from "../../src/listing.js";
import { makeRecord, uniqueName } from "../../src/testkit/store-contract.js";
import type { ObjectStoreProxy } from "./object-store-proxy.js";
import { rejection } from "./rejection.js";

type ListingStore = LeaseStore & {
  list(prefix: string, options?: ListOptions): AsyncIterable<Listed>;
  close?(): Promise<void>;
};

/** The test's own unconditional access to the bucket or container, past the store. */
export interface RawObjects {
  /** Writes `body` at `key` (under the store's default prefix `leases/`). */
  write(key: string, body: string): Promise<void>;
  /** The bytes at `key` and the server's version token for them (ETag or generation). */
  read(key: string): Promise<{ body: string; version: string }>;
}

export function describeObjectStoreRecords(
  label: string,
  noun: "objects" | "blobs",
  options: { store: () => ListingStore; raw: RawObjects },
): void {
  const { raw } = options;
  const withStore = (fn: (store: ListingStore) => Promise<void>) => async () => {
    const store = options.store();
    try {
      await fn(store);
    } finally {
      await store.close?.();
    }
  };

  describe(`${label}: corrupt and foreign ${noun}`, () => {
    it.each([
      ["not JSON", "{oops"],
      ["JSON of another shape", JSON.stringify({ hello: "world" })],
      ["a record naming another lease", JSON.stringify(makeRecord("someone-else"))],
    ])("%s is a LeaseCorruptError on read and is never overwritten", (_label, content) =>
      withStore(async (store) => {
        const name = uniqueName();
        const key = `leases/${name}.json`;
        await raw.write(key, content);
        const before = await raw.read(key);
        const read = await rejection(store.get(name));
        expect(read).toBeInstanceOf(LeaseCorruptError);
        expect((read as LeaseCorruptError).lease).toBe(name);
        const write = await rejection(store.put(makeRecord(name), null));
        expect(write).toBeInstanceOf(LeaseCorruptError);
        expect(await raw.read(key)).toEqual({ body: content, version: before.version });
      })(),
    );
  });

  describe(`${label}: list`, () => {
    it(
      `yields name order although ${noun} sort as <name>.json, skipping foreign ${noun}`,
      withStore(async (store) => {
        const root = uniqueName("root");
        // By key (`<name>.json`) these sort a-b-c, a-b, a-b.x, a.a, a, a.z, a/c, a0;
        // by lease name a, a-b, a-b-c, a-b.x, a.a, a.z, a/c, a0.
        const names = ["a", "a-b", "a.a", "a.z", "a/c", "a0", "a-b-c", "a-b.x"].map((n) => `${root}/${n}`);
        for (const n of names) await store.put(makeRecord(n), null);
        await raw.write(`leases/${root}/readme.txt`, "not a lease");
        await raw.write(`leases/${root}/Upper.json`, "{}");
        const list = async (prefix: string, o?: ListOptions) => {
          const out: string[] = [];
          for await (const s of store.list(prefix, o)) out.push(listedName(s));
          return out;
        };
        const sorted = [...names].sort();
        expect(await list(`${root}/`)).toEqual(sorted);
        expect(await list(`${root}/`, { startAfter: `${root}/a` })).toEqual(sorted.slice(1));
        expect(await list(`${root}/`, { startAfter: `${root}/a-b`, limit: 3 })).toEqual(sorted.slice(2, 5));
        expect(await list(`${root}/a-`)).toEqual(sorted.filter((n) => n.startsWith(`${root}/a-`)));
        expect(await list(`${root}/`, { limit: 0 })).toEqual([]);
      }),
    );

    it(
      `pages through more ${noun} than one listing page returns, and each carries its current revision`,
      withStore(async (store) => {
        const root = uniqueName("many");
        const names = Array.from({ length: 230 }, (_, i) => `${root}/n${String(i).padStart(3, "0")}`);
        const written: Stored[] = [];
        for (let i = 0; i < names.length; i += 23) {
          written.push(...(await Promise.all(names.slice(i, i + 23).map((n) => store.put(makeRecord(n), null)))));
        }
        written[5] = await store.put(makeRecord(names[5]!, { renewedAt: 3 }), written[5]!.revision);
        const out: Listed[] = [];
        for await (const s of store.list(`${root}/`)) out.push(s);
        expect(out).toEqual(written);
        const tail: string[] = [];
        for await (const s of store.list(`${root}/`, { startAfter: names[198]!, limit: 5 })) tail.push(listedName(s));
        expect(tail).toEqual(names.slice(199, 204));
      }),
    );
  });
}

type ClosableStore = LeaseStore & { close?(): Promise<void> };

export interface ProxiedObjectStoreOptions {
  proxy: () => ObjectStoreProxy;
  /** The store's own client, through the proxy (one attempt per request). */
  viaProxy: (options?: { timeoutMs?: number }) => ClosableStore;
  /** A caller's client with the SDK's default retries, through the proxy. */
  retryingViaProxy: () => ClosableStore;
  /** The store's own client, straight to the server: what was really written. */
  direct: () => ClosableStore;
  /** Deletes `key` past the store. */
  remove: (key: string) => Promise<void>;
  /** How the store's error messages name the lease's object. */
  location: (name: string) => string;
  /** Failed GETs that exhaust the retrying client's read of the current record. */
  readBackFailures: Array<"500">;
  /** The noun in the store's messages and in the test names ("object", "blob"). */
  noun: "object" | "blob";
}

export function describeProxiedObjectStore(label: string, options: ProxiedObjectStoreOptions): void {
  const { noun } = options;
  const proxy = () => options.proxy();
  /** Runs `fn` with a fresh store, closing it afterwards whatever happens. */
  const using = async (store: ClosableStore, fn: (store: ClosableStore) => Promise<void>) => {
    try {
      await fn(store);
    } finally {
      await store.close?.();
    }
  };

  describe(`${label}: a renewal is one PUT and no read, on the wire`, () => {
    it("one store.put sends exactly one request; a lost CAS sends the PUT and one GET", () =>
      using(options.viaProxy(), async (store) => {
        const name = uniqueName();
        const created = await store.put(makeRecord(name), null);
        let held = created;
        proxy().resetCounts();
        for (let i = 0; i < 5; i++) held = await store.put(makeRecord(name, { renewedAt: i }), held.revision);
        expect(proxy().seen).toEqual(["put", "put", "put", "put", "put"]);
        proxy().resetCounts();
        await rejection(store.put(makeRecord(name), null)); // the create condition refused
        expect(proxy().seen).toEqual(["put", "get"]);
        proxy().resetCounts();
        await rejection(store.put(makeRecord(name), created.revision)); // a stale If-Match refused
        expect(proxy().seen).toEqual(["put", "get"]);
      }));
  });

  describe(`${label}: SDK retries of conditional writes (a caller's retrying client)`, () => {
    it("a create whose answer was lost, retried and refused, is a conflict carrying this very write", () =>
      using(options.retryingViaProxy(), async (store) => {
        const record = makeRecord(uniqueName());
        proxy().failNextPut("reset-after-apply");
        proxy().resetCounts();
        const error = await rejection(store.put(record, null));
        expect(proxy().seen).toEqual(["put", "put", "get"]); // the SDK retried, was refused, the store read
        // The store reports; the write path decides "mine" by writeId (docs/design.md §4).
        expect(error).toBeInstanceOf(LeaseConflictError);
        expect((error as LeaseConflictError).current?.record).toEqual(record);
      }));

    it("a renewal that applied but was answered 503, retried into 412, carries this write and its ETag", () =>
      using(options.retryingViaProxy(), async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        const renewal = makeRecord(name, { renewedAt: first.record.renewedAt + 5000 });
        proxy().failNextPut("503-after-apply");
        const error = await rejection(store.put(renewal, first.revision));
        expect(error).toBeInstanceOf(LeaseConflictError);
        const current = (error as LeaseConflictError).current;
        expect(current?.record).toEqual(renewal);
        expect(current?.revision).not.toBe(first.revision);
        await using(options.direct(), async (direct) => expect(await direct.get(name)).toEqual(current));
      }));

    it("after a retry, a refusal caused by another writer carries that writer's record", () =>
      using(options.retryingViaProxy(), async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        let theirs: Stored | undefined;
        await using(options.direct(), async (direct) => {
          theirs = await direct.put(makeRecord(name, { holder: "bob", term: 2 }), first.revision);
        });
        proxy().failNextPut("503");
        proxy().resetCounts();
        const error = await rejection(store.put(makeRecord(name, { renewedAt: 9 }), first.revision));
        expect(proxy().count("put")).toBe(2);
        expect(error).toBeInstanceOf(LeaseConflictError);
        expect((error as LeaseConflictError).current).toEqual(theirs);
      }));

    it(`after a retry, a refusal whose ${noun} cannot be read back is ambiguous (the first attempt may have applied)`, () =>
      using(options.retryingViaProxy(), async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        const next = makeRecord(name, { renewedAt: 1 });
        proxy().failNextPut("503-after-apply");
        proxy().failNextGet(...options.readBackFailures);
        const error = await rejection(store.put(next, first.revision));
        expect(error).toBeInstanceOf(LeaseStoreError);
        expect(isAmbiguous(error)).toBe(true);
        expect((error as Error).message).toMatch(new RegExp(`reading the ${noun} back failed`));
        await using(options.direct(), async (direct) => {
          expect((await direct.get(name))?.record.writeId).toBe(next.writeId); // it had applied
        });
      }));
  });

  describe(`${label}: faults with its own client (one attempt per request)`, () => {
    it.each([
      ["500", false],
      ["503", false],
      ["500-after-apply", true],
      ["503-after-apply", true],
      ["reset-after-apply", true],
    ] as const)("a PUT answered %s is an ambiguous LeaseStoreError, sent once", (fault, applied) =>
      using(options.viaProxy(), async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        const next = makeRecord(name, { renewedAt: 42 });
        proxy().failNextPut(fault);
        proxy().resetCounts();
        const error = await rejection(store.put(next, first.revision));
        expect(error).toBeInstanceOf(LeaseStoreError);
        expect(isAmbiguous(error)).toBe(true);
        expect((error as Error).message).toContain(options.location(name));
        expect(proxy().seen).toEqual(["put"]);
        // Why it must be ambiguous: in some of these cases the write did apply.
        expect((await store.get(name))?.record.writeId).toBe(applied ? next.writeId : first.record.writeId);
      }),
    );

    it("an answer slower than timeoutMs is ambiguous, and the write applies anyway", () =>
      using(options.viaProxy({ timeoutMs: 200 }), async (store) => {
        const name = uniqueName();
        const record = makeRecord(name);
        proxy().failNextPut({ delayMs: 1000 });
        proxy().resetCounts();
        const error = await rejection(store.put(record, null));
        expect(error).toBeInstanceOf(LeaseStoreError);
        expect(isAmbiguous(error)).toBe(true);
        expect(proxy().count("put")).toBe(1);
        await using(options.direct(), async (direct) => expect((await direct.get(name))?.record).toEqual(record));
      }));

    it("a PUT abandoned through its AbortSignal is ambiguous; one aborted before sending is not", () =>
      using(options.viaProxy(), async (store) => {
        const name = uniqueName();
        proxy().failNextPut("hang");
        const controller = new AbortController();
        const sent = proxy().nextPut();
        const pending = rejection(store.put(makeRecord(name), null, { signal: controller.signal }));
        await sent;
        controller.abort();
        const error = await pending;
        expect(error).toBeInstanceOf(LeaseStoreError);
        expect(isAmbiguous(error)).toBe(true);
        const early = await rejection(store.put(makeRecord(name), null, { signal: AbortSignal.abort() }));
        expect(early).toBeInstanceOf(LeaseStoreError);
        expect(isAmbiguous(early)).toBe(false);
      }));

    it("a read whose connection is reset before any answer is sent once more (reads change nothing)", () =>
      using(options.viaProxy(), async (store) => {
        const name = uniqueName();
        let written: Stored | undefined;
        await using(options.direct(), async (direct) => {
          written = await direct.put(makeRecord(name), null);
        });
        proxy().resetCounts();
        proxy().failNextGet("reset");
        expect(await store.get(name)).toEqual(written);
        expect(proxy().count("get")).toBe(2);
        proxy().failNextGet("reset", "reset");
        const error = await rejection(store.get(name));
        expect(error).toBeInstanceOf(LeaseStoreError);
        expect(isAmbiguous(error)).toBe(false);
      }));

    it(`a refusal whose ${noun} cannot be read back is a conflict with the current record unknown`, () =>
      using(options.viaProxy(), async (store) => {
        const name = uniqueName();
        await using(options.direct(), async (direct) => {
          await direct.put(makeRecord(name), null);
        });
        proxy().failNextGet("503");
        const error = await rejection(store.put(makeRecord(name), null));
        expect(error).toBeInstanceOf(LeaseConflictError);
        expect((error as LeaseConflictError).current).toBeUndefined();
      }));

    it(`If-Match on ${noun === "object" ? "an object" : "a blob"} someone deleted is a conflict whose current record is null`, () =>
      using(options.direct(), async (store) => {
        const name = uniqueName();
        const first = await store.put(makeRecord(name), null);
        await options.remove(`leases/${name}.json`);
        const error = await rejection(store.put(makeRecord(name, { renewedAt: 1 }), first.revision));
        expect(error).toBeInstanceOf(LeaseConflictError);
        expect((error as LeaseConflictError).current).toBeNull();
        expect(await store.get(name)).toBeNull();
      }));
  });
}
