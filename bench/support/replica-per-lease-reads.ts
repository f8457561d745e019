/**
 * The API as `npm start` serves it (the same variables, src/api/config/policy.ts), but over a store
 * that hides its batch read (`getMany`), so the watch hub re-reads each watched lease with its own
 * `get`: one read per watched lease per interval, as every replica did before batched re-reads.
 * The baseline of bench/replicas.bench.ts; run as `node --import tsx` with PORT, HOST and
 * LEASEHOLD_STORE set.
 */

import { readServerConfig } from "../../src/api/config/policy.js";
import { openStore } from "../../src/open-store.js";
import { serve } from "../../src/runtime/node.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";

const config = readServerConfig(process.env, "node");
if (!config.listen) throw new Error("expected a listener");
const store = new StoreWrapper(await openStore(config.store.url, { env: config.storeEnv }), { without: ["getMany"] });
const server = await serve({
  store,
  host: config.listen.host,
  port: config.listen.port,
  insecureNoAuth: true,
  ...config.app,
  ...(config.listener ? { listener: config.listener } : {}),
});
process.once("SIGTERM", () => void server.close().then(() => process.exit(0)));
