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
  // All at once: each waits on its own process and port, so the run waits for the slowest only.
  const results = await Promise.allSettled(
    modules.map(async (file) => {
      const mod = (await import(join(dir, file))) as { start: () => Promise<StartedServer> };
      return mod.start();
    }),
  );
  const started = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) {
    await Promise.allSettled(started.map((s) => s.stop()));
    throw failed.reason;
  }
  for (const server of started) Object.assign(process.env, server.env);
  return async () => {
    await Promise.allSettled(started.map((s) => s.stop()));
  };
}
