/**
 * Builds the folder the stack deploys as the function's code, with esbuild (local, no Docker):
 *
 *   index.js                the API's Lambda entry (src/runtime/lambda.ts), handler "index.handler"
 *   backends/dynamodb/store.js  the DynamoDB store, where openStore's runtime import looks for it
 *   backends/s3/store.js        the S3 store (the stack's `store: "s3"`), likewise
 *   chunk-*.js              code they share (one copy of the error classes, so instanceof holds)
 *   node_modules/@aws-sdk/client-dynamodb/, node_modules/@aws-sdk/client-s3/   the pinned SDKs, each bundled once
 *   package.json            {"type":"module"}
 *
 * openStore loads stores and the SDK by computed `import()`. A bundler cannot follow those, so
 * the files sit at the paths those imports resolve to at run time. The SDKs ship inside the code
 * (not the Lambda runtime's copies), so the deployed versions are the ones the tests ran. Only the
 * store the function's LEASEHOLD_STORE names is ever loaded.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { build } from "esbuild";
import { bundleConsole } from "../../../scripts/bundle-console.js";
import { REPO_ROOT } from "./config.js";

const SDKS = ["@aws-sdk/client-dynamodb", "@aws-sdk/client-s3"] as const;

// ESM output of CommonJS dependencies still calls require() for Node built-ins.
const banner = {
  js: "import { createRequire as __leaseholdRequire } from 'node:module'; const require = __leaseholdRequire(import.meta.url);",
};

export async function bundleLambda(outDir: string): Promise<void> {
  // The API imports the console's bundle as data (#console-assets): build it first.
  await bundleConsole();
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const common = {
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    banner,
    logLevel: "warning",
  } as const;
  await build({
    ...common,
    entryPoints: {
      index: join(REPO_ROOT, "src", "runtime", "lambda.ts"),
      "backends/dynamodb/store": join(REPO_ROOT, "src", "backends", "dynamodb", "store.ts"),
      "backends/s3/store": join(REPO_ROOT, "src", "backends", "s3", "store.ts"),
    },
    outdir: outDir,
    splitting: true,
    chunkNames: "chunk-[hash]",
    minify: true,
    external: [...SDKS],
    sourcemap: true,
  });
  const require = createRequire(join(REPO_ROOT, "package.json"));
  for (const sdk of SDKS) {
    const sdkDir = join(outDir, "node_modules", ...sdk.split("/"));
    const sdkPackage = require.resolve(`${sdk}/package.json`);
    const { version, module } = require(sdkPackage) as { version: string; module: string };
    await build({
      ...common,
      entryPoints: [join(dirname(sdkPackage), module)],
      outfile: join(sdkDir, "index.js"),
      minify: true,
    });
    writeFileSync(
      join(sdkDir, "package.json"),
      `${JSON.stringify({ name: sdk, version, type: "module", exports: "./index.js" })}\n`,
    );
  }
  writeFileSync(join(outDir, "package.json"), `${JSON.stringify({ type: "module" })}\n`);
}
