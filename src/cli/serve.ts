/**
 * `leasehold serve`: the HTTP API on Node, as `npm start` runs it (src/runtime/node.ts), with
 * flags for host, port and store. Tokens come from LEASEHOLD_TOKENS (a JSON array of scoped
 * tokens): a secret does not belong on a command line, where every user's `ps` can read it.
 */
import { openStore } from "../open-store.js";
import type { CliIo } from "./output.js";

export interface ServeCliOptions {
  store: string;
  host: string;
  port: number;
  insecureNoAuth: boolean;
  json: boolean;
}

export async function serveCommand(o: ServeCliOptions, io: CliIo): Promise<number> {
  // Loaded on use: the other commands do not pay for the HTTP server's modules.
  const { serve } = await import("../runtime/node.js");
  const { parseTokens } = await import("../api/auth.js");
  const tokens = io.env.LEASEHOLD_TOKENS ? parseTokens(io.env.LEASEHOLD_TOKENS) : undefined;
  const store = await openStore(o.store, { env: io.env });
  let server: Awaited<ReturnType<typeof serve>>;
  try {
    server = await serve({
      store,
      host: o.host,
      port: o.port,
      insecureNoAuth: o.insecureNoAuth,
      ...(tokens === undefined ? {} : { tokens }),
    });
  } catch (error) {
    await store.close?.();
    throw error;
  }
  if (o.json) io.out(JSON.stringify({ url: server.url, port: server.port, auth: server.auth }));
  io.say(`API on ${server.url} (store ${o.store}, auth ${server.auth})`);
  if (server.auth === "insecure-no-auth") io.say("warning: no auth; set LEASEHOLD_TOKENS to require tokens");
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  io.say(`${signal}: shutting down`);
  await server.close();
  await store.close?.();
  return 0;
}
