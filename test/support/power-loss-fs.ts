/**
 * Mounts ./power-loss-fs.py (a FUSE file system that keeps unsynced writes in its own memory)
 * and pulls the plug on it: `powerLoss()` kills it with SIGKILL and unmounts, so whatever was
 * written but not fsync'ed is gone, exactly what a machine finds after a power loss; mounting
 * the same backing folder again is the reboot. Needs /dev/fuse and fusermount3 (Debian: fuse3;
 * .ci/run installs it) and Python >= 3.11 (mfusepy goes into a virtualenv under .cache/).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { installPythonTool } from "./python-venv.js";

const run = promisify(execFile);
const script = join(import.meta.dirname, "power-loss-fs.py");

export function installPowerLossFs(): Promise<string> {
  return installPythonTool({
    name: "mfusepy",
    version: "3.1.1",
    requirements: join(import.meta.dirname, "power-loss-fs.requirements.txt"),
    neededBy: "the power-loss test's file system runs on",
  });
}

export interface PowerLossMount {
  /** SIGKILL to the file system, then unmount: every unsynced write is lost. */
  powerLoss(): Promise<void>;
}

/** Mounts `backing` at `mountpoint` (both existing folders); resolves once mounted. */
export async function mountPowerLossFs(backing: string, mountpoint: string): Promise<PowerLossMount> {
  if (!existsSync("/dev/fuse")) throw new Error("the power-loss test needs /dev/fuse (FUSE in the kernel)");
  await run("fusermount3", ["-V"]).catch((cause: unknown) => {
    throw new Error("the power-loss test needs fusermount3: apt-get install fuse3", { cause });
  });
  const python = await installPowerLossFs();
  const child = spawn(python, [script, backing, mountpoint], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stderr.on("data", (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4096);
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`power-loss-fs.py exited with code ${code}: ${output}`)));
  });
  return { powerLoss: () => pullThePlug(child, mountpoint) };
}

async function pullThePlug(child: ChildProcess, mountpoint: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
  // The file system is gone; the kernel still lists the mount until it is detached.
  await run("fusermount3", ["-u", "-z", mountpoint]);
}
