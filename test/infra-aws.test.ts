/**
 * The CDK app in infra/aws, synthesised offline (no account lookups, no Docker: the Lambda code is
 * a prebuilt folder, here a placeholder) and checked with aws-cdk-lib/assertions.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { afterAll, describe, expect, it } from "vitest";
import { propsFromEnv, REPO_ROOT, stackNameFromEnv } from "../infra/aws/lib/config.js";
import { LeaseholdStack, type LeaseholdStackProps } from "../infra/aws/lib/leasehold-stack.js";
import { readServerConfig } from "../src/api/config/policy.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-cdk-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const codeDir = join(dir, "lambda");
mkdirSync(codeDir);
writeFileSync(join(codeDir, "index.js"), "export const handler = async () => ({ statusCode: 503 });\n");
writeFileSync(join(codeDir, "package.json"), '{"type":"module"}\n');

const TOKENS = JSON.stringify([{ token: "t".repeat(32), prefixes: ["jobs/"], verbs: ["read", "write"] }]);

function synth(props: Partial<LeaseholdStackProps> = {}): Template {
  const app = new App({ outdir: mkdtempSync(join(dir, "out-")) });
  const stack = new LeaseholdStack(app, "Leasehold", { codeDir, tokens: TOKENS, ...props });
  return Template.fromStack(stack);
}

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };

function statements(template: Template): Statement[] {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
    (p) => (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement,
  );
}

function logicalId(template: Template, type: string): string {
  const ids = Object.keys(template.findResources(type));
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

describe("infra/aws: the CDK stack", () => {
  const template = synth();

  it("creates an on-demand table with PITR, keyed by pk (string), retained on delete, no TTL by default", () => {
    template.resourceCountIs("AWS::DynamoDB::Table", 1);
    template.hasResource("AWS::DynamoDB::Table", {
      DeletionPolicy: "Retain",
      Properties: {
        BillingMode: "PAY_PER_REQUEST",
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        TimeToLiveSpecification: Match.absent(),
      },
    });
  });

  it("enables TTL on the named attribute only when asked, and tells the store to stamp it", () => {
    const withTtl = synth({ ttlAttribute: "expiresAt" });
    withTtl.hasResourceProperties("AWS::DynamoDB::Table", {
      TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
    });
    withTtl.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          LEASEHOLD_STORE: { "Fn::Join": ["", ["dynamodb://", Match.anyValue(), "?ttl=expiresAt"]] },
        }),
      },
    });
  });

  it("runs the Lambda entry's streaming handler on Node 22 with the table's store URL and the tokens", () => {
    const table = logicalId(template, "AWS::DynamoDB::Table");
    template.resourceCountIs("AWS::Lambda::Function", 1);
    template.hasResourceProperties("AWS::Lambda::Function", {
      // nodejs20.x is deprecated by AWS (2026-04-30); new functions get 22 unless told otherwise.
      Runtime: "nodejs22.x",
      Handler: "index.streamingHandler",
      // A watch stream lasts until just before the timeout, then its client resumes.
      Timeout: 900,
      Environment: {
        Variables: Match.objectLike({
          LEASEHOLD_STORE: { "Fn::Join": ["", ["dynamodb://", { Ref: table }]] },
          LEASEHOLD_TOKENS: TOKENS,
        }),
      },
    });
  });

  it("keeps logs for one month in the function's own log group", () => {
    const group = logicalId(template, "AWS::Logs::LogGroup");
    template.hasResourceProperties("AWS::Logs::LogGroup", { RetentionInDays: 30 });
    template.hasResourceProperties("AWS::Lambda::Function", { LoggingConfig: { LogGroup: { Ref: group } } });
    // No LogRetention custom resource (an extra Lambda with broad logs permissions).
    template.resourceCountIs("Custom::LogRetention", 0);
  });

  it("grants exactly GetItem, BatchGetItem, PutItem and Scan on the table, and writing to its log group, nothing else", () => {
    const table = logicalId(template, "AWS::DynamoDB::Table");
    const group = logicalId(template, "AWS::Logs::LogGroup");
    const all = statements(template);
    expect(all).toHaveLength(2);
    const [dynamo, logsStatement] = all;
    expect([dynamo!.Action].flat().sort()).toEqual([
      "dynamodb:BatchGetItem",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:Scan",
    ]);
    expect(dynamo!.Resource).toEqual({ "Fn::GetAtt": [table, "Arn"] });
    expect([logsStatement!.Action].flat().sort()).toEqual(["logs:CreateLogStream", "logs:PutLogEvents"]);
    expect(logsStatement!.Resource).toEqual({ "Fn::GetAtt": [group, "Arn"] });
    for (const s of all) expect(s.Effect).toBe("Allow");
    // No managed policies (AWSLambdaBasicExecutionRole would allow writing to any log group).
    template.hasResourceProperties("AWS::IAM::Role", { ManagedPolicyArns: Match.absent() });
  });

  it("serves a Function URL: public with app-checked tokens by default", () => {
    template.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE" });
    template.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunctionUrl",
      Principal: "*",
      FunctionUrlAuthType: "NONE",
    });
    template.hasOutput("ApiUrl", { Value: { "Fn::GetAtt": [logicalId(template, "AWS::Lambda::Url"), "FunctionUrl"] } });
  });

  it("streams responses: the Function URL's InvokeMode is RESPONSE_STREAM (watch streams deliver as they happen)", () => {
    template.hasResourceProperties("AWS::Lambda::Url", { InvokeMode: "RESPONSE_STREAM" });
    synth({ authType: "AWS_IAM", tokens: undefined as never }).hasResourceProperties("AWS::Lambda::Url", {
      InvokeMode: "RESPONSE_STREAM",
    });
    synth({ timeoutSeconds: 120 }).hasResourceProperties("AWS::Lambda::Function", { Timeout: 120 });
    expect(() => synth({ timeoutSeconds: 901 })).toThrow(
      "timeoutSeconds: expected a whole number of seconds 10-900 (Lambda's most), got 901",
    );
  });

  it("`cdk synth` (the CLI, as `npm run cdk:synth` runs the app) writes the streaming Function URL into the template", async () => {
    const out = mkdtempSync(join(dir, "cli-"));
    const cdk = join(REPO_ROOT, "node_modules", "aws-cdk", "bin", "cdk");
    // The app without its bundling step (tested in infra-aws-lambda.test.ts): the placeholder code.
    await promisify(execFile)(
      process.execPath,
      [cdk, "synth", "--app", "npx tsx bin/app.ts", "--output", out, "--no-notices", "--no-version-reporting", "-q"],
      {
        cwd: join(REPO_ROOT, "infra", "aws"),
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? dir,
          CDK_DISABLE_CLI_TELEMETRY: "true",
          LEASEHOLD_LAMBDA_DIR: codeDir,
          LEASEHOLD_TOKENS: TOKENS,
        },
      },
    );
    const cli = Template.fromJSON(JSON.parse(readFileSync(join(out, "Leasehold.template.json"), "utf8")));
    cli.hasResourceProperties("AWS::Lambda::Url", { InvokeMode: "RESPONSE_STREAM", AuthType: "NONE" });
    cli.hasResourceProperties("AWS::Lambda::Function", { Handler: "index.streamingHandler", Timeout: 900 });
  }, 180_000);

  it("can run on another Node runtime", () => {
    synth({ nodeVersion: 24 }).hasResourceProperties("AWS::Lambda::Function", { Runtime: "nodejs24.x" });
    synth({ nodeVersion: 20 }).hasResourceProperties("AWS::Lambda::Function", { Runtime: "nodejs20.x" });
  });

  it("or IAM-authenticated, with no public invoke permission", () => {
    const iam = synth({ authType: "AWS_IAM", tokens: undefined as never });
    iam.hasResourceProperties("AWS::Lambda::Url", { AuthType: "AWS_IAM" });
    iam.resourceCountIs("AWS::Lambda::Permission", 0);
    // The app then runs without tokens, which it must be told explicitly or it refuses every call.
    iam.hasResourceProperties("AWS::Lambda::Function", {
      Environment: { Variables: Match.objectLike({ LEASEHOLD_INSECURE_NO_AUTH: "1" }) },
    });
  });

  it("gives the function an environment the Lambda entry accepts, with the auth mode meant", () => {
    const started = (t: Template) => {
      const fn = Object.values(t.findResources("AWS::Lambda::Function"))[0] as {
        Properties: { Environment: { Variables: Record<string, unknown> } };
      };
      const variables = { ...fn.Properties.Environment.Variables } as Record<string, string>;
      // Deploy-time values: the table name (a CloudFormation reference) and Lambda's own AWS_REGION.
      variables.LEASEHOLD_STORE = "dynamodb://leasehold-leases";
      return readServerConfig({ ...variables, AWS_REGION: "eu-west-1" }, "lambda");
    };
    expect(started(template).auth).toMatchObject({ mode: "tokens", tokens: [{ prefixes: ["jobs/"] }] });
    expect(started(synth({ authType: "AWS_IAM", tokens: undefined as never })).auth).toEqual({
      mode: "none",
      because: "insecure-flag",
      flag: "LEASEHOLD_INSECURE_NO_AUTH=1",
    });
    expect(started(synth({ maxSkewMs: 2500 })).app).toEqual({
      maxSkewMs: 2500,
      watchPollMs: 1000,
      heartbeatMs: 15_000,
      storeTimeoutMs: 2000,
      limits: {},
    });
  });

  it("refuses at synth what the function would refuse at its first call, naming the variable", () => {
    expect(() => synth({ maxSkewMs: Number.NaN })).toThrow(
      'LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "NaN"',
    );
    expect(() => synth({ maxSkewMs: -1 })).toThrow(
      'LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "-1"',
    );
    expect(() => synth({ tokens: "[]" })).toThrow("LEASEHOLD_TOKENS: expected at least one token, got []");
    expect(() => synth({ tokens: '[{"token":"short","prefixes":[""],"verbs":["read"]}]' })).toThrow(
      "LEASEHOLD_TOKENS: [0].token: expected a token of at least 16 characters",
    );
  });

  it("refuses a public URL without tokens", () => {
    const app = new App({ outdir: mkdtempSync(join(dir, "out-")) });
    expect(() => new LeaseholdStack(app, "Open", { codeDir })).toThrow(/public.*LEASEHOLD_TOKENS/);
  });
});

describe("infra/aws: the CDK stack with an S3 lease bucket instead of the table", () => {
  const template = synth({ store: "s3" });
  const bucketId = () => logicalId(template, "AWS::S3::Bucket");

  it("creates a bucket instead of a table: no versions, all public access blocked, retained on delete", () => {
    template.resourceCountIs("AWS::DynamoDB::Table", 0);
    template.hasResource("AWS::S3::Bucket", {
      DeletionPolicy: "Retain",
      Properties: {
        VersioningConfiguration: Match.absent(),
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
      },
    });
  });

  it("has a lifecycle that never deletes a live lease object: it only aborts incomplete uploads", () => {
    const bucket = template.findResources("AWS::S3::Bucket")[bucketId()] as {
      Properties: { LifecycleConfiguration: { Rules: Array<Record<string, unknown>> } };
    };
    const rules = bucket.Properties.LifecycleConfiguration.Rules;
    expect(rules).toEqual([
      { Id: "abort-incomplete-uploads", AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: "Enabled" },
    ]);
    for (const rule of rules) {
      for (const key of ["ExpirationInDays", "ExpirationDate", "ExpiredObjectDeleteMarker", "Transitions"]) {
        expect(rule[key]).toBeUndefined();
      }
    }
  });

  it("denies every PutObject without If-None-Match or If-Match, and every request without TLS", () => {
    const policy = Object.values(template.findResources("AWS::S3::BucketPolicy"))[0] as {
      Properties: { PolicyDocument: { Statement: Array<Record<string, unknown>> } };
    };
    const byId = Object.fromEntries(policy.Properties.PolicyDocument.Statement.map((st) => [st.Sid ?? "tls", st]));
    expect(byId.RequireConditionalWrites).toEqual({
      Sid: "RequireConditionalWrites",
      Effect: "Deny",
      Principal: { AWS: "*" },
      Action: "s3:PutObject",
      Resource: { "Fn::Join": ["", [{ "Fn::GetAtt": [bucketId(), "Arn"] }, "/*"]] },
      Condition: { Null: { "s3:if-none-match": "true", "s3:if-match": "true" } },
    });
    expect(byId.tls).toMatchObject({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } });
  });

  it("grants GetObject and PutObject under leases/, listing only that prefix, and its log group; nothing else", () => {
    const all = statements(template);
    expect(all).toHaveLength(3);
    const [objects, list, logsStatement] = all;
    expect([objects!.Action].flat().sort()).toEqual(["s3:GetObject", "s3:PutObject"]);
    expect(objects!.Resource).toEqual({ "Fn::Join": ["", [{ "Fn::GetAtt": [bucketId(), "Arn"] }, "/leases/*"]] });
    expect(list).toMatchObject({
      Action: "s3:ListBucket",
      Resource: { "Fn::GetAtt": [bucketId(), "Arn"] },
      Condition: { StringLike: { "s3:prefix": ["leases/*"] } },
    });
    expect([logsStatement!.Action].flat().sort()).toEqual(["logs:CreateLogStream", "logs:PutLogEvents"]);
    for (const st of all) expect(st.Effect).toBe("Allow");
    template.hasResourceProperties("AWS::IAM::Role", { ManagedPolicyArns: Match.absent() });
  });

  it("points the function at the bucket with an s3:// store URL", () => {
    template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          LEASEHOLD_STORE: { "Fn::Join": ["", ["s3://", { Ref: bucketId() }, "/leases/"]] },
        }),
      },
    });
    template.hasOutput("BucketName", { Value: { Ref: bucketId() } });
  });

  it("refuses a TTL attribute, which only the table has", () => {
    expect(() => synth({ store: "s3", ttlAttribute: "expiresAt" })).toThrow(
      /ttlAttribute applies to the DynamoDB table only/,
    );
  });
});

describe("infra/aws: settings from the environment", () => {
  const base = { LEASEHOLD_LAMBDA_DIR: codeDir, LEASEHOLD_TOKENS: TOKENS };

  it("LEASEHOLD_STORE_KIND=s3 chooses the bucket", () => {
    expect(propsFromEnv({ ...base, LEASEHOLD_STORE_KIND: "s3" })).toMatchObject({ store: "s3" });
  });

  it("maps the variables to stack props, environment-agnostic without an account", () => {
    expect(
      propsFromEnv({
        ...base,
        LEASEHOLD_TTL_ATTRIBUTE: "expiresAt",
        LEASEHOLD_MAX_SKEW_MS: "2000",
        LEASEHOLD_LAMBDA_NODE: "24",
      }),
    ).toEqual({
      codeDir,
      authType: "NONE",
      tokens: TOKENS,
      ttlAttribute: "expiresAt",
      maxSkewMs: 2000,
      nodeVersion: 24,
    });
    expect(
      propsFromEnv({
        LEASEHOLD_LAMBDA_DIR: codeDir,
        LEASEHOLD_AUTH: "iam",
        CDK_DEFAULT_ACCOUNT: "1",
        CDK_DEFAULT_REGION: "eu-west-1",
      }),
    ).toEqual({ codeDir, authType: "AWS_IAM", env: { account: "1", region: "eu-west-1" } });
  });

  it("names the variable that is wrong", () => {
    expect(() => propsFromEnv({ ...base, LEASEHOLD_AUTH: "open" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_AUTH: expected "tokens" or "iam", got "open"$/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_TOKENS: "abc" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_TOKENS: expected JSON/,
    );
    expect(() =>
      propsFromEnv({ ...base, LEASEHOLD_TOKENS: '[{"token":"short","prefixes":[""],"verbs":["read"]}]' }),
    ).toThrow(/LEASEHOLD_TOKENS: .*at least 16 characters/);
    expect(() => propsFromEnv({ ...base, LEASEHOLD_TOKENS: "[]" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_TOKENS: expected at least one/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_MAX_SKEW_MS: "1s" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "1s"$/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_MAX_SKEW_MS: "60001" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_MAX_SKEW_MS/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_TTL_ATTRIBUTE: "a b" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_TTL_ATTRIBUTE/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_LAMBDA_NODE: "18" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_LAMBDA_NODE: expected "20" or "22" or "24", got "18"$/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_STORE_KIND: "redis" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_STORE_KIND: expected "dynamodb" or "s3", got "redis"$/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_STORE_KIND: "s3", LEASEHOLD_TTL_ATTRIBUTE: "x" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_TTL_ATTRIBUTE: applies to the DynamoDB table only/,
    );
    expect(() => propsFromEnv({ ...base, LEASEHOLD_LAMBDA_DIR: join(dir, "absent") })).toThrow(
      /index.js is missing: run `npx tsx bundle-lambda.ts`/,
    );
  });

  it("LEASEHOLD_STACK_NAME: the stack's name, checked", () => {
    expect(stackNameFromEnv({})).toBe("Leasehold");
    expect(stackNameFromEnv({ LEASEHOLD_STACK_NAME: "Leases-Prod" })).toBe("Leases-Prod");
    expect(() => stackNameFromEnv({ LEASEHOLD_STACK_NAME: "9 lives" })).toThrow(
      /^invalid deploy settings: LEASEHOLD_STACK_NAME: expected a stack name/,
    );
  });
});
