/**
 * The leasehold API on AWS: a DynamoDB table (one item per lease, string partition key `pk`,
 * on-demand, point-in-time recovery, retained on stack deletion), a Lambda function on Node 20
 * serving the API's Lambda entry (src/runtime/lambda.ts, bundled by lib/bundle.ts into `codeDir`), a
 * Function URL in front of it, and a role that can do exactly what the DynamoDB store does
 * (GetItem, PutItem, Scan on this table) and write its own log group, nothing else.
 *
 * Auth: with `authType: "NONE"` (the default) the URL is public and the app checks bearer tokens
 * scoped to lease-name prefixes (LEASEHOLD_TOKENS); synthesis refuses to go ahead without tokens.
 * With "AWS_IAM" callers sign requests with SigV4 and need lambda:InvokeFunctionUrl; the app's
 * own tokens are then optional (without them the function gets LEASEHOLD_INSECURE_NO_AUTH=1).
 * The function's environment is checked at synth with the Lambda entry's configuration schema.
 *
 * The table is retained when the stack is deleted: deleting lease records restarts terms at 1,
 * and fencing tokens must never go backwards.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import { readServerConfig } from "../../../src/runtime/config.js";

/** The DynamoDB calls DynamoDbStore makes: reads, conditional puts, and the Scan behind `list`. */
export const STORE_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"] as const;

const RUNTIMES = { 20: lambda.Runtime.NODEJS_20_X, 22: lambda.Runtime.NODEJS_22_X, 24: lambda.Runtime.NODEJS_24_X };

export interface LeaseholdStackProps extends StackProps {
  /** Folder holding the bundled Lambda entry as `index.js` (exporting `handler`), see lib/bundle.ts. */
  codeDir: string;
  /** "NONE" (public URL, app checks bearer tokens; default) or "AWS_IAM" (SigV4-signed callers only). */
  authType?: "NONE" | "AWS_IAM";
  /** JSON array of scoped tokens for the app (LEASEHOLD_TOKENS); required when authType is "NONE". */
  tokens?: string;
  /** Opt-in TTL attribute on the table (see docs/dynamodb.md: deleted leases restart terms at 1). */
  ttlAttribute?: string;
  /** Wall-clock skew bound the stateless API assumes (LEASEHOLD_MAX_SKEW_MS). Default: the app's. */
  maxSkewMs?: number;
  /**
   * Lambda's Node runtime. Default Node 20, the project's floor; AWS deprecated nodejs20.x on
   * 2026-04-30 and stops creating such functions on 2027-02-01, so pass 22 or 24 for new stacks.
   */
  nodeVersion?: 20 | 22 | 24;
  /** How long the function's logs are kept. Default one month. */
  logRetention?: logs.RetentionDays;
}

export class LeaseholdStack extends Stack {
  readonly table: dynamodb.Table;
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

    this.table = new dynamodb.Table(this, "Leases", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: RemovalPolicy.RETAIN,
      ...(props.ttlAttribute ? { timeToLiveAttribute: props.ttlAttribute } : {}),
    });

    const logGroup = new logs.LogGroup(this, "Logs", {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // An explicit role instead of the default one: the managed basic-execution policy may write
    // to any log group, this one only to its own.
    const role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: "leasehold API: its lease table and its log group only",
    });
    role.addToPolicy(new iam.PolicyStatement({ actions: [...STORE_ACTIONS], resources: [this.table.tableArn] }));
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
        resources: [logGroup.logGroupArn],
      }),
    );

    // A store URL as src/open-store.ts parses it; the region comes from the Lambda's AWS_REGION.
    const storeUrl = (table: string) => `dynamodb://${table}${props.ttlAttribute ? `?ttl=${props.ttlAttribute}` : ""}`;
    const environment: Record<string, string> = {
      LEASEHOLD_STORE: storeUrl(this.table.tableName),
      NODE_OPTIONS: "--enable-source-maps",
    };
    if (props.tokens) environment.LEASEHOLD_TOKENS = props.tokens;
    // IAM guards the URL: the app itself then runs without tokens, which it must be told explicitly.
    else if (authType === "AWS_IAM") environment.LEASEHOLD_INSECURE_NO_AUTH = "1";
    if (props.maxSkewMs !== undefined) environment.LEASEHOLD_MAX_SKEW_MS = String(props.maxSkewMs);
    // The function reads this environment with src/runtime/config.ts at cold start; read it the
    // same way now, so a value it would refuse fails the synth instead. The table name is a
    // deploy-time token and AWS_REGION comes from Lambda: stand-ins take their places here.
    readServerConfig(
      { ...environment, LEASEHOLD_STORE: storeUrl("synth-check-table"), AWS_REGION: "us-east-1" },
      "lambda",
    );

    this.function = new lambda.Function(this, "Api", {
      runtime: RUNTIMES[props.nodeVersion ?? 20],
      architecture: lambda.Architecture.ARM_64,
      handler: "index.handler",
      code: lambda.Code.fromAsset(props.codeDir),
      memorySize: 256,
      timeout: Duration.seconds(30),
      role,
      logGroup,
      environment,
      description: "leasehold HTTP API (src/runtime/lambda.ts)",
    });

    this.url = this.function.addFunctionUrl({
      authType: authType === "AWS_IAM" ? lambda.FunctionUrlAuthType.AWS_IAM : lambda.FunctionUrlAuthType.NONE,
    });

    new CfnOutput(this, "ApiUrl", { value: this.url.url, description: "Base URL of the leasehold API" });
    new CfnOutput(this, "TableName", { value: this.table.tableName });
  }
}
