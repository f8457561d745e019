/**
 * Stack settings from the environment of `cdk synth`/`cdk deploy`, checked up front so a typo
 * fails with the variable's name instead of a broken deployment:
 *   LEASEHOLD_AUTH          "tokens" (default: public URL, app checks bearer tokens) or "iam"
 *   LEASEHOLD_TOKENS        JSON array of scoped tokens, checked by the API's parser (required with "tokens")
 *   LEASEHOLD_STORE_KIND    where leases live: "dynamodb" (default, a table) or "s3" (a bucket)
 *   LEASEHOLD_TTL_ATTRIBUTE opt-in TTL attribute name on the table (DynamoDB only)
 *   LEASEHOLD_MAX_SKEW_MS   skew bound for the stateless API
 *   LEASEHOLD_LAMBDA_NODE   Lambda Node runtime: 20 (default), 22 or 24
 *   LEASEHOLD_LAMBDA_DIR    bundled code folder (default <repo>/dist/lambda, written by bundle-lambda.ts)
 *   CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION  set by the CDK CLI from your AWS profile
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseTokens } from "../../../src/api/auth.js";
import type { LeaseholdStackProps } from "./leasehold-stack.js";

export const REPO_ROOT = resolve(import.meta.dirname, "../../..");
export const DEFAULT_CODE_DIR = join(REPO_ROOT, "dist", "lambda");

export function propsFromEnv(env: Record<string, string | undefined>): LeaseholdStackProps {
  const auth = env.LEASEHOLD_AUTH ?? "tokens";
  if (auth !== "tokens" && auth !== "iam") {
    throw new Error(`LEASEHOLD_AUTH: expected "tokens" or "iam", got ${JSON.stringify(auth)}`);
  }
  const tokens = env.LEASEHOLD_TOKENS;
  // The API's own parser: a typo fails the deploy instead of every request.
  if (tokens !== undefined && parseTokens(tokens).length === 0) {
    throw new Error("LEASEHOLD_TOKENS: expected at least one token");
  }
  const store = env.LEASEHOLD_STORE_KIND;
  if (store !== undefined && store !== "dynamodb" && store !== "s3") {
    throw new Error(`LEASEHOLD_STORE_KIND: expected "dynamodb" or "s3", got ${JSON.stringify(store)}`);
  }
  const skew = env.LEASEHOLD_MAX_SKEW_MS;
  if (skew !== undefined && !/^[0-9]+$/.test(skew)) {
    throw new Error(`LEASEHOLD_MAX_SKEW_MS: expected whole milliseconds, got ${JSON.stringify(skew)}`);
  }
  const ttl = env.LEASEHOLD_TTL_ATTRIBUTE;
  if (ttl !== undefined && store === "s3") {
    throw new Error("LEASEHOLD_TTL_ATTRIBUTE: applies to the DynamoDB table only, not with LEASEHOLD_STORE_KIND=s3");
  }
  if (ttl !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,254}$/.test(ttl)) {
    throw new Error(
      `LEASEHOLD_TTL_ATTRIBUTE: expected an attribute name (letters, digits, _), got ${JSON.stringify(ttl)}`,
    );
  }
  const node = env.LEASEHOLD_LAMBDA_NODE;
  if (node !== undefined && node !== "20" && node !== "22" && node !== "24") {
    throw new Error(`LEASEHOLD_LAMBDA_NODE: expected 20, 22 or 24, got ${JSON.stringify(node)}`);
  }
  const codeDir = env.LEASEHOLD_LAMBDA_DIR ?? DEFAULT_CODE_DIR;
  if (!existsSync(join(codeDir, "index.js"))) {
    throw new Error(
      `${join(codeDir, "index.js")} is missing: run \`npx tsx bundle-lambda.ts\` in infra/aws (cdk.json does it before each synth)`,
    );
  }
  const account = env.CDK_DEFAULT_ACCOUNT;
  const region = env.CDK_DEFAULT_REGION;
  return {
    codeDir,
    authType: auth === "iam" ? "AWS_IAM" : "NONE",
    ...(tokens !== undefined ? { tokens } : {}),
    ...(store !== undefined ? { store } : {}),
    ...(ttl !== undefined ? { ttlAttribute: ttl } : {}),
    ...(skew !== undefined ? { maxSkewMs: Number(skew) } : {}),
    ...(node !== undefined ? { nodeVersion: Number(node) as 20 | 22 | 24 } : {}),
    // Environment-agnostic unless the CLI knows the account: synth never looks anything up.
    ...(account && region ? { env: { account, region } } : {}),
  };
}
