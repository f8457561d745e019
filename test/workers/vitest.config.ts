/**
 * The tests that run inside workerd (@cloudflare/vitest-pool-workers): the Worker from
 * wrangler.toml with its LeaseObject Durable Object, plus dynalite (started on the Node side by
 * global-setup.ts) so the DynamoDB store can be exercised from inside a Worker.
 * `npm test` runs this config after the Node one.
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { TEST_TOKENS } from "./tokens.js";

// Tests never reach the internet: no request.cf download by miniflare, no wrangler metrics.
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
process.env.WRANGLER_SEND_METRICS ??= "false";

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: "../../wrangler.toml" },
      miniflare: {
        bindings: {
          // The API's own poll is effectively off: a watch event can only arrive by push.
          LEASEHOLD_WATCH_POLL_MS: "60000",
          LEASEHOLD_TOKENS: JSON.stringify(TEST_TOKENS),
          DYNAMODB_ENDPOINT: inject("dynamodbEndpoint"),
          DYNAMODB_TABLE: inject("dynamodbTable"),
          S3_ENDPOINT: inject("s3Endpoint"),
          S3_BUCKET: inject("s3Bucket"),
        },
      },
    })),
  ],
  test: {
    name: "workers",
    root: import.meta.dirname,
    include: ["**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["../support/console-assets.ts", "./global-setup.ts"],
    // One Durable Object namespace serves every file, and a test resets all objects
    // (abortAllDurableObjects): files run one after another so a reset never hits another file.
    fileParallelism: false,
  },
});
