/**
 * Builds a pinned Go program into `.cache/<name>/<version>/` with `go install` unless it is there
 * already (quiet on success, the whole build log on failure), so a fresh CI machine needs only Go.
 * The binary is built in a private folder and renamed into place: two runs installing at once never
 * see half a binary.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
const MIN_GO = [1, 25] as const;

export interface GoProgram {
  /** Folder name under .cache/ and the binary's name, e.g. "versitygw". */
  name: string;
  /** What `go install` takes before "@", e.g. "github.com/versity/versitygw/cmd/versitygw". */
  installPath: string;
  /** The file `go install` writes, when it is not `name` (the last element of installPath, e.g. "server"). */
  built?: string;
  /** A tag, e.g. "v1.8.0". */
  version: string;
  /** Extra environment for the build (e.g. GOFLAGS); `-p 1` keeps memory low on small machines. */
  env?: Record<string, string>;
  args?: string[];
  /** Why the tests need it, for the error when Go is missing. */
  purpose: string;
}

export function goBinaryPath(program: GoProgram): string {
  return join(projectRoot, ".cache", program.name, program.version, program.name);
}

/** Builds `program` unless cached; returns the binary's path. */
export async function installGoProgram(program: GoProgram): Promise<string> {
  const binary = goBinaryPath(program);
  if (existsSync(binary)) return binary;
  await checkGo(program.purpose);
  const dir = join(binary, "..");
  mkdirSync(dir, { recursive: true });
  const staging = mkdtempSync(join(dir, ".install-"));
  const target = `${program.installPath}@${program.version}`;
  try {
    await run("go", ["install", ...(program.args ?? []), target], {
      env: { ...process.env, GOBIN: staging, CGO_ENABLED: "0", ...program.env },
      maxBuffer: 64 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `building ${program.name} failed: go install ${target}\n${error.stderr || error.stdout || error.message}`,
      );
    });
    renameSync(join(staging, program.built ?? program.name), binary);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binary;
}

/** Fails with what to install when `go` is missing or older than `minimum`; `purpose` says why it is needed. */
export async function checkGo(purpose: string, minimum: readonly [number, number] = MIN_GO): Promise<void> {
  const advice = `install Go >= ${minimum.join(".")} (https://go.dev/dl/, or Debian's golang-go if it is that recent): ${purpose}`;
  let version: string;
  try {
    version = (await run("go", ["env", "GOVERSION"])).stdout.trim();
  } catch (cause) {
    throw new Error(`the "go" command was not found: ${advice}`, { cause });
  }
  const match = /^go(\d+)\.(\d+)/.exec(version);
  const [major, minor] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (major < minimum[0] || (major === minimum[0] && minor < minimum[1])) {
    throw new Error(`found ${version || "an unknown Go"}, too old: ${advice}`);
  }
}
