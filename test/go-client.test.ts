/**
 * The document as a contract for another language: oapi-codegen v2.8.2 generates a Go client from
 * what the server serves, it compiles without a hand edit, and test/go-client/main.go acquires,
 * renews, reads, watches (Server-Sent Events into the generated WatchEvent type) and releases a
 * lease with it against the real server, then joins a sharded group as a remote member (heartbeat,
 * leave, a refused stale heartbeat), with a scoped token and without auth.
 */
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LeaseholdClient } from "../src/http/client.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { buildGoClient } from "./support/go-client.js";

const run = promisify(execFile);

describe.each([
  { auth: "a scoped token", token: TOKENS.adapters as string | undefined, tokens: undefined },
  { auth: "no auth (loopback)", token: undefined, tokens: [] },
])("Go client generated from the served document, $auth", ({ token, tokens }) => {
  let api: Awaited<ReturnType<typeof startApi>>;
  let built: { binary: string; dir: string } | undefined;

  beforeAll(async () => {
    api = await startApi({ watchPollMs: 50, ...(tokens ? { tokens } : {}) });
    const document = await (await fetch(`${api.url}/openapi.json`)).text();
    // First run on a machine: builds oapi-codegen and downloads the client's modules.
    built = await buildGoClient(document);
  }, 600_000);

  afterAll(async () => {
    await api?.close();
    if (built) rmSync(built.dir, { recursive: true, force: true });
  });

  it("acquires, renews, reads, watches and releases, then heartbeats and leaves a group, each step answered as the document says", async () => {
    const name = `adapters/${uniqueName("go")}`;
    const group = `adapters/${uniqueName("go-group")}`;
    const args = ["-url", api.url, "-name", name, "-group", group, ...(token ? ["-token", token] : [])];
    const { stdout } = await run(built!.binary, args, { timeout: 60_000 }).catch(
      (error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`the Go client failed:\n${error.stdout ?? ""}${error.stderr ?? error.message}`);
      },
    );
    const lines = stdout.trim().split("\n");
    expect(lines).toEqual([
      `acquired ${name} term=1 etag="1"`,
      "renewed term=1 revision=2",
      'read holder=go-client term=1 lang=go etag="2"',
      "watch id=2 holder=go-client term=1 free=false",
      "released term=1",
      "watch id=3 holder=null term=1 free=true",
      "stale renew 409 urn:leasehold:problem:conflict",
      "heartbeat session=1 buckets=4 held=0@1,1@1,2@1,3@1 settled=true",
      "left session=1",
      "stale heartbeat 409 urn:leasehold:problem:session-ended",
    ]);
    // What the server holds agrees with what the Go program saw.
    const lease = await new LeaseholdClient({ baseUrl: api.url, ...(token ? { token } : {}) }).get(name);
    expect(lease).toMatchObject({ holder: null, term: 1, metadata: { lang: "go" }, revision: "3" });
  }, 120_000);
});
