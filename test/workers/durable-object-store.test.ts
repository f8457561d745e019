/**
 * DurableObjectStore inside workerd against the real LeaseObject Durable Object (bound as LEASES
 * from wrangler.toml): both conformance suites, the counter revisions, the directory, and the
 * store-level push (`watch`).
 */
import { abortAllDurableObjects } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DurableObjectStore } from "../../src/backends/durable-object/store.js";
import { INDEX_OBJECT } from "../../src/backends/durable-object/wire.js";
import type { Stored } from "../../src/lease.js";
import { listedName } from "../../src/listing.js";
import { describeBoundContract } from "../../src/testkit/bound-contract.js";
import { describeElectorContract } from "../../src/testkit/elector-contract.js";
import { describeShardedContract } from "../../src/testkit/sharded-contract.js";
import { describeStoreContract, makeRecord, uniqueName } from "../../src/testkit/store-contract.js";

const create = async () => ({ store: new DurableObjectStore({ namespace: env.LEASES }) });

describeStoreContract("durable objects (workerd)", {
  create,
  conflictCarriesCurrent: true,
  cannotHoldUnreadable:
    "each record lives in its own Durable Object's storage, which only LeaseObject writes, after validating it: no other writer reaches it",
});
describeElectorContract("durable objects (workerd)", create);
describeBoundContract("durable objects (workerd)", create);
describeShardedContract("durable objects (workerd)", create);

describe("durable object store", () => {
  it("issues counter revisions 1, 2, 3 for one lease", async () => {
    const store = new DurableObjectStore({ namespace: env.LEASES });
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const second = await store.put(makeRecord(name, { renewedAt: 2 }), first.revision);
    const third = await store.put(makeRecord(name, { holder: null }), second.revision);
    expect([first.revision, second.revision, third.revision]).toEqual(["1", "2", "3"]);
  });

  it("lists only names that have a record, even when the directory holds a failed create", async () => {
    const store = new DurableObjectStore({ namespace: env.LEASES });
    const root = uniqueName("dir");
    // A directory entry whose record was never written: what a create that failed after the index step leaves.
    const index = env.LEASES.get(env.LEASES.idFromName(INDEX_OBJECT));
    const added = await index.fetch("https://lease.object/index", {
      method: "POST",
      body: JSON.stringify({ name: `${root}/ghost` }),
      headers: { "content-type": "application/json" },
    });
    expect(added.status).toBe(204);
    await store.put(makeRecord(`${root}/b`), null);
    await store.put(makeRecord(`${root}/a`), null);
    const names: string[] = [];
    for await (const s of store.list(`${root}/`)) names.push(listedName(s));
    expect(names).toEqual([`${root}/a`, `${root}/b`]);
  });

  it("pages through several directory pages in name order", async () => {
    const store = new DurableObjectStore({ namespace: env.LEASES, listPageSize: 3 });
    const root = uniqueName("many");
    const names = Array.from({ length: 10 }, (_, i) => `${root}/${String(i).padStart(2, "0")}`);
    await Promise.all(names.map((n) => store.put(makeRecord(n), null)));
    const list = async (options?: { startAfter?: string; limit?: number }) => {
      const out: string[] = [];
      for await (const s of store.list(`${root}/`, options)) out.push(listedName(s));
      return out;
    };
    expect(await list()).toEqual(names);
    expect(await list({ startAfter: names[2]!, limit: 5 })).toEqual(names.slice(3, 8));
    expect(await list({ limit: 3 })).toEqual(names.slice(0, 3));
  });

  it("watch yields the current record, then every change another store instance commits", async () => {
    const watcher = new DurableObjectStore({ namespace: env.LEASES });
    const writer = new DurableObjectStore({ namespace: env.LEASES });
    const name = uniqueName();
    const first = await writer.put(makeRecord(name), null);
    const done = new AbortController();
    const seen: Array<Stored | null> = [];
    const iterator = watcher.watch(name, done.signal)[Symbol.asyncIterator]();
    const next = async () => {
      const step = await iterator.next();
      expect(step.done).toBe(false);
      seen.push(step.value);
      return step.value as Stored | null;
    };
    expect(await next()).toEqual(first);
    const released = await writer.put(makeRecord(name, { holder: null }), first.revision);
    expect(await next()).toEqual(released);
    const taken = await writer.put(makeRecord(name, { holder: "bob", term: 2 }), released.revision);
    expect(await next()).toEqual(taken);
    done.abort();
    expect((await iterator.next()).done).toBe(true);
    expect(seen.map((s) => s?.revision)).toEqual(["1", "2", "3"]);
  });

  it("watch of a lease that does not exist yet yields null, then its creation", async () => {
    const store = new DurableObjectStore({ namespace: env.LEASES });
    const name = uniqueName();
    const done = new AbortController();
    const iterator = store.watch(name, done.signal)[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toBeNull();
    const created = await store.put(makeRecord(name), null);
    expect((await iterator.next()).value).toEqual(created);
    done.abort();
    expect((await iterator.next()).done).toBe(true);
  });

  it("watch reconnects when the object is reset, and still hears later changes", async () => {
    const store = new DurableObjectStore({ namespace: env.LEASES });
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const done = new AbortController();
    const iterator = store.watch(name, done.signal)[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual(first);
    await abortAllDurableObjects();
    // The reconnection starts with the current record again (unchanged, so the same revision) ...
    expect((await iterator.next()).value).toEqual(first);
    // ... and the reloaded object kept the record and pushes the next change.
    const released = await store.put(makeRecord(name, { holder: null }), first.revision);
    expect((await iterator.next()).value).toEqual(released);
    done.abort();
    expect((await iterator.next()).done).toBe(true);
  });

  it("rejects a namespace that is not a binding, and a bad page size", () => {
    expect(() => new DurableObjectStore({ namespace: {} as never })).toThrow(/namespace binding/);
    expect(() => new DurableObjectStore({ namespace: env.LEASES, listPageSize: 0 })).toThrow(/listPageSize/);
  });
});
