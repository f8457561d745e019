/**
 * The DynamoDB lock clients a user would otherwise pick, each candidate its own process
 * (bench/peers/): awslabs' Java lock client (Maven Central) and cirello.io/dynamolock/v2 (Go). Both
 * print `{"event":"waiting"|"acquired"|"released","at":"<CLOCK_MONOTONIC ns>"}` lines; SIGTERM
 * releases, SIGKILL crashes. A peer that cannot be built here (no Maven, no Go module proxy)
 * throws with the reason, and the bench prints that reason instead of its row.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { stopProcess } from "../../test/support/server-process.js";

const run = promisify(execFile);
const peers = join(import.meta.dirname, "..", "peers");

/** How to start one candidate: the lock key, owner, lease and timings, and the endpoint to use. */
export type PeerCommand = (args: PeerArgs) => { file: string; args: string[] };
export interface PeerArgs {
  endpoint: string;
  table: string;
  key: string;
  owner: string;
  leaseMs: number;
  heartbeatMs: number;
  refreshMs: number;
}

const positional = (a: PeerArgs) =>
  [a.endpoint, a.table, a.key, a.owner, a.leaseMs, a.heartbeatMs, a.refreshMs].map(String);

/** Resolves the Java lock client with Maven and compiles bench/peers/java/LockCandidate.java. */
export async function buildJavaPeer(): Promise<PeerCommand> {
  const out = mkdtempSync(join(tmpdir(), "leasehold-java-peer-"));
  const cpFile = join(out, "classpath");
  const pom = join(peers, "java", "pom.xml");
  await run("mvn", ["-q", "-f", pom, "dependency:build-classpath", `-Dmdep.outputFile=${cpFile}`], {
    timeout: 600_000,
  });
  const classpath = readFileSync(cpFile, "utf8").trim();
  await run("javac", ["-cp", classpath, "-d", out, join(peers, "java", "LockCandidate.java")]);
  return (a) => ({ file: "java", args: ["-cp", `${out}:${classpath}`, "LockCandidate", ...positional(a)] });
}

/** The cirello.io/dynamolock/v2 release the module proxy serves here (v2.0.0 and v2.2.0 are refused). */
export const DYNAMOLOCK_VERSION = "v2.1.0";

/**
 * Builds bench/peers/go-dynamolock against cirello.io/dynamolock/v2 `DYNAMOLOCK_VERSION` from the
 * Go module proxy, or against the source tree in DYNAMOLOCK_V2_DIR when that is set.
 */
export async function buildGoPeer(): Promise<PeerCommand> {
  const source = process.env.DYNAMOLOCK_V2_DIR;
  const dir = mkdtempSync(join(tmpdir(), "leasehold-go-peer-"));
  cpSync(join(peers, "go-dynamolock"), dir, { recursive: true });
  const env = { ...process.env, CGO_ENABLED: "0" };
  const edits = [`-require=cirello.io/dynamolock/v2@${DYNAMOLOCK_VERSION}`];
  if (source) edits.push(`-replace=cirello.io/dynamolock/v2=${source}`);
  await run("go", ["mod", "edit", ...edits], { cwd: dir, env });
  await run("go", ["mod", "tidy"], { cwd: dir, env, timeout: 600_000 });
  await run("go", ["build", "-o", join(dir, "candidate"), "."], { cwd: dir, env, timeout: 600_000 });
  return (a) => ({ file: join(dir, "candidate"), args: positional(a) });
}

/** One running candidate process and the CLOCK_MONOTONIC stamps of what it said. */
export class PeerProcess {
  readonly child: ChildProcess;
  readonly waiting: Promise<bigint>;
  readonly acquired: Promise<bigint>;
  private output = "";

  constructor(command: { file: string; args: string[] }) {
    this.child = spawn(command.file, command.args, { stdio: ["ignore", "pipe", "pipe"] });
    const events = new Map<string, (at: bigint) => void>();
    const on = (event: string) => new Promise<bigint>((resolve) => events.set(event, resolve));
    this.waiting = on("waiting");
    this.acquired = on("acquired");
    let pending = "";
    this.child.stdout?.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const parsed = JSON.parse(line) as { event: string; at: string };
        events.get(parsed.event)?.(BigInt(parsed.at));
      }
    });
    this.child.stderr?.on("data", (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-4000);
    });
  }

  /** Its stderr tail, for a run that went wrong. */
  errors(): string {
    return this.output;
  }

  kill(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    this.child.kill("SIGKILL");
    return exited;
  }

  /** SIGTERM: the candidate releases its lock, then exits. */
  terminate(): Promise<void> {
    return stopProcess(this.child);
  }
}
