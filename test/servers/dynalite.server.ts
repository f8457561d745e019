/**
 * dynalite (DynamoDB emulator) in memory for the whole test run. Sets DYNAMODB_ENDPOINT; each
 * test file creates its own uniquely named table there.
 */

import { startDynalite } from "../support/dynamo-server.js";
import type { StartedServer } from "./global-setup.js";

export async function start(): Promise<StartedServer> {
  const server = await startDynalite();
  return {
    env: { DYNAMODB_ENDPOINT: server.endpoint, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    stop: () => server.stop(),
  };
}
