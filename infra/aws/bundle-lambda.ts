/**
 * Bundles the API's Lambda entry (dist/runtime/lambda.js, built by `npm run build`) with its
 * dependencies into dist/lambda/index.mjs, the folder the stack deploys. Locally with esbuild,
 * so neither synth nor deploy needs Docker. The AWS SDK v3 is left out: the Node 20 Lambda
 * runtime provides it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { DEFAULT_CODE_DIR, REPO_ROOT } from "./lib/config.js";

const entry = join(REPO_ROOT, "dist", "runtime", "lambda.js");
if (!existsSync(entry)) {
  console.error(`${entry} is missing: run \`npm run build\` in ${REPO_ROOT} first`);
  process.exit(1);
}
await build({
  entryPoints: [entry],
  outfile: join(process.env.LEASEHOLD_LAMBDA_DIR ?? DEFAULT_CODE_DIR, "index.mjs"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  sourcemap: true,
  external: ["@aws-sdk/*"],
  // ESM bundles of CommonJS dependencies still call require() for Node built-ins.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  logLevel: "info",
});
