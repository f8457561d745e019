/** The one write path's time limit (src/elector/cas.ts): a write that timed out may apply, a read never changes anything. */
import { expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { CasWriter } from "../src/elector/cas.js";
import { isAmbiguous, isLeaseStoreError } from "../src/errors.js";
import { FaultyStore } from "../src/testkit/faulty-store.js";
import { makeRecord } from "../src/testkit/store-contract.js";

it("a write that times out is ambiguous, a read that times out is not", async () => {
  const clock = new ManualClock();
  const store = new FaultyStore(new MemoryStore());
  store.hang = true;
  const writer = new CasWriter({ store, name: "cas/timeout", clock, callTimeoutMs: 100 });
  const write = writer.write(makeRecord("cas/timeout"), null);
  const read = writer.read().catch((error: unknown) => error);
  await clock.advance(100);
  expect(await write).toMatchObject({ kind: "unknown", ambiguous: true });
  const readError = await read;
  expect(isLeaseStoreError(readError) && readError.message).toMatch(
    /store read for lease "cas\/timeout" timed out after 100 ms/,
  );
  expect(isAmbiguous(readError)).toBe(false);
});
