/**
 * The leasehold API on AWS: a DynamoDB table (one item per lease, string partition key `pk`,
 * on-demand, point-in-time recovery, retained on stack deletion) or, with `store: "s3"`, an S3
 * bucket (one object per lease under `leases/`, see below), a Lambda function on Node 22
 * serving the API's Lambda entry (src/runtime/lambda.ts, bundled by lib/bundle.ts into `codeDir`), a
 * Function URL in front of it that streams responses (InvokeMode RESPONSE_STREAM, handler
 * `index.streamingHandler`, so /watch streams deliver each change as it happens; each stream ends
 * itself before the function's timeout, 15 minutes by default, and its client resumes), and a role that can do exactly what the DynamoDB store does
 * (GetItem, BatchGetItem, PutItem, Scan on this table) and write its own log group, nothing else.
 *
 * Auth: with `authType: "NONE"` (the default) the URL is public and the app checks bearer tokens
 * scoped to lease-name prefixes (LEASEHOLD_TOKENS); synthesis refuses to go ahead without tokens.
 * With "AWS_IAM" callers sign requests with SigV4 and need lambda:InvokeFunctionUrl; the app's
 * own tokens are then optional (without them the function gets LEASEHOLD_INSECURE_NO_AUTH=1).
 * The function's environment is checked at synth with the Lambda entry's configuration schema.
 *
 * The table (or bucket) is retained when the stack is deleted: deleting lease records restarts
 * terms at 1, and fencing tokens must never go backwards.
 *
 * The S3 bucket: versioning off (a lease object is rewritten on every renewal; noncurrent versions
 * would pile up, one per renewal), a lifecycle rule that only aborts incomplete multipart uploads
 * (it never expires a live lease object: no Expiration rule at all), all public access blocked,
 * TLS required, and a bucket policy that denies any PutObject carrying neither `If-None-Match` nor
 * `If-Match` (the `s3:if-none-match` / `s3:if-match` condition keys), so no client, leasehold's or
 * another, can overwrite a lease unconditionally. The function may GetObject and PutObject under
 * `leases/` (If-Match needs GetObject too) and list only that prefix.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import * as s3 from "aws-cdk-lib/aws-s3";
import type { Construct } from "constructs";
import { readServerConfig } from "../../../src/api/config/policy.js";
import { STREAM_MARGIN_MS } from "../../../src/runtime/lambda.js";

/** The DynamoDB calls DynamoDbStore makes: reads (one and in batches), conditional puts, and the Scan behind `list`. */
export const STORE_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:PutItem",
  "dynamodb:Scan",
] as const;

/** The S3 object calls S3Store makes (If-Match needs GetObject as well as PutObject). */
export const S3_OBJECT_ACTIONS = ["s3:GetObject", "s3:PutObject"] as const;
/** Where the S3 store keeps leases in the bucket this stack creates. */
export const S3_LEASE_PREFIX = "leases/";

const RUNTIMES = { 20: lambda.Runtime.NODEJS_20_X, 22: lambda.Runtime.NODEJS_22_X, 24: lambda.Runtime.NODEJS_24_X };

export interface LeaseholdStackProps extends StackProps {
  /** Folder holding the bundled Lambda entry as `index.js` (exporting `handler`), see lib/bundle.ts. */
  codeDir: string;
  /** "NONE" (public URL, app checks bearer tokens; default) or "AWS_IAM" (SigV4-signed callers only). */
  authType?: "NONE" | "AWS_IAM";
  /** JSON array of scoped tokens for the app (LEASEHOLD_TOKENS); required when authType is "NONE". */
  tokens?: string;
  /** Where leases live: a DynamoDB table ("dynamodb", the default) or an S3 bucket ("s3"). */
  store?: "dynamodb" | "s3";
  /** Opt-in TTL attribute on the table (DynamoDB only; see docs/dynamodb.md: deleted leases restart terms at 1). */
  ttlAttribute?: string;
  /** Wall-clock skew bound the stateless API assumes (LEASEHOLD_MAX_SKEW_MS). Default: the app's. */
  maxSkewMs?: number;
  /**
   * Lambda's Node runtime. Default Node 22: AWS deprecated nodejs20.x on 2026-04-30 and stops
   * creating such functions on 2027-02-01. 20 stays possible for existing stacks (the bundle
   * targets Node 20, the project's floor, so it runs on all three).
   */
  nodeVersion?: 20 | 22 | 24;
  /**
   * The function's timeout, which is also how long one watch stream lasts before it ends itself
   * and its client resumes (docs: README, "Watch streams on Lambda"). Default 900 s, Lambda's
   * most: a stream bills duration while it is open however long it lasts, and fewer reconnects
   * cost fewer invocations and reads. Other requests end in milliseconds either way.
   */
  timeoutSeconds?: number;
  /** How long the function's logs are kept. Default one month. */
  logRetention?: logs.RetentionDays;
}

export class LeaseholdStack extends Stack {
  /** The lease table, when `store` is "dynamodb". */
  readonly table: dynamodb.Table | undefined;
  /** The lease bucket, when `store` is "s3". */
  readonly bucket: s3.Bucket | undefined;
  readonly function: lambda.Function;
  readonly url: lambda.FunctionUrl;

  constructor(scope: Construct, id: string, props: LeaseholdStackProps) {
    super(scope, id, props);
    const authType = props.authType ?? "NONE";
    if (authType === "NONE" && !props.tokens) {
      throw new Error(
        'authType "NONE" makes the Function URL public: set tokens (LEASEHOLD_TOKENS, a JSON array of scoped tokens) or use authType "AWS_IAM"',
      );
    }

    const timeout = props.timeoutSeconds ?? 900;
    if (!Number.isInteger(timeout) || timeout < 10 || timeout > 900) {
      throw new Error(
        `timeoutSeconds: expected a whole number of seconds 10-900 (Lambda's most), got ${timeout}: a watch stream ends ${STREAM_MARGIN_MS / 1000} s before it`,
      );
    }
    const storeKind = props.store ?? "dynamodb";
    if (storeKind === "s3" && props.ttlAttribute) {
      throw new Error("ttlAttribute applies to the DynamoDB table only; S3 lease objects are never expired");
    }

    const logGroup = new logs.LogGroup(this, "Logs", {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // An explicit role instead of the default one: the managed basic-execution policy may write
    // to any log group, this one only to its own.
    const role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: "leasehold API: its lease table or bucket and its log group only",
    });
    let storeUrl: string;
    if (storeKind === "s3") {
      this.table = undefined;
      this.bucket = this.leaseBucket();
      role.addToPolicy(
        new iam.PolicyStatement({
          actions: [...S3_OBJECT_ACTIONS],
          resources: [this.bucket.arnForObjects(`${S3_LEASE_PREFIX}*`)],
        }),
      );
      role.addToPolicy(
        new iam.PolicyStatement({
          actions: ["s3:ListBucket"],
          resources: [this.bucket.bucketArn],
          conditions: { StringLike: { "s3:prefix": [`${S3_LEASE_PREFIX}*`] } },
        }),
      );
      // The region comes from the Lambda's AWS_REGION.
      storeUrl = `s3://${this.bucket.bucketName}/${S3_LEASE_PREFIX}`;
    } else {
      this.bucket = undefined;
      this.table = new dynamodb.Table(this, "Leases", {
        partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        removalPolicy: RemovalPolicy.RETAIN,
        ...(props.ttlAttribute ? { timeToLiveAttribute: props.ttlAttribute } : {}),
      });
      role.addToPolicy(new iam.PolicyStatement({ actions: [...STORE_ACTIONS], resources: [this.table.tableArn] }));
      // A store URL as src/open-store.ts parses it; the region comes from the Lambda's AWS_REGION.
      storeUrl = `dynamodb://${this.table.tableName}${props.ttlAttribute ? `?ttl=${props.ttlAttribute}` : ""}`;
    }
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
        resources: [logGroup.logGroupArn],
      }),
    );

    const environment: Record<string, string> = {
      LEASEHOLD_STORE: storeUrl,
      NODE_OPTIONS: "--enable-source-maps",
    };
    if (props.tokens) environment.LEASEHOLD_TOKENS = props.tokens;
    // IAM guards the URL: the app itself then runs without tokens, which it must be told explicitly.
    else if (authType === "AWS_IAM") environment.LEASEHOLD_INSECURE_NO_AUTH = "1";
    if (props.maxSkewMs !== undefined) environment.LEASEHOLD_MAX_SKEW_MS = String(props.maxSkewMs);
    // The function reads this environment with src/api/config/policy.ts at cold start; read it the
    // same way now, so a value it would refuse fails the synth instead. The table and bucket names
    // are deploy-time tokens and AWS_REGION comes from Lambda: stand-ins take their places here.
    const standIn =
      storeKind === "s3"
        ? `s3://synth-check-bucket/${S3_LEASE_PREFIX}`
        : `dynamodb://synth-check-table${props.ttlAttribute ? `?ttl=${props.ttlAttribute}` : ""}`;
    readServerConfig({ ...environment, LEASEHOLD_STORE: standIn, AWS_REGION: "us-east-1" }, "lambda");

    this.function = new lambda.Function(this, "Api", {
      runtime: RUNTIMES[props.nodeVersion ?? 22],
      architecture: lambda.Architecture.ARM_64,
      // The streaming handler: the Function URL below invokes it with RESPONSE_STREAM.
      handler: "index.streamingHandler",
      code: lambda.Code.fromAsset(props.codeDir),
      memorySize: 256,
      timeout: Duration.seconds(timeout),
      role,
      logGroup,
      environment,
      description: "leasehold HTTP API (src/runtime/lambda.ts)",
    });

    this.url = this.function.addFunctionUrl({
      authType: authType === "AWS_IAM" ? lambda.FunctionUrlAuthType.AWS_IAM : lambda.FunctionUrlAuthType.NONE,
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
    });

    new CfnOutput(this, "ApiUrl", { value: this.url.url, description: "Base URL of the leasehold API" });
    if (this.table) new CfnOutput(this, "TableName", { value: this.table.tableName });
    if (this.bucket) new CfnOutput(this, "BucketName", { value: this.bucket.bucketName });
  }

  /** The S3 lease bucket (see the header): no versions, no expiry, conditional writes only. */
  private leaseBucket(): s3.Bucket {
    const bucket = new s3.Bucket(this, "LeaseBucket", {
      versioned: false,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      removalPolicy: RemovalPolicy.RETAIN,
      // Only clean-up of abandoned multipart uploads: a live lease object is never expired.
      lifecycleRules: [{ id: "abort-incomplete-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) }],
    });
    bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: "RequireConditionalWrites",
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ["s3:PutObject"],
        resources: [bucket.arnForObjects("*")],
        // Both keys absent (conditions in one block are ANDed): a PUT with neither If-None-Match nor If-Match.
        conditions: { Null: { "s3:if-none-match": "true", "s3:if-match": "true" } },
      }),
    );
    return bucket;
  }
}
