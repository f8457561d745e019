/**
 * The console in a real browser (docs/console.md): Debian's headless Chromium (/usr/bin/chromium,
 * installed by .ci/run) driven by playwright-core, against the API server in its own process
 * (`leasehold serve` on a SQLite file, with tokens), with real leaders and members as OS processes,
 * each with a token of the verbs and prefix it needs (docs/security.md) and its own instance:
 * - the page asks for a token (a read token), keeps it in sessionStorage, never puts it in a URL;
 * - a lease acquired through the API (a write token for `demo/`) appears without a reload;
 * - a `leasehold run` leader (read and cas on `jobs/`) is SIGKILLed and the takeover shows on the
 *   lease's timeline;
 * - three remote members of a sharded group (over the API's group routes, each with a token for its
 *   own member record) balance the grid, and their records are listed among the leases in their
 *   real state (a bucket held while its owner's session lives); one is killed and its buckets move
 *   to the other two;
 * - the server is stopped (the page says it is disconnected) and started again (it resumes, sending
 *   Last-Event-ID, and says the server's memory of the past is gone).
 * One browser for the file. Each view is photographed: into docs/console/ with UPDATE_SCREENSHOTS=1
 * (the images of docs/console.md), otherwise into a temporary folder, so a test run never changes
 * the working tree (times on the page differ on every run, so the images always would).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TokenScope } from "../src/api/auth.js";
import { TOKENS } from "./support/api-server.js";
import { stopProcess } from "./support/server-process.js";

// What the page.evaluate callbacks below touch in the browser: the tests compile without the DOM
// library (only the console itself has it, console/tsconfig.json).
declare const window: { notReloaded?: boolean };
declare const sessionStorage: { getItem(key: string): string | null };
declare const document: { activeElement: { textContent: string | null } | null };

const repo = join(import.meta.dirname, "..");
const bin = join(repo, "bin", "leasehold.js");
const shardWorker = join(repo, "test", "support", "shard-worker.ts");
const CHROMIUM = "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** Waits on the page: generous, for two busy cores; a wait is never an assertion about time. */
const WAIT = 60_000;

type MemberId = "m0" | "m1" | "m2";
const MEMBERS: MemberId[] = ["m0", "m1", "m2"];
/** A token for one member's record of the group alone: its heartbeat, hand-offs and leave. */
const memberScope = (id: MemberId): TokenScope => ({
  name: id,
  token: `member-${id}-token-0123456789abcdef`,
  prefixes: [`workers/pool/_members/${id}`],
  verbs: ["write"],
});
/** Each process's token: the verbs and the prefix it needs, no more. */
const SCOPES = {
  console: { name: "console", token: TOKENS.reader, prefixes: [""], verbs: ["read"] },
  operator: { name: "operator", token: "operator-token-0123456789abcdef", prefixes: ["demo/"], verbs: ["write"] },
  runner: { name: "runner", token: "runner-token-0123456789abcdef", prefixes: ["jobs/"], verbs: ["read", "cas"] },
} satisfies Record<string, TokenScope>;
const ALL_SCOPES: TokenScope[] = [...Object.values(SCOPES), ...MEMBERS.map(memberScope)];

const dir = mkdtempSync(join(tmpdir(), "leasehold-console-"));
const db = join(dir, "api.db");
const shots = process.env.UPDATE_SCREENSHOTS === "1" ? join(repo, "docs", "console") : join(dir, "shots");
mkdirSync(shots, { recursive: true });

interface Server {
  child: ChildProcess;
  url: string;
  port: number;
  output: () => string;
}

/** `leasehold serve` on the test's SQLite file: fast polls and keep-alives, so the page notices quickly. */
function startServer(port = 0): Promise<Server> {
  const child = spawn(process.execPath, [bin, "serve", "--port", String(port), "--store", `sqlite:${db}`, "--json"], {
    cwd: repo,
    env: {
      ...process.env,
      LEASEHOLD_STORE: "",
      LEASEHOLD_DB: "",
      LEASEHOLD_TOKENS: JSON.stringify(ALL_SCOPES),
      LEASEHOLD_WATCH_POLL_MS: "200",
      LEASEHOLD_HEARTBEAT_MS: "1000",
      LEASEHOLD_MAX_SKEW_MS: "200",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-8000);
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) {
        const { url, port: bound } = JSON.parse(line) as { url: string; port: number };
        resolve({ child, url, port: bound, output: () => log });
      }
    });
    child.once("exit", (code) => reject(new Error(`the API server exited (${code}) before it listened:\n${log}`)));
  });
}

const started: ChildProcess[] = [];
function track(child: ChildProcess): ChildProcess {
  started.push(child);
  return child;
}

/** `leasehold run` over the API (its HTTP store), holding `lease` while a long command runs. */
function runLeader(url: string, identity: string): ChildProcess {
  return track(
    spawn(
      process.execPath,
      [
        bin,
        "run",
        "--store",
        `${url}/`,
        "--lease",
        "jobs/nightly",
        "--identity",
        identity,
        "--lease-ms",
        // Long enough that a renewal late by a second or two on busy cores does not end the term
        // before the test kills it (the takeover then comes about 4 s after the kill).
        "4000",
        "--",
        process.execPath,
        "-e",
        "setInterval(() => {}, 1000)",
      ],
      {
        cwd: repo,
        env: { ...process.env, LEASEHOLD_STORE: "", LEASEHOLD_TOKEN: SCOPES.runner.token },
        stdio: "ignore",
      },
    ),
  );
}

/** A remote member of the sharded group `workers/pool` (12 buckets) over the API, with its member's token. */
function member(id: MemberId): ChildProcess {
  return track(
    spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        shardWorker,
        "http",
        `${server.url}/`,
        "workers/pool",
        id,
        join(dir, `${id}.log`),
        "1000",
        "12",
      ],
      { cwd: repo, env: { ...process.env, LEASEHOLD_TOKEN: memberScope(id).token }, stdio: "ignore" },
    ),
  );
}

let server: Server;
let context: BrowserContext;
let page: Page;
const requests: Array<{ url: string; headers: Record<string, string> }> = [];

/** A call an operator makes by hand, with the write token for `demo/`. */
async function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${SCOPES.operator.token}`,
      ...(body ? { "content-type": "application/json" } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

/** Waits until an element matching `selector` shows `text`. */
async function see(selector: string, text: string | RegExp): Promise<void> {
  try {
    await page.locator(selector, { hasText: text }).first().waitFor({ state: "visible", timeout: WAIT });
  } catch (error) {
    const shown = await page.locator("body").textContent();
    throw new Error(
      `the page never showed ${String(text)} in ${selector}; it shows:\n${shown}\n\nserver:\n${server.output()}`,
      {
        cause: error,
      },
    );
  }
}

async function shoot(name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  server = await startServer();
  context = await chromium.launchPersistentContext(mkdtempSync(join(dir, "profile-")), {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1200, height: 760 },
    deviceScaleFactor: 1,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("request", (r) => requests.push({ url: r.url(), headers: r.headers() }));
}, 120_000);

afterAll(async () => {
  await context?.close();
  await Promise.all(started.map((c) => stopProcess(c)));
  if (server) await stopProcess(server.child);
  rmSync(dir, { recursive: true, force: true });
});

describe("the console in Chromium", () => {
  it("asks for a token, then shows a lease acquired through the API, live, without a reload", async () => {
    await page.goto(`${server.url}/ui`);
    await see("h2", "Token");
    await page.getByLabel("Bearer token").fill(TOKENS.reader);
    await page.getByLabel("Bearer token").press("Enter");
    await see("h2", "Leases");
    await see("#connection", "Live");
    await page.evaluate(() => {
      window.notReloaded = true;
    });

    const acquired = await api("POST", "/v1/leases/demo%2Fmanual/acquire", {
      holder: "operator-a",
      instance: "operator-a-shell-0123456789",
      leaseMs: 60_000,
      metadata: { addr: "10.0.0.7:8080" },
    });
    expect(acquired.status).toBe(200);
    await see('tr[data-name="demo/manual"]', "operator-a");
    await see('tr[data-name="demo/manual"]', "addr=10.0.0.7:8080");
    await see('tr[data-name="demo/manual"]', "held");
    expect(await page.evaluate(() => window.notReloaded)).toBe(true);

    // The token lives in this tab's sessionStorage, and only ever travelled in a header.
    expect(await page.evaluate(() => sessionStorage.getItem("leasehold.console.token"))).toBe(TOKENS.reader);
    expect(requests.filter((r) => r.url.includes(TOKENS.reader))).toEqual([]);
    expect(requests.some((r) => r.headers.authorization === `Bearer ${TOKENS.reader}`)).toBe(true);
    expect(server.output()).not.toContain(TOKENS.reader);
  }, 120_000);

  it("shows a takeover on the lease's timeline after the leader process is SIGKILLed", async () => {
    const leader = runLeader(server.url, "worker-a");
    await see('tr[data-name="jobs/nightly"]', "worker-a");
    const follower = runLeader(server.url, "worker-b");
    // By keyboard: the row's link, Enter; the new view's heading takes the focus.
    await page.locator('a[href="#/lease/jobs%2Fnightly"]').focus();
    await page.keyboard.press("Enter");
    await see("h2", "jobs/nightly");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("jobs/nightly");
    await see(".timeline", /term 1\s*—\s*worker-a/);
    await see(".current", "worker-a");

    leader.kill("SIGKILL");
    await see(".timeline .term.taken-over", "taken over by worker-b");
    await see(".timeline .term.running", /term 2\s*—\s*worker-b/);
    await see(".current", "worker-b");
    await shoot("lease");

    // A graceful stop releases: the timeline says so.
    await stopProcess(follower);
    await see(".timeline .term.released", /term 2[\s\S]*released at/);
  }, 120_000);

  it("shows a sharded group of three balancing, and a killed member's buckets moving", async () => {
    const members = MEMBERS.map(member);
    await page.goto(`${server.url}/ui#/?prefix=workers/`);
    await page.locator('a[href="#/group/workers%2Fpool"]').click();
    await see("h2", "Group workers/pool");
    await see("#group-summary", "✓ balanced");
    for (const id of MEMBERS) await see(`tr[data-member="${id}"]`, "4 / 4");
    expect(await page.locator('.grid li[data-owner="m2"]').count()).toBe(4);
    await shoot("group");

    // Every lease on the server: the group found, and its records among the others in their real
    // state: each bucket held by its owner while the owner's session lives (its own stamps are never
    // renewed), the config marked as the group's.
    await page.goto(`${server.url}/ui#/`);
    await see(".groups", "workers/pool");
    await see('tr[data-name="demo/manual"]', "operator-a");
    await see("#leases-summary", "records of sharded groups are listed too");
    await see('tr[data-name="workers/pool/_config"]', "group config");
    await see('tr[data-name="workers/pool/_members/m2"]', "held");
    for (let bucket = 0; bucket < 12; bucket++) await see(`tr[data-name="workers/pool/_buckets/${bucket}"]`, /held/);
    // Bucket 0 past its record's own renewedAt + leaseMs + maxSkewMs (the record is never renewed):
    // still held, as long as its owner's session lives.
    const own = (await (
      await fetch(`${server.url}/v1/leases/${encodeURIComponent("workers/pool/_buckets/0")}`, {
        headers: { authorization: `Bearer ${TOKENS.reader}` },
      })
    ).json()) as { renewedAt: number; leaseMs: number };
    await page.waitForTimeout(Math.max(0, own.renewedAt + own.leaseMs + 200 + 100 - Date.now()));
    await see('tr[data-name="workers/pool/_buckets/0"]', "held");
    await shoot("leases");
    // Hidden on request, to see the plain leases alone.
    await page.getByLabel("Hide their records below").check();
    await see("#leases-summary", "records of sharded groups are hidden");
    expect(await page.locator('tr[data-name="workers/pool/_members/m2"]').isHidden()).toBe(true);
    await page.locator('a[href="#/group/workers%2Fpool"]').click();
    await see("#group-summary", "✓ balanced");

    members[2]!.kill("SIGKILL");
    // Expired, then fenced by a live member (which may happen before the page looks).
    await see('tr[data-member="m2"]', /expired|fenced/);
    await see('tr[data-member="m0"]', "6 / 6");
    await see('tr[data-member="m1"]', "6 / 6");
    await see("#group-summary", "✓ balanced");
    expect(await page.locator('.grid li[data-owner="m2"]').count()).toBe(0);
    expect(await page.locator(".grid li.unowned").count()).toBe(0);
    await shoot("group-after");
  }, 120_000);

  it("says plainly when the server is gone, and resumes (Last-Event-ID) when it is back", async () => {
    await page.goto(`${server.url}/ui#/lease/jobs%2Fnightly`);
    await see("#connection", "Live");
    await see(".timeline .term.released", "released at");
    const port = server.port;
    await stopProcess(server.child);
    await see("#connection", "Disconnected");
    await see("#banner", "Disconnected from the server");
    await see("#banner", "may be out of date");
    await shoot("disconnected");

    const resumedFrom = requests.length;
    server = await startServer(port);
    await see("#connection", "Live");
    await see("#banner", "Reconnected at");
    await see(".notes", "The server restarted at");
    const watch = requests
      .slice(resumedFrom)
      .find((r) => r.url.endsWith("/v1/leases/jobs%2Fnightly/watch") && r.headers["last-event-id"]);
    expect(watch?.headers["last-event-id"]).toMatch(/^\d+$/);
    // Its memory starts again: the term is known only as first seen, already released.
    await see(".timeline", "first seen already released");
  }, 120_000);
});
