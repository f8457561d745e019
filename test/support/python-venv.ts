/**
 * Python tools for the tests (Schemathesis, the power-loss file system's mfusepy), each installed
 * once into a virtualenv under `.cache/<name>/<version>-<hash of the pins>/` when missing: built in
 * a private folder and renamed into place (two runs installing at once never see half a venv),
 * quiet on success, the whole log on failure. A fresh machine needs only Python >= 3.11 with its
 * venv module; the exact versions are the tool's requirements file.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { installFolder } from "./cache-folder.js";

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
const MIN_PYTHON = [3, 11] as const;

export interface PythonTool {
  /** Folder name under .cache/, e.g. "schemathesis". */
  name: string;
  /** The tool's version, part of the folder name. */
  version: string;
  /** A pip requirements file pinning the tool and everything it pulls in. */
  requirements: string;
  /** What needs it, for the message when Python is missing ("the API conformance test runs ..."). */
  neededBy: string;
}

/** Installs `tool` unless it is already cached; returns the venv's python. */
export async function installPythonTool(tool: PythonTool): Promise<string> {
  const pins = createHash("sha256").update(readFileSync(tool.requirements)).digest("hex").slice(0, 12);
  const dir = join(projectRoot, ".cache", tool.name, `${tool.version}-${pins}`);
  // A virtualenv's scripts name its folder in their first line, so after the rename its tools are
  // run as modules of the venv's own python, which finds its packages from where it now lives.
  const python = join(dir, "bin/python");
  if (existsSync(dir)) return python;
  const system = await findPython(tool);
  await installFolder(dir, async (staging) => {
    const pip = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", tool.requirements];
    for (const [file, ...args] of [
      [system, "-m", "venv", staging],
      [join(staging, "bin/python"), ...pip],
    ]) {
      await run(file!, args, { maxBuffer: 64 * 1024 * 1024 }).catch(
        (error: { stdout?: string; stderr?: string; message: string }) => {
          throw new Error(
            `installing ${tool.name} ${tool.version} failed: ${[file, ...args].join(" ")}\n${error.stderr ?? ""}${error.stdout ?? ""}${error.message}`,
          );
        },
      );
    }
  });
  return python;
}

async function findPython(tool: PythonTool): Promise<string> {
  const advice = `install Python >= ${MIN_PYTHON.join(".")} with its venv module (Debian: python3 python3-venv): ${tool.neededBy} ${tool.name} ${tool.version}`;
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
