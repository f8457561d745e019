/**
 * The console on Workers (docs/console.md): inside workerd, the Worker serves the page, its
 * bundled script and style (the same module the Node server imports, bundled into the Worker), and
 * the console's /v1 routes on the Durable Object store: a prefix stream's snapshot, and the change
 * log of what this isolate has seen.
 */
import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { LeaseholdClient } from "../../src/http/client.js";
import { readSse } from "../../src/http/sse.js";
import { uniqueName } from "../../src/testkit/store-contract.js";
import { READER, WRITER } from "./tokens.js";

const BASE = "https://leasehold.test";
const viaWorker: typeof fetch = (input, init) => exports.default.fetch(new Request(input, init));

it("serves /ui with its script and style under the console's Content-Security-Policy", async () => {
  const page = await viaWorker(`${BASE}/ui`);
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
  expect(await page.text()).toContain('<script type="module" src="ui/console.js">');
  const script = await viaWorker(`${BASE}/ui/console.js`);
  expect(script.status).toBe(200);
  expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
  expect((await script.text()).length).toBeGreaterThan(1000);
  const style = await viaWorker(`${BASE}/ui/console.css`);
  expect(style.status).toBe(200);
  expect(await style.text()).toContain(".grid");
});

it("streams the leases under a prefix and answers the change log, with a read token", async () => {
  // Under "public/", the reader token's scope.
  const name = `public/${uniqueName("console")}`;
  const writer = new LeaseholdClient({ baseUrl: BASE, token: WRITER, fetch: viaWorker, retries: 0 });
  await writer.acquire(name, { holder: "edge-a", leaseMs: 30_000 });

  const done = new AbortController();
  const res = await viaWorker(`${BASE}/v1/watch?prefix=${encodeURIComponent(name)}`, {
    headers: { authorization: `Bearer ${READER}` },
    signal: done.signal,
  });
  expect(res.status).toBe(200);
  const events = readSse(res.body!)[Symbol.asyncIterator]();
  const first = await events.next();
  done.abort();
  await events.return?.();
  expect(first.value).toMatchObject({ event: "snapshot" });
  expect(JSON.parse(first.value!.data).leases).toEqual([
    expect.objectContaining({ free: false, lease: expect.objectContaining({ name, holder: "edge-a" }) }),
  ]);

  const history = await viaWorker(`${BASE}/v1/leases/${encodeURIComponent(name)}/history`, {
    headers: { authorization: `Bearer ${READER}` },
  });
  expect(history.status).toBe(200);
  expect((await history.json()) as object).toMatchObject({ name, terms: [{ term: 1, holder: "edge-a", end: null }] });
  // The reader token is scoped to "public/": the change log is read-scoped like GET, a stream like the listing.
  for (const path of [
    `/v1/leases/${encodeURIComponent(name.slice("public/".length))}/history`,
    "/v1/watch?prefix=public",
  ]) {
    expect((await viaWorker(`${BASE}${path}`, { headers: { authorization: `Bearer ${READER}` } })).status).toBe(403);
  }
});
