/**
 * A real PostgreSQL for tests and benchmarks, from Debian's postgresql-15 binaries (`.ci/run`
 * installs the package): `initdb` into a fresh temporary folder, then `postgres` on 127.0.0.1 and a
 * free port, its unix socket inside that folder. PostgreSQL refuses to run as root, so under root
 * (CI, these machines) both run as the `postgres` user the package creates, and the folder is
 * handed to it; anyone else runs them as themselves. The server keeps its default durability
 * (`fsync = on`, `synchronous_commit = on`), which the store checks. TCP connections authenticate
 * with a password (SCRAM), as in production; the socket trusts its local user.
 *
 * `kill9()` and `restart()` are for the crash test: SIGKILL the postmaster (its backends exit when
 * they notice) and start it again on the same folder and port, so WAL recovery runs.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "./server-process.js";

export const PG_BIN = process.env.LEASEHOLD_PG_BIN ?? "/usr/lib/postgresql/15/bin";
export const PG_USER = "leasehold";
export const PG_PASSWORD = "leasehold-test";
export const PG_DATABASE = "leasehold";

export interface RunningPostgres {
  /** `postgres://leasehold:...@127.0.0.1:PORT/leasehold`: the test database, over TCP with a password. */
  url: string;
  /** The same server's URL for another database on it. */
  urlFor(database: string): string;
  port: number;
  /** The PID of the postmaster (the server's parent process). */
  pid(): number;
  /** SIGKILL the postmaster; resolves once it has exited. */
  kill9(): Promise<void>;
  /** Starts the server again on the same data folder and port (crash recovery runs). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

interface Owner {
  uid: number;
  gid: number;
}

/** Who runs the server: the `postgres` user under root, else this user. */
function serverOwner(): Owner | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    return { uid, gid };
  } catch {
    throw new Error(
      "PostgreSQL refuses to run as root and there is no `postgres` user: install Debian's postgresql-15 (apt-get install -y postgresql-15), which creates it",
    );
  }
}

function chownTree(path: string, owner: Owner): void {
  chownSync(path, owner.uid, owner.gid);
  if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) chownTree(join(path, entry), owner);
}

function run(binary: string, args: string[], owner: Owner | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(PG_BIN, binary), args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", LANG: "C" },
      ...(owner ?? {}),
    });
    let output = "";
    child.stdout?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.stderr?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${binary} ${args.join(" ")} failed (${code}):\n${output}`)),
    );
  });
}

/** Connects as the test user over TCP until the server answers, or fails with its output. */
async function waitUntilUp(port: number, database: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  for (;;) {
    if (exited) throw new Error(`postgres on 127.0.0.1:${port} exited while starting:\n${output()}`);
    const client = new pg.Client({ host: "127.0.0.1", port, user: PG_USER, password: PG_PASSWORD, database });
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`postgres on 127.0.0.1:${port} did not answer: ${error}\n${output()}`);
    } finally {
      await client.end().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface StartPostgresOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string>;
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<RunningPostgres> {
  if (!existsSync(join(PG_BIN, "postgres"))) {
    throw new Error(
      `no PostgreSQL server at ${PG_BIN}: install Debian's postgresql-15 (apt-get install -y postgresql-15), or set LEASEHOLD_PG_BIN`,
    );
  }
  const owner = serverOwner();
  const dir = mkdtempSync(join(tmpdir(), "leasehold-pg-"));
  const data = join(dir, "data");
  const passwordFile = join(dir, "password");
  writeFileSync(passwordFile, PG_PASSWORD);
  if (owner) chownTree(dir, owner);
  await run(
    "initdb",
    [
      "-D",
      data,
      "-U",
      PG_USER,
      `--pwfile=${passwordFile}`,
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      "-E",
      "UTF8",
      "--no-locale",
      // initdb's own files are not synced: a test cluster need not survive a power loss of the
      // machine before its first start. The server itself syncs as in production (fsync = on).
      "--no-sync",
    ],
    owner,
  );
  const port = await freePort();
  const settings: Record<string, string> = {
    listen_addresses: "127.0.0.1",
    unix_socket_directories: dir,
    max_connections: "300",
    shared_buffers: "32MB",
    log_min_messages: "fatal",
    ...options.settings,
  };
  const args = ["-D", data, "-p", String(port), ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`])];
  let child: ChildProcess | undefined;
  let output = "";
  const launch = async (database: string) => {
    output = "";
    const started = spawn(join(PG_BIN, "postgres"), args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", LANG: "C" },
      ...(owner ?? {}),
    });
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8192);
    };
    started.stdout?.on("data", keep);
    started.stderr?.on("data", keep);
    child = started;
    await waitUntilUp(port, database, started, () => output);
  };
  const exited = async (signal: NodeJS.Signals) => {
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const done = new Promise<void>((r) => current.once("exit", () => r()));
    current.kill(signal);
    // SIGTERM is PostgreSQL's "smart" shutdown (it waits for clients): SIGINT ("fast") after 3 s.
    const timer = signal === "SIGKILL" ? undefined : setTimeout(() => current.kill("SIGINT"), 3000);
    await done;
    clearTimeout(timer);
  };
  try {
    await launch("postgres");
    const admin = new pg.Client({
      host: "127.0.0.1",
      port,
      user: PG_USER,
      password: PG_PASSWORD,
      database: "postgres",
    });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${PG_DATABASE}`);
    await admin.end();
  } catch (error) {
    await exited("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const urlFor = (database: string) =>
    `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return {
    url: urlFor(PG_DATABASE),
    urlFor,
    port,
    pid: () => child?.pid ?? -1,
    kill9: async () => {
      await exited("SIGKILL");
      // The backends notice their postmaster is gone and exit; the next start waits for them
      // (it refuses to start while any still holds the shared memory).
    },
    restart: async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await launch(PG_DATABASE);
          return;
        } catch (error) {
          // Orphaned backends of a killed postmaster may still be exiting: try again shortly.
          if (Date.now() > deadline) throw error;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
    stop: async () => {
      await exited("SIGINT");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
