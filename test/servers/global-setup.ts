/**
 * Starts every real test server once for the whole run (each `test/servers/*.server.ts`), on
 * 127.0.0.1 and free ports, and stops them afterwards. A server module exports
 * `start(): Promise<StartedServer>`; the env it returns is visible to every test file
 * (workers inherit the environment set here before they start).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";

export interface StartedServer {
  /** Variables the tests read to find the server, e.g. DYNAMODB_ENDPOINT. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export default async function setup(): Promise<() => Promise<void>> {
  const dir = import.meta.dirname;
  const modules = readdirSync(dir)
    .filter((f) => f.endsWith(".server.ts"))
    .sort();
  const started: StartedServer[] = [];
  try {
    for (const file of modules) {
      const mod = (await import(join(dir, file))) as { start: () => Promise<StartedServer> };
      const server = await mod.start();
      started.push(server);
      Object.assign(process.env, server.env);
    }
  } catch (error) {
    await Promise.allSettled(started.map((s) => s.stop()));
    throw error;
  }
  return async () => {
    await Promise.allSettled(started.map((s) => s.stop()));
  };
}
