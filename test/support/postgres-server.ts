/**
 * A real PostgreSQL for tests and benchmarks, from Debian's postgresql-15 binaries (`.ci/run`
 * installs the package): a cluster in a fresh temporary folder, then `postgres` on 127.0.0.1 and a
 * free port, its unix socket inside that folder. PostgreSQL refuses to run as root, so under root
 * (CI, these machines) both run as the `postgres` user the package creates, and the folder is
 * handed to it; anyone else runs them as themselves. The server keeps its default durability
 * (`fsync = on`, `synchronous_commit = on`), which the store checks. TCP connections authenticate
 * with a password (SCRAM), as in production; the socket trusts its local user.
 *
 * The cluster (initdb, and the test database in it) is made once per machine into
 * `.cache/postgres/` and copied for each start. `stop()` is an immediate shutdown (SIGQUIT): a
 * test cluster is thrown away, so it skips the shutdown checkpoint.
 *
 * `kill9()` and `restart()` are for the crash test (`crashable: true`): the server then runs in a
 * process group of its own, and `kill9()` SIGKILLs the whole group at once (the postmaster and every
 * backend, as a crash of the machine's PostgreSQL would end them, with no backend left to finish a
 * commit); `restart()` starts it again on the same folder and port, so WAL recovery runs.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { installFolder } from "./cache-folder.js";
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

/** One `postgres` process on `data`: started, up (a connection to `database` answers), stopped by a signal. */
interface ServerProcess {
  child: ChildProcess;
  /** Sends `signal` (SIGQUIT: immediate shutdown, SIGINT: fast, with a checkpoint) and waits for the exit. */
  stop(signal: NodeJS.Signals): Promise<void>;
}

async function serve(
  data: string,
  port: number,
  settings: Record<string, string>,
  options: { owner: Owner | undefined; detached: boolean; database: string },
): Promise<ServerProcess> {
  const args = ["-D", data, "-p", String(port), ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`])];
  const child = spawn(join(PG_BIN, "postgres"), args, {
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", LANG: "C" },
    ...(options.owner ?? {}),
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8192);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const stop = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const done = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill(signal);
    const timer = signal === "SIGKILL" ? undefined : setTimeout(() => child.kill("SIGKILL"), 10_000);
    await done;
    clearTimeout(timer);
  };
  try {
    await waitUntilUp(port, options.database, child, () => output);
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  }
  return { child, stop };
}

export interface StartPostgresOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string>;
  /** A process group of its own, which `kill9()` kills whole. */
  crashable?: boolean;
}

const projectRoot = resolve(import.meta.dirname, "../..");
const INITDB_ARGS = [
  ...["-U", PG_USER, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale"],
  // 1 MB WAL segments rather than 16: a test cluster's files stay small to copy and to delete.
  "--wal-segsize=1",
];

/**
 * The template cluster, made once per machine (per server version and initdb arguments): initdb,
 * then one start to create the test database, and a clean shutdown (its checkpoint syncs it all).
 */
async function template(owner: Owner | undefined): Promise<string> {
  const version = /\(PostgreSQL\) (\S+)/.exec(
    execFileSync(join(PG_BIN, "postgres"), ["--version"], { encoding: "utf8" }),
  )?.[1];
  const key = createHash("sha256")
    .update(JSON.stringify([INITDB_ARGS, PG_PASSWORD, PG_DATABASE]))
    .digest("hex")
    .slice(0, 12);
  const dir = join(projectRoot, ".cache", "postgres", `${version ?? "unknown"}-${key}`);
  await installFolder(dir, async (staging) => {
    // Built as the server's user, in a folder of its own outside the cache.
    const work = mkdtempSync(join(tmpdir(), "leasehold-initdb-"));
    try {
      const passwordFile = join(work, "password");
      writeFileSync(passwordFile, PG_PASSWORD);
      if (owner) chownTree(work, owner);
      const data = join(work, "data");
      await run("initdb", ["-D", data, `--pwfile=${passwordFile}`, "--no-sync", ...INITDB_ARGS], owner);
      const port = await freePort();
      const server = await serve(
        data,
        port,
        { listen_addresses: "127.0.0.1", unix_socket_directories: work },
        {
          owner,
          detached: false,
          database: "postgres",
        },
      );
      try {
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
      } finally {
        await server.stop("SIGINT");
      }
      cpSync(data, join(staging, "data"), { recursive: true });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
  return join(dir, "data");
}

/** Makes the template cluster now (test:setup), so the first test run does not. */
export async function installPostgresTemplate(): Promise<void> {
  await template(serverOwner());
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<RunningPostgres> {
  if (!existsSync(join(PG_BIN, "postgres"))) {
    throw new Error(
      `no PostgreSQL server at ${PG_BIN}: install Debian's postgresql-15 (apt-get install -y postgresql-15), or set LEASEHOLD_PG_BIN`,
    );
  }
  const owner = serverOwner();
  const source = await template(owner);
  const dir = mkdtempSync(join(tmpdir(), "leasehold-pg-"));
  const data = join(dir, "data");
  cpSync(source, data, { recursive: true });
  chmodSync(data, 0o700);
  if (owner) chownTree(dir, owner);
  const port = await freePort();
  const settings: Record<string, string> = {
    listen_addresses: "127.0.0.1",
    unix_socket_directories: dir,
    max_connections: "300",
    shared_buffers: "32MB",
    log_min_messages: "fatal",
    ...options.settings,
  };
  const launch = () =>
    serve(data, port, settings, { owner, detached: options.crashable === true, database: PG_DATABASE });
  let server: ServerProcess;
  try {
    server = await launch();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const urlFor = (database: string) =>
    `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return {
    url: urlFor(PG_DATABASE),
    urlFor,
    port,
    pid: () => server.child.pid ?? -1,
    kill9: async () => {
      const { child } = server;
      if (!options.crashable || child.pid === undefined)
        throw new Error("kill9 needs a server started with crashable: true");
      const done = new Promise<void>((r) => child.once("exit", () => r()));
      process.kill(-child.pid, "SIGKILL");
      await done;
    },
    restart: async () => {
      server = await launch();
    },
    // A test cluster is thrown away: an immediate shutdown skips the checkpoint, and its folder is
    // deleted in the background (deleting files the server synced takes seconds on a disk mounted
    // with `discard`, and nothing waits for it).
    stop: async () => {
      await server.stop("SIGQUIT");
      spawn("rm", ["-rf", "--", dir], { detached: true, stdio: "ignore" }).unref();
    },
  };
}
