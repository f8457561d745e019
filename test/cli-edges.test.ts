/**
 * The CLI where production meets it, through the real binary: --version; read-only commands
 * never create a database (or its folder) and say which store and what chose it; SQLite errors
 * name the file and the variable; a server that wants a token ends status, watch and release
 * with exit 2 naming LEASEHOLD_TOKEN; `watch` on a polling store does not pile up listeners.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { watchCommand } from "../src/cli/watch.js";
import { newWriteId } from "../src/lease.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { repo } from "./support/cli-processes.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const root = mkdtempSync(join(tmpdir(), "leasehold-cli-edges-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const bin = join(repo, "bin", "leasehold.js");

/** Runs the binary in `cwd` with only the variables given (plus PATH/HOME), to completion. */
function leasehold(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: options.cwd ?? root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? root, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
}

it("--version prints the package's version", async () => {
  const { version } = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string };
  for (const flag of ["--version", "-V"]) {
    const result = await leasehold([flag]);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
  }
});

describe("read-only commands never create a database", () => {
  it.each([[["status"]], [["watch", "jobs/x"]], [["release", "jobs/x", "--holder", "a", "--term", "1"]]])(
    "%j from another folder: an error naming the file and what chose it, and no data/ left behind",
    async (args) => {
      const cwd = mkdtempSync(join(root, "elsewhere-"));
      const result = await leasehold(args, { cwd });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        "leasehold: SQLite ./data/leasehold.db: no such database file (nothing was created) (store sqlite:./data/leasehold.db, chosen by the default)\n",
      );
      expect(readdirSync(cwd)).toEqual([]);
    },
  );

  it("LEASEHOLD_DB names the file the commands use, as it does for npm start", async () => {
    const path = join(root, "by-variable.db");
    const seeded = new SqliteStore({ path });
    const now = Date.now();
    await seeded.put(
      {
        name: "jobs/db",
        holder: "erin",
        term: 4,
        leaseMs: 60_000,
        acquiredAt: now,
        renewedAt: now,
        metadata: {},
        writeId: newWriteId(),
      },
      null,
    );
    await seeded.close();
    const status = await leasehold(["status", "--json"], { env: { LEASEHOLD_DB: path } });
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject([{ name: "jobs/db", holder: "erin", term: 4 }]);
    const missing = await leasehold(["status"], { env: { LEASEHOLD_DB: join(root, "nope", "x.db") } });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("chosen by LEASEHOLD_DB");
    expect(existsSync(join(root, "nope"))).toBe(false);
    const both = await leasehold(["status"], { env: { LEASEHOLD_DB: path, LEASEHOLD_STORE: "memory:" } });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("LEASEHOLD_DB: contradicts LEASEHOLD_STORE");
  });
});

it("run refuses a lease too short for a renewal to land in its safe window, naming --lease-ms", async () => {
  const path = join(root, "short.db");
  const result = await leasehold(["run", "--lease", "jobs/short", "--lease-ms", "10", "--", "true"], {
    env: { LEASEHOLD_DB: path },
  });
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(
    /^leasehold: invalid run options: --lease-ms: a lease of 10 ms leaves a renewal 6 ms between falling due and the end of its safe window, but a round trip to the store took \d+ ms \(\d+ ms needed, .*\): use --lease-ms \d+ or more\n$/,
  );
  // Nothing was campaigned for: the lease was never written.
  const store = new SqliteStore({ path });
  expect(await store.get("jobs/short")).toBeNull();
  await store.close();
});

it("a SQLite file that cannot be opened is named, with the variable that chose it", async () => {
  const blocked = join(root, "not-a-folder");
  mkdirSync(blocked);
  // A path below a regular file can never be created, whoever runs the test (root included).
  writeFileSync(join(blocked, "file"), "");
  const path = join(blocked, "file", "leases.db");
  const result = await leasehold(["run", "--lease", "jobs/x", "--", "true"], { env: { LEASEHOLD_DB: path } });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(`SQLite ${path}: cannot open the database`);
  expect(result.stderr).toContain(`(store sqlite:${path}, chosen by LEASEHOLD_DB)`);
});

describe("a server that requires a token", () => {
  let api: Awaited<ReturnType<typeof startApi>>;
  beforeAll(async () => {
    api = await startApi({});
  });
  afterAll(() => api.close());

  it.each([
    [["status"]],
    [["watch", "jobs/x"]],
    [["release", "jobs/x", "--holder", "a", "--term", "1"]],
    [["run", "--lease", "jobs/x", "--", "true"]],
  ])("%j without LEASEHOLD_TOKEN ends with exit 2 naming the variable", async (args) => {
    // Right after the command's name: whatever follows a "--" belongs to run's command.
    const result = await leasehold([args[0] ?? "", "--store", api.url, ...args.slice(1)]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^leasehold: the API requires a token \(401: .*\); set LEASEHOLD_TOKEN/);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("a token the server does not know, and one outside its scope, are named too", async () => {
    const unknown = await leasehold(["status", "--store", api.url], { env: { LEASEHOLD_TOKEN: "not-a-token-0000" } });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("does not accept the token in LEASEHOLD_TOKEN (401");
    const scoped = await leasehold(["release", "jobs/x", "--holder", "a", "--term", "1", "--store", api.url], {
      env: { LEASEHOLD_TOKEN: TOKENS.adapters },
    });
    expect(scoped.code).toBe(2);
    expect(scoped.stderr).toContain("refused the token in LEASEHOLD_TOKEN (403");
    expect(`${unknown.stderr}${scoped.stderr}`).not.toContain(TOKENS.adapters);
  });
});

it("watch on a polling store keeps no listener per poll (no MaxListenersExceededWarning over 40 polls)", async () => {
  // DynamoDB has no push: the command polls it (SQLite pushes, and would never poll).
  const client = dynamoClient(testEndpoint());
  const table = await createLeaseTable(client);
  client.destroy();
  const url = `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`;
  // The SDK reads its credentials from the process's environment: dynalite takes any.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "leasehold-test");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "leasehold-test");
  onTestFinished(() => {
    vi.unstubAllEnvs();
  });
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on("warning", onWarning);
  let polls = 0;
  const lines: string[] = [];
  const stopAfter = new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (polls >= 40) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  const stop = new AbortController();
  const watching = watchCommand(
    { store: url, name: "jobs/leak", json: true, pollMs: 5, onPoll: () => polls++, signal: stop.signal },
    { env: {}, out: (l) => lines.push(l), say: (l) => lines.push(l) },
  );
  await stopAfter;
  stop.abort();
  expect(await watching).toBe(0);
  process.off("warning", onWarning);
  expect(polls).toBeGreaterThanOrEqual(40);
  expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
  expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ event: "absent", name: "jobs/leak" });
});
