/**
 * Schemathesis for test/schemathesis.test.ts, installed once into a virtualenv under
 * `.cache/schemathesis/<version>-<hash of the pins>/` when missing (the fake-gcs-server pattern:
 * build in a private folder and rename, quiet on success, the whole log on failure), so a fresh
 * machine needs only Python >= 3.11 with its venv module. The exact versions are
 * test/schemathesis/requirements.txt.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

export const SCHEMATHESIS_VERSION = "4.32.5";
const MIN_PYTHON = [3, 11] as const;

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
export const schemathesisDir = join(projectRoot, "test/schemathesis");
const requirements = join(schemathesisDir, "requirements.txt");

function venvDir(): string {
  const pins = createHash("sha256").update(readFileSync(requirements)).digest("hex").slice(0, 12);
  return join(projectRoot, ".cache/schemathesis", `${SCHEMATHESIS_VERSION}-${pins}`);
}

/**
 * Installs the pinned Schemathesis unless it is already cached; returns the command that runs it.
 * A virtualenv's scripts name its folder in their first line, so after the rename the CLI is run
 * as a module of the venv's own python, which finds its packages from where it now lives.
 */
export async function installSchemathesis(): Promise<string[]> {
  const dir = venvDir();
  const command = [join(dir, "bin/python"), "-m", "schemathesis.cli"];
  if (existsSync(dir)) return command;
  const python = await findPython();
  mkdirSync(join(dir, ".."), { recursive: true });
  const staging = mkdtempSync(join(dir, "../.install-"));
  try {
    const steps: string[][] = [
      [python, "-m", "venv", staging],
      [
        join(staging, "bin/python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
        requirements,
      ],
    ];
    for (const [file, ...args] of steps) {
      await run(file!, args, { maxBuffer: 64 * 1024 * 1024 }).catch(
        (error: { stdout?: string; stderr?: string; message: string }) => {
          throw new Error(
            `installing Schemathesis ${SCHEMATHESIS_VERSION} failed: ${[file, ...args].join(" ")}\n${error.stderr ?? ""}${error.stdout ?? ""}${error.message}`,
          );
        },
      );
    }
    try {
      renameSync(staging, dir);
    } catch (error) {
      // Another run installed it first: theirs is as good as ours.
      if (!existsSync(dir)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return command;
}

async function findPython(): Promise<string> {
  const advice = `install Python >= ${MIN_PYTHON.join(".")} with its venv module (Debian: python3 python3-venv): the API conformance test runs Schemathesis ${SCHEMATHESIS_VERSION}`;
  let version: string;
  try {
    version = (await run("python3", ["-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"])).stdout.trim();
  } catch (cause) {
    throw new Error(`"python3" with venv was not found: ${advice}`, { cause });
  }
  const [major, minor] = version.split(".").map(Number) as [number, number];
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    throw new Error(`found Python ${version}, too old: ${advice}`);
  }
  return "python3";
}
