/**
 * Watch across Worker instances: a follower's SSE stream on one app instance hears a release
 * and a takeover made through another instance, pushed by the lease's Durable Object. The API's
 * own poll is set to 60 s (vitest.config.ts) and each instance has its own in-memory watch hub,
 * so within this test's 30 s timeout an event can only arrive by the Durable Object's push.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { LeaseholdClient } from "../../src/http/client.js";
import type { WatchEventView } from "../../src/http/schemas.js";
import worker from "../../src/runtime/worker.js";
import { uniqueName } from "../../src/testkit/store-contract.js";
import { WRITER } from "./tokens.js";

/** A separate app instance per env object: what two isolates of the deployed Worker are. */
function instance(): LeaseholdClient {
  const bindings = { ...env };
  const fetchHere: typeof fetch = (input, init) => worker.fetch(new Request(input, init), bindings);
  return new LeaseholdClient({ baseUrl: "https://leasehold.test", token: WRITER, fetch: fetchHere, retries: 0 });
}

it("a release and a takeover made through one instance reach another instance's watch stream by push", async () => {
  expect(env.LEASEHOLD_WATCH_POLL_MS).toBe("60000");
  const leader = instance();
  const follower = instance();
  const name = uniqueName("watched");
  const acquired = await leader.acquire(name, { holder: "leader", leaseMs: 30_000 });
  expect(acquired.leader).toBe(true);

  const done = new AbortController();
  const events = follower.watch(name, done.signal)[Symbol.asyncIterator]();
  const next = async (): Promise<WatchEventView> => {
    const step = await events.next();
    expect(step.done).toBe(false);
    return step.value as WatchEventView;
  };
  try {
    expect(await next()).toMatchObject({ free: false, lease: { holder: "leader", term: 1 } });

    await leader.release(name, { holder: "leader", term: 1 });
    expect(await next()).toMatchObject({ free: true, lease: { holder: null, term: 1 } });

    const takeover = await instance().acquire(name, { holder: "successor", leaseMs: 30_000 });
    expect(takeover.leader).toBe(true);
    expect(await next()).toMatchObject({ free: false, lease: { holder: "successor", term: 2 } });
  } finally {
    done.abort();
  }
});
