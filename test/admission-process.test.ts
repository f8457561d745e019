/**
 * Renewals first with the Node server in its own process (`npm start`'s entry under node + tsx,
 * on SQLite), flooded by this process with acquisitions of new leases and listings, far more at
 * once than its LEASEHOLD_IN_FLIGHT: every renewal of a current holder (renew, acquire again, a
 * member heartbeat with its session) is answered 200 while the flood is answered 503
 * over-capacity with Retry-After. Outcomes only, no timings: the answers are the server's own.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { repo } from "./support/cli-processes.js";
import { stopProcess } from "./support/server-process.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-admission-"));
let child: ChildProcess | undefined;
afterAll(async () => {
  if (child) await stopProcess(child);
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the server; resolves with its URL from the start-up line. */
async function startServer(env: Record<string, string>): Promise<string> {
  const proc = spawn(process.execPath, ["--import", "tsx", "src/runtime/node.ts"], {
    cwd: repo,
    env: { ...process.env, PORT: "0", LEASEHOLD_DB: join(dir, "leases.db"), ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child = proc;
  let err = "";
  return new Promise((resolve, reject) => {
    proc.stderr!.on("data", (chunk: Buffer) => {
      err += chunk.toString();
      const url = /API on (http:\/\/\S+);/.exec(err)?.[1];
      if (url) resolve(url);
    });
    proc.once("exit", (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}

const INSTANCE = "admission-holder-0123456789";

it("under a flood of acquisitions and lists, a current holder's renewals and heartbeats are all served", async () => {
  const url = await startServer({
    LEASEHOLD_IN_FLIGHT: "16",
    LEASEHOLD_LATE_MS: "250",
    LEASEHOLD_RESERVED_IN_FLIGHT: "4",
    // The flood creates records: its own bounds are not what this test is about.
    LEASEHOLD_CREATES_PER_MINUTE: "1000000",
    LEASEHOLD_RECORDS_PER_PREFIX: "100000000",
  });
  const answer = async (res: Response) => ({
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    // biome-ignore lint/suspicious/noExplicitAny: the test reads the answer field by field
    body: (await res.json()) as any,
  });
  // A connection the flood's keep-alive pool finds closed (ECONNRESET on a busy machine) is sent
  // again: what is counted is what the server answered. Renewals are idempotent for the holder.
  const send = async (path: string, init: RequestInit = {}) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await answer(await fetch(`${url}${path}`, init));
      } catch (error) {
        if (attempt >= 2) throw error;
      }
    }
  };
  const post = (path: string, body: unknown) =>
    send(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const lease = "/v1/leases/held%2Fone";
  const member = "/v1/groups/held%2Fgroup/members/m1";
  const holder = { holder: "h", instance: INSTANCE };
  expect((await post(`${lease}/acquire`, { ...holder, leaseMs: 120_000 })).status).toBe(200);
  const joined = await post(`${member}/heartbeat`, { instance: INSTANCE, leaseMs: 120_000, buckets: 2 });
  expect(joined.status).toBe(200);
  const session = joined.body.session as number;

  // The flood: 60 loops, each acquiring new leases (each a write committed to disk) and listing.
  let flooding = true;
  const flood: Record<string, number> = {};
  let sheddingSeen = false;
  const loops = Array.from({ length: 60 }, async (_, i) => {
    for (let n = 0; flooding; n++) {
      const res =
        n % 4 === 3
          ? await send("/v1/leases?prefix=flood%2F&limit=200")
          : await post(`/v1/leases/flood%2F${i}-${n}/acquire`, {
              holder: `f${i}`,
              instance: `flood-${i}-0123456789`,
              leaseMs: 60_000,
            });
      flood[res.status] = (flood[res.status] ?? 0) + 1;
      if (res.status === 503) {
        expect(res.body).toMatchObject({ type: "urn:leasehold:problem:over-capacity" });
        expect(["inFlight", "lateMs"]).toContain(res.body.bound);
        expect(Number(res.retryAfter)).toBeGreaterThanOrEqual(1);
        sheddingSeen = true;
      }
    }
  });

  // Meanwhile the holder renews, one request after another, three ways, until the flood has been
  // shed for a while (nine renewals after the first refusal: each waits for its write to reach the disk).
  const renewals: Record<string, number[]> = { renew: [], acquire: [], heartbeat: [] };
  let afterShedding = 0;
  for (let n = 0; afterShedding < 9 && n < 2000; n++) {
    const kind = (["renew", "acquire", "heartbeat"] as const)[n % 3]!;
    const answer =
      kind === "renew"
        ? await post(`${lease}/renew`, { ...holder, term: 1 })
        : kind === "acquire"
          ? await post(`${lease}/acquire`, { ...holder, leaseMs: 120_000 })
          : await post(`${member}/heartbeat`, { instance: INSTANCE, session, leaseMs: 120_000 });
    renewals[kind]!.push(answer.status);
    if (sheddingSeen) afterShedding++;
  }
  flooding = false;
  await Promise.all(loops);

  expect(sheddingSeen, `the flood was never shed: ${JSON.stringify(flood)}`).toBe(true);
  for (const [kind, statuses] of Object.entries(renewals)) {
    expect(statuses.length, kind).toBeGreaterThan(0);
    expect(
      statuses.filter((s) => s !== 200),
      `${kind}: ${JSON.stringify(flood)}`,
    ).toEqual([]);
  }
  // The flood was served too, in what was not reserved: shedding is not refusing everything.
  expect(flood[200] ?? 0).toBeGreaterThan(0);
}, 120_000);
