/**
 * The API on SQLite in a child process (test/support/sqlite-api-process.ts), so a load generator
 * in the bench's own process does not share the server's event loop. `baseline` picks the old
 * store settings the durability bench compares against.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

const script = join(import.meta.dirname, "..", "..", "test", "support", "sqlite-api-process.ts");

export interface SqliteApi {
  url: string;
  child: ChildProcess;
  stop(): void;
}

export async function startSqliteApi(dbPath: string, baseline?: "normal" | "full-inline"): Promise<SqliteApi> {
  const args = ["--import", "tsx", script, dbPath, ...(baseline ? [baseline] : [])];
  const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once("exit", (code) => reject(new Error(`API process exited with code ${code}`)));
  });
  return { url, child, stop: () => child.kill("SIGTERM") };
}
