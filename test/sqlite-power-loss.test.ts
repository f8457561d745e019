/**
 * The SQLite store across a power loss (docs/design.md §2, "What survives a crash"): on a file
 * system that keeps unsynced writes in memory (test/support/power-loss-fs.py), the API server
 * (`npm start`'s entry) and a library Elector run on SQLite files while their clients print every
 * write they were told succeeded; then the server and the Elector are killed with SIGKILL and
 * the file system with them (the power loss), it is mounted again (the reboot), both restart, and
 * new candidates take over. No acknowledged term, revision or renewal may be missing or reissued.
 *
 * The control runs the same trial on the old store (synchronous=NORMAL, each write committed alone
 * on the server's thread) and must see exactly what the issue reported: the lease gone, its term
 * and revisions handed out again. So the test is known to catch the loss it guards against.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { repo, until } from "./support/cli-processes.js";
import { mountPowerLossFs, type PowerLossMount } from "./support/power-loss-fs.js";

const client = join(repo, "test", "support", "power-loss-client.ts");
const LEASE = "power/loss";

interface Line {
  op: string;
  term: number | null;
  revision: number | null;
  leader?: boolean;
}

interface Proc {
  child: ChildProcess;
  lines: Line[];
  stderr: () => string;
  exited: Promise<unknown>;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

function start(args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, ["--import", "tsx", ...args], {
    cwd: repo,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const proc: Proc = { child, lines: [], stderr: () => err, exited: new Promise((r) => child.once("exit", r)) };
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    for (let nl = out.indexOf("\n"); nl >= 0; nl = out.indexOf("\n")) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      if (line.startsWith("{")) proc.lines.push(JSON.parse(line) as Line);
    }
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-8192);
  });
  cleanups.push(() => kill(proc));
  return proc;
}

async function kill(...procs: Proc[]): Promise<void> {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
}

type Store = "fixed" | "normal";

/** The API server on `db`: `npm start`'s entry (fixed), or the old store in the same server (normal). */
async function startServer(store: Store, db: string): Promise<{ proc: Proc; url: string }> {
  const proc =
    store === "fixed"
      ? start([join(repo, "src/runtime/node.ts")], {
          LEASEHOLD_DB: db,
          PORT: "0",
          HOST: "127.0.0.1",
          LEASEHOLD_LOG: "text",
        })
      : start([join(repo, "test/support/sqlite-api-process.ts"), db, "normal"]);
  const url = await until(`the API server on ${db} (${store})`, () => {
    if (proc.child.exitCode !== null) throw new Error(`the API server exited: ${proc.stderr()}`);
    const fromLog = /API on (http:\/\/[^;]+);/.exec(proc.stderr())?.[1];
    return fromLog ?? (proc.lines[0] as unknown as { url?: string } | undefined)?.url;
  });
  return { proc, url };
}

async function mount(backing: string, mountpoint: string): Promise<PowerLossMount> {
  const fs = await mountPowerLossFs(backing, mountpoint);
  cleanups.push(() => fs.powerLoss());
  return fs;
}

const acked = (p: Proc) => p.lines.filter((l) => ["acquire", "renew", "put"].includes(l.op) && l.revision !== null);
const maxOf = (values: number[]) => Math.max(0, ...values);

/** One trial; returns what went back, in words (empty: nothing did). */
async function trial(store: Store): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), "leasehold-power-loss-"));
  cleanups.push(async () => rmSync(root, { recursive: true, force: true }));
  const backing = join(root, "disk");
  const mnt = join(root, "mnt");
  mkdirSync(backing);
  mkdirSync(mnt);
  const apiDb = join(mnt, "api.db");
  const libDb = join(mnt, "lib.db");

  // Before: A leads through the API and renews as fast as answered; an Elector leads on the library.
  const before = await mount(backing, mnt);
  const server = await startServer(store, apiDb);
  const holder = start([client, "api-hold", server.url, LEASE, "a", "300"]);
  const elector = start([client, "elector", libDb, LEASE, "lib-a", ...(store === "normal" ? ["normal"] : [])]);
  await until(
    "20 acknowledged API renewals and 5 Elector writes",
    () => {
      for (const p of [server.proc, holder, elector]) {
        if (p.child.exitCode !== null) throw new Error(`a process exited early: ${p.stderr()}`);
      }
      return acked(holder).length >= 20 && elector.lines.some((l) => l.op === "elected") && acked(elector).length >= 5;
    },
    60_000,
  );

  // The power loss: the processes and the file system die at once; unsynced writes are gone.
  await kill(server.proc, elector);
  await holder.exited;
  await before.powerLoss();

  // The reboot: mount again, restart the server, and let new candidates take over.
  await mount(backing, mnt);
  const restarted = await startServer(store, apiDb);
  const response = await fetch(`${restarted.url}/v1/leases/${encodeURIComponent(LEASE)}`);
  const current = response.status === 200 ? ((await response.json()) as { term: number; revision: string }) : null;
  const taker = start([client, "api-take", restarted.url, LEASE, "b", "300"]);
  const successor = start([client, "elector", libDb, LEASE, "lib-b", ...(store === "normal" ? ["normal"] : [])]);
  await until("the new API holder", () => taker.lines.some((l) => l.leader), 60_000);
  await until("the new Elector leader", () => successor.lines.some((l) => l.op === "elected"), 60_000);
  await kill(successor, restarted.proc);

  const problems: string[] = [];
  const judge = (what: string, before: Line[], after: Line[], seen: { term: number; revision: number } | null) => {
    const term = maxOf(before.map((l) => l.term ?? 0));
    const revision = maxOf(before.map((l) => l.revision ?? 0));
    if (seen === null)
      problems.push(`${what}: the lease was gone after the restart (revision ${revision} was acknowledged)`);
    else if (seen.revision < revision) {
      problems.push(`${what}: revision went back from ${revision} (acknowledged) to ${seen.revision}`);
    }
    const next = after.find((l) => l.op === "elected" || l.leader);
    if (next && (next.term ?? 0) <= term)
      problems.push(`${what}: term ${next.term} was reissued (term ${term} was acknowledged)`);
    for (const l of after) {
      if ((l.op === "put" || l.leader) && (l.revision ?? 0) <= revision) {
        problems.push(`${what}: revision ${l.revision} was reused (revision ${revision} was acknowledged)`);
        break;
      }
    }
  };
  judge("API", acked(holder), taker.lines, current && { term: current.term, revision: Number(current.revision) });
  const firstRead = successor.lines.find((l) => l.op === "get");
  judge(
    "Elector",
    acked(elector),
    successor.lines,
    firstRead?.revision == null ? null : { term: firstRead.term ?? 0, revision: firstRead.revision },
  );
  return problems;
}

describe("SQLite across a power loss", () => {
  it("the API server and the library keep every acknowledged term, revision and renewal", async () => {
    expect(await trial("fixed")).toEqual([]);
  }, 180_000);

  it("control: the old synchronous=NORMAL store loses them, and hands the term and revisions out again", async () => {
    const problems = await trial("normal");
    for (const what of ["API", "Elector"]) {
      expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^${what}: the lease was gone`)));
      expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^${what}: term 1 was reissued`)));
      expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^${what}: revision 1 was reused`)));
    }
  }, 180_000);
});
