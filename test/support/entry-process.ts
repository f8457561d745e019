/**
 * The API as `npm start` runs it (src/runtime/node.ts and its variables), in its own process, from
 * this tree's sources or another's (the bench compares the code before a change): started on a free
 * loopback port with a SQLite file, ready once it printed its start-up line.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { stopProcess } from "./server-process.js";

export interface EntryProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** Its stderr and stdout so far (the last 64 KiB). */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `<src>/runtime/node.ts` with `env` over PORT=0, HOST=127.0.0.1 and a SQLite store at `database`. */
export async function startEntry(
  src: string,
  database: string,
  env: Record<string, string> = {},
): Promise<EntryProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", join(src, "runtime", "node.ts")], {
    cwd: join(src, ".."),
    env: { PATH: process.env.PATH ?? "", PORT: "0", HOST: "127.0.0.1", LEASEHOLD_STORE: `sqlite:${database}`, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-65_536);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the API did not start in 60 s:\n${output}`)), 60_000);
    const look = () => {
      const found = /API on (http:\/\/[^;\s]+);/.exec(output)?.[1];
      if (!found) return;
      clearTimeout(timer);
      child.stderr?.off("data", look);
      resolve(found);
    };
    child.stderr?.on("data", look);
    child.once("exit", (code) => reject(new Error(`the API exited with ${code}:\n${output}`)));
  });
  return {
    url,
    port: Number(new URL(url).port),
    child,
    output: () => output,
    stop: () => stopProcess(child),
  };
}
