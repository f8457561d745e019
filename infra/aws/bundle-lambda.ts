/** `npx tsx bundle-lambda.ts` (cdk.json runs it before every synth): writes build/lambda (lib/bundle.ts). */
import { bundleLambda } from "./lib/bundle.js";
import { DEFAULT_CODE_DIR } from "./lib/config.js";

const out = process.env.LEASEHOLD_LAMBDA_DIR ?? DEFAULT_CODE_DIR;
await bundleLambda(out);
console.error(`bundled the Lambda entry into ${out}`);
