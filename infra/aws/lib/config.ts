/**
 * Stack settings from the environment of `cdk synth`/`cdk deploy`, read with the server
 * configuration's own field schemas (src/api/config/policy.ts), so a typo fails the synth with the
 * variable's name, its value and what was expected, instead of a broken deployment:
 *   LEASEHOLD_AUTH          "tokens" (default: public URL, app checks bearer tokens) or "iam"
 *   LEASEHOLD_TOKENS        JSON array of scoped tokens, checked by the API's parser (required with "tokens")
 *   LEASEHOLD_STORE_KIND    where leases live: "dynamodb" (default, a table) or "s3" (a bucket)
 *   LEASEHOLD_TTL_ATTRIBUTE opt-in TTL attribute name on the table (DynamoDB only)
 *   LEASEHOLD_MAX_SKEW_MS   skew bound for the stateless API (same bounds as every entry)
 *   LEASEHOLD_LAMBDA_NODE   Lambda Node runtime: 22 (default), 24 or 20 (deprecated by AWS)
 *   LEASEHOLD_LAMBDA_DIR    bundled code folder (default <repo>/build/lambda, written by bundle-lambda.ts)
 *   LEASEHOLD_STACK_NAME    stack name (default Leasehold)
 *   CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION  set by the CDK CLI from your AWS profile
 * The stack then checks the environment it gives the function with the Lambda entry's schema
 * (lib/leasehold-stack.ts).
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { envChoice, envMatching, envText, readVariables } from "../../../src/api/config/fields.js";
import { serverFields } from "../../../src/api/config/variables.js";
import type { LeaseholdStackProps } from "./leasehold-stack.js";

export const REPO_ROOT = resolve(import.meta.dirname, "../../..");
// Outside dist/: dist/ is what npm packs, and a bundle with its SDK would bloat the package.
export const DEFAULT_CODE_DIR = join(REPO_ROOT, "build", "lambda");

const deploySettings = z.looseObject({
  LEASEHOLD_AUTH: envChoice(["tokens", "iam"]),
  LEASEHOLD_TOKENS: serverFields.LEASEHOLD_TOKENS,
  LEASEHOLD_STORE_KIND: envChoice(["dynamodb", "s3"]),
  LEASEHOLD_MAX_SKEW_MS: serverFields.LEASEHOLD_MAX_SKEW_MS,
  LEASEHOLD_TTL_ATTRIBUTE: envMatching(/^[A-Za-z_][A-Za-z0-9_]{0,254}$/, "an attribute name (letters, digits, _)"),
  LEASEHOLD_LAMBDA_NODE: envChoice(["20", "22", "24"]),
  LEASEHOLD_LAMBDA_DIR: envText,
  // CloudFormation: a letter, then letters, digits and hyphens, at most 128 characters.
  LEASEHOLD_STACK_NAME: envMatching(
    /^[A-Za-z][A-Za-z0-9-]{0,127}$/,
    "a stack name (a letter, then letters, digits, -)",
  ),
  CDK_DEFAULT_ACCOUNT: envText,
  CDK_DEFAULT_REGION: envText,
});

function read(env: Record<string, string | undefined>) {
  return readVariables("deploy settings", deploySettings, env);
}

export function propsFromEnv(env: Record<string, string | undefined>): LeaseholdStackProps {
  const v = read(env);
  const codeDir = v.LEASEHOLD_LAMBDA_DIR ?? DEFAULT_CODE_DIR;
  if (v.LEASEHOLD_TTL_ATTRIBUTE !== undefined && v.LEASEHOLD_STORE_KIND === "s3") {
    throw new Error(
      "invalid deploy settings: LEASEHOLD_TTL_ATTRIBUTE: applies to the DynamoDB table only, not with LEASEHOLD_STORE_KIND=s3",
    );
  }
  if (!existsSync(join(codeDir, "index.js"))) {
    throw new Error(
      `${join(codeDir, "index.js")} is missing: run \`npx tsx bundle-lambda.ts\` in infra/aws (cdk.json does it before each synth)`,
    );
  }
  const tokens = env.LEASEHOLD_TOKENS;
  return {
    codeDir,
    authType: v.LEASEHOLD_AUTH === "iam" ? "AWS_IAM" : "NONE",
    // The text as given (checked above): the function parses it again at cold start.
    ...(v.LEASEHOLD_TOKENS !== undefined && tokens !== undefined ? { tokens } : {}),
    ...(v.LEASEHOLD_STORE_KIND !== undefined ? { store: v.LEASEHOLD_STORE_KIND } : {}),
    ...(v.LEASEHOLD_TTL_ATTRIBUTE !== undefined ? { ttlAttribute: v.LEASEHOLD_TTL_ATTRIBUTE } : {}),
    ...(v.LEASEHOLD_MAX_SKEW_MS !== undefined ? { maxSkewMs: v.LEASEHOLD_MAX_SKEW_MS } : {}),
    ...(v.LEASEHOLD_LAMBDA_NODE !== undefined ? { nodeVersion: Number(v.LEASEHOLD_LAMBDA_NODE) as 20 | 22 | 24 } : {}),
    // Environment-agnostic unless the CLI knows the account: synth never looks anything up.
    ...(v.CDK_DEFAULT_ACCOUNT && v.CDK_DEFAULT_REGION
      ? { env: { account: v.CDK_DEFAULT_ACCOUNT, region: v.CDK_DEFAULT_REGION } }
      : {}),
  };
}

/** LEASEHOLD_STACK_NAME, checked; default "Leasehold". */
export function stackNameFromEnv(env: Record<string, string | undefined>): string {
  return read(env).LEASEHOLD_STACK_NAME ?? "Leasehold";
}
