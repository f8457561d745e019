/**
 * `leasehold run` as real OS processes competing for one lease in a SQLite file. The command each
 * wrapper runs (test/support/cli-job.ts) logs "<identity> <term> start|stop <ms>", from which the
 * tests check the safety properties: terms strictly increase, and one leader's command has stopped
 * before the next one's starts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import type { Stored } from "../src/lease.js";
import { CliProcesses, jobCommand, killMentioning, readLog, until } from "./support/cli-processes.js";

const root = mkdtempSync(join(tmpdir(), "leasehold-cli-run-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** One test's world: its own SQLite file, log and children, all cleaned up when the test ends. */
function world(onTestFinished: (fn: () => Promise<void>) => void) {
  const dir = mkdtempSync(join(root, "t-"));
  const url = `sqlite:${join(dir, "leases.db")}`;
  const log = join(dir, "job.log");
  const store = new SqliteStore({ path: join(dir, "leases.db") });
  const procs = new CliProcesses();
  onTestFinished(async () => {
    await procs.killAll();
    await killMentioning(dir); // guards and commands, in process groups of their own
    await store.close();
  });
  const wrapper = (identity: string, leaseMs: number, job: string[], ...flags: string[]) =>
    procs.start([
      "run",
      "--lease",
      "jobs/nightly",
      "--store",
      url,
      "--identity",
      identity,
      "--lease-ms",
      String(leaseMs),
      ...flags,
      "--",
      ...job,
    ]);
  const record = async (): Promise<Stored | null> => store.get("jobs/nightly");
  const read = (name: string): Promise<Stored | null> => store.get(name);
  const started = (identity: string) => () => readLog(log).find((l) => l.identity === identity && l.event === "start");
  /** Terms grow with each start, and every command stopped before the next one started. */
  const expectNoOverlap = (): void => {
    const lines = readLog(log);
    const starts = lines.filter((l) => l.event === "start");
    for (let i = 1; i < starts.length; i++) {
      const [prev, next] = [starts[i - 1]!, starts[i]!];
      expect(next.term).toBeGreaterThan(prev.term);
      const stop = lines.find((l) => l.event === "stop" && l.identity === prev.identity && l.term === prev.term);
      expect(stop, `${prev.identity} term ${prev.term} stopped`).toBeDefined();
      expect(stop!.at).toBeLessThanOrEqual(next.at);
    }
  };
  const job = (...mode: string[]) => jobCommand(log, ...mode);
  return { url, log, procs, wrapper, record, read, started, expectNoOverlap, job };
}

describe("leasehold run", () => {
  it("a leader killed with SIGKILL: its command is stopped by the guard, the other takes over after the lease", async ({
    onTestFinished,
  }) => {
    const { log, wrapper, record, started, expectNoOverlap, job } = world(onTestFinished);
    const leaseMs = 1500;
    const a = wrapper("A", leaseMs, job("sleep"));
    await until("A's command to start", started("A"));
    const b = wrapper("B", leaseMs, job("sleep"));
    await until("B to see A holding", () => b.stderr().includes("is held by A (term 1)"));

    const killedAt = Date.now();
    a.child.kill("SIGKILL");
    const bStart = await until("B's command to start", started("B"));
    const held = (await record())!.record;

    expect(held).toMatchObject({ holder: "B", term: 2 });
    expect(readLog(log).find((l) => l.identity === "A" && l.event === "stop")).toBeDefined();
    expectNoOverlap();
    console.log(
      `takeover after SIGKILL (lease ${leaseMs} ms): B elected ${held.acquiredAt - killedAt} ms, B's command started ${bStart.at - killedAt} ms after the kill`,
    );
    expect(b.child.exitCode).toBeNull();
  });

  it("SIGTERM to the leader: forwarded to its command, lease released at once, the other takes over within a poll", async ({
    onTestFinished,
  }) => {
    const { wrapper, record, started, expectNoOverlap, job } = world(onTestFinished);
    const leaseMs = 4000;
    const a = wrapper("A", leaseMs, job("sleep"));
    await until("A's command to start", started("A"));
    const b = wrapper("B", leaseMs, job("sleep"));
    await until("B to see A holding", () => b.stderr().includes("is held by A (term 1)"));

    const signalledAt = Date.now();
    a.child.kill("SIGTERM");
    const exit = await a.exited;
    const exitedAt = Date.now();
    // Released before the wrapper exited: nobody can still see A holding it.
    expect((await record())?.record.holder).not.toBe("A");
    expect(exit.code).toBe(0); // the command's own status: it exits 0 on SIGTERM
    expect(a.stderr()).toContain("SIGTERM: forwarded to the command");

    const bStart = await until("B's command to start", started("B"));
    const held = (await record())!.record;
    expect(held).toMatchObject({ holder: "B", term: 2 });
    expectNoOverlap();
    // Without the release B would wait out the lease (>= leaseMs - renewMs after A's last renewal).
    expect(held.acquiredAt - exitedAt).toBeLessThan(leaseMs);
    console.log(
      `takeover after SIGTERM (lease ${leaseMs} ms): A exited ${exitedAt - signalledAt} ms after the signal, B elected ${held.acquiredAt - exitedAt} ms after that, B's command started ${bStart.at - signalledAt} ms after the signal`,
    );
  });

  it.concurrent("exits with the command's status and releases the lease", async ({ onTestFinished }) => {
    const { wrapper, record, job } = world(onTestFinished);
    const a = wrapper("A", 1500, job("exit", "3"));
    // Its own account, should the exit status differ (a run under load once exited 75).
    expect((await a.exited).code, a.stderr()).toBe(3);
    expect((await record())?.record).toMatchObject({ holder: null, term: 1 });
    expect(a.stderr()).toContain("command exited with status 3");
  });

  it.concurrent("a command killed by a signal: 128 + the signal number", async ({ onTestFinished }) => {
    const { wrapper, record, job } = world(onTestFinished);
    const a = wrapper("A", 1500, job("killself"));
    expect((await a.exited).code).toBe(128 + 9);
    expect((await record())?.record.holder).toBeNull();
  });

  it.concurrent("a command that cannot be found: 127, lease released", async ({ onTestFinished }) => {
    const { wrapper, record } = world(onTestFinished);
    const a = wrapper("A", 1500, ["/nonexistent/leasehold-test-command"]);
    expect((await a.exited).code).toBe(127);
    expect(a.stderr()).toContain("could not be started");
    expect((await record())?.record).toMatchObject({ holder: null, term: 1 });
  });

  it.concurrent("a command that ignores SIGTERM is killed after --grace-ms, then the lease is released", async ({
    onTestFinished,
  }) => {
    const { log, wrapper, record, started, job } = world(onTestFinished);
    const a = wrapper("A", 1500, job("stubborn"), "--grace-ms", "300");
    await until("A's command to start", started("A"));
    a.child.kill("SIGTERM");
    expect((await a.exited).code).toBe(128 + 9);
    expect(readLog(log).map((l) => l.event)).toEqual(["start", "sigterm-ignored"]);
    expect((await record())?.record).toMatchObject({ holder: null, term: 1 });
  });

  it.concurrent("leadership lost under the command: SIGTERM to it, then exit 75", async ({ onTestFinished }) => {
    const { url, log, procs, wrapper, started, job } = world(onTestFinished);
    const a = wrapper("A", 1500, job("sleep"));
    await until("A's command to start", started("A"));
    const released = await procs.run(["release", "jobs/nightly", "--holder", "A", "--term", "1", "--store", url]);
    expect(released.code).toBe(0);
    // A's next renewal meets the changed revision: it has lost the lease.
    expect((await a.exited).code).toBe(75);
    expect(a.stderr()).toContain('lost leadership of "jobs/nightly" (term 1');
    expect(readLog(log).map((l) => l.event)).toEqual(["start", "stop"]);
  });

  it("--once: after the command succeeds the leader holds the term without rerunning; a stop hands over", async ({
    onTestFinished,
  }) => {
    const { log, wrapper, record, read, started, expectNoOverlap, job } = world(onTestFinished);
    const leaseMs = 2000; // roomy: a loaded machine must not make A miss renewals
    const a = wrapper("A", leaseMs, job("exit", "0"), "--once");
    await until("A's command to finish", () => a.stderr().includes("holding"));
    const b = wrapper("B", leaseMs, job("exit", "0"), "--once");
    await until("B to see A holding", () => b.stderr().includes("is held by A (term 1)"));
    // What A renews: the session its lease is bound to (leasehold run's Elector, by default).
    const renewed = async () => {
      const lease = (await record())!;
      return lease.record.session ? (await read(lease.record.session.name))! : lease;
    };
    const before = await renewed();
    // More than a lease plus a poll: B would have taken over by now had A stopped renewing or released.
    await new Promise((r) => setTimeout(r, 1.4 * leaseMs));
    expect((await record())!.record).toMatchObject({ holder: "A", term: 1 });
    const after = await renewed();
    expect(Number(after.revision)).toBeGreaterThan(Number(before.revision)); // still renewing
    expect(readLog(log).filter((l) => l.event === "start")).toHaveLength(1);

    a.child.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    await until("B's command to run", started("B"));
    await until("B to hold after its command", () => b.stderr().includes("holding"));
    expect((await record())?.record).toMatchObject({ holder: "B", term: 2 });
    expectNoOverlap();
  });

  it("SIGTERM while waiting: stops campaigning, 128 + 15, never runs the command", async ({ onTestFinished }) => {
    const { log, wrapper, record, started, job } = world(onTestFinished);
    wrapper("A", 1500, job("sleep"));
    await until("A's command to start", started("A"));
    const b = wrapper("B", 1500, job("sleep"));
    await until("B to see A holding", () => b.stderr().includes("is held by A (term 1)"));
    b.child.kill("SIGTERM");
    expect((await b.exited).code).toBe(128 + 15);
    expect(readLog(log).filter((l) => l.identity === "B")).toEqual([]);
    expect((await record())?.record.holder).toBe("A");
  });
});
