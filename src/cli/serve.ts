/**
 * `leasehold serve`: the HTTP API on Node, exactly as `npm start` runs it (src/runtime/node.ts):
 * the same variables (src/api/config/policy.ts), with the flags --store, --host, --port and
 * --insecure-no-auth overriding LEASEHOLD_STORE, HOST, PORT and LEASEHOLD_INSECURE_NO_AUTH.
 * Tokens come from LEASEHOLD_TOKENS only: a secret does not belong on a command line, where every
 * user's `ps` can read it.
 */
import type { ServeFlags } from "../api/config/policy.js";
import type { CliIo } from "./output.js";

export interface ServeCliOptions {
  flags: ServeFlags;
  json: boolean;
}

export async function serveCommand(o: ServeCliOptions, io: CliIo): Promise<number> {
  // Loaded on use: the other commands do not pay for the HTTP server's modules.
  const [{ readServerConfig }, { startServer }] = await Promise.all([
    import("../api/config/policy.js"),
    import("../runtime/node.js"),
  ]);
  // Listening for the signals before the address is printed: a supervisor (or a test) may stop
  // the server the moment it reads the address.
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  const started = await startServer(readServerConfig(io.env, "serve", o.flags), { log: (line) => io.say(line) });
  const { server } = started;
  if (o.json) io.out(JSON.stringify({ url: server.url, port: server.port, auth: server.auth }));
  io.say(`${await signal}: shutting down`);
  await started.close();
  return 0;
}
