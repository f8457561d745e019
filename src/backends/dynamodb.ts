/**
 * The DynamoDB backend's declaration (./backend.ts): `dynamodb://TABLE?region=&endpoint=&pk=&ttl=`,
 * the DynamoDB store's options, every runtime (on the Worker with keys from its secrets). The
 * store is src/stores/dynamodb.ts. Runtime-neutral, no SDK.
 */
import type { DynamoDBClient, DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { z } from "zod";
import type { LeaseStore } from "../lease.js";
import { awsClientFields, awsRegion, ownClientOnly, regionOf } from "./aws.js";
import type { Backend } from "./backend.js";
import * as parts from "./url.js";

export const DEFAULT_TTL_GRACE_SECONDS = 7 * 24 * 3600;
export const MIN_TTL_GRACE_SECONDS = 24 * 3600;

export interface DynamoDbStoreOptions {
  /** Table name; its partition key must be a string attribute named `partitionKey`, with no sort key. */
  table: string;
  /**
   * Your own client (region, endpoint, credentials, retries); the store never destroys it.
   * Default: a new `DynamoDBClient` from `region`, `endpoint` and `credentials`, destroyed by `close()`.
   */
  client?: DynamoDBClient;
  /** Region for the client this store creates (default: the SDK's, e.g. AWS_REGION). */
  region?: string;
  /** Endpoint for the client this store creates, e.g. a local emulator's "http://127.0.0.1:8000". */
  endpoint?: string;
  /** Credentials for the client this store creates (default: the SDK's provider chain). */
  credentials?: DynamoDBClientConfig["credentials"];
  /** Name of the table's partition key attribute. Default "pk". */
  partitionKey?: string;
  /** Opt-in: a number attribute holding the epoch second after which DynamoDB may delete an abandoned lease. */
  ttlAttribute?: string;
  /** Seconds past the lease's own expiry before the TTL falls due. Default 7 days, at least 1 day. */
  ttlGraceSeconds?: number;
  /**
   * Items per `Scan` request in `list` (DynamoDB's `Limit`): caps the read capacity one request
   * consumes. Default: DynamoDB's own page size (up to 1 MB).
   */
  scanPageSize?: number;
}

/** The record fields kept as attributes beside the key, `rev` and the TTL attribute. */
export const RECORD_ATTRIBUTES = [
  "holder",
  "term",
  "leaseMs",
  "acquiredAt",
  "renewedAt",
  "metadata",
  "writeId",
  "fire",
];
export const REV = "rev";
const RESERVED = new Set([REV, "name", ...RECORD_ATTRIBUTES]);

const tableName = z
  .string({ error: "expected a table name" })
  .regex(/^[A-Za-z0-9_.-]{3,255}$/, { error: "expected 3-255 characters of A-Z a-z 0-9 _ . -" });
/** Attribute names are free-form in DynamoDB; the URL keeps them to identifier-like names. */
const urlAttribute = z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,254}$/, { error: "expected an attribute name" });
const attributeName = z
  .string({ error: "expected a string" })
  .min(1, { error: "expected a non-empty attribute name" })
  .max(255, { error: "expected at most 255 characters" })
  .refine((n) => !RESERVED.has(n), { error: `expected a name other than ${[...RESERVED].join(", ")}` });
const OWN_CLIENT_ONLY = ["region", "endpoint", "credentials"] as const;

export const dynamoDbOptionsSchema = z
  .strictObject(
    {
      table: tableName,
      ...awsClientFields<DynamoDBClient, DynamoDBClientConfig["credentials"]>("a DynamoDBClient (an object with send)"),
      partitionKey: attributeName.default("pk"),
      ttlAttribute: attributeName.optional(),
      ttlGraceSeconds: z
        .number({ error: "expected a number of seconds" })
        .int({ error: "expected whole seconds" })
        .min(MIN_TTL_GRACE_SECONDS, { error: `expected at least ${MIN_TTL_GRACE_SECONDS} s (1 day)` })
        .max(10 * 365 * 24 * 3600, { error: "expected at most 10 years" })
        .optional(),
      scanPageSize: z
        .number({ error: "expected a number of items" })
        .int({ error: "expected a whole number" })
        .positive({ error: "expected at least 1" })
        .optional(),
    },
    { error: "expected an options object with table" },
  )
  .superRefine((o, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if (o.ttlAttribute !== undefined && o.ttlAttribute === o.partitionKey) {
      issue("ttlAttribute", "expected a name other than the partition key");
    }
    if (o.ttlGraceSeconds !== undefined && o.ttlAttribute === undefined) {
      issue("ttlGraceSeconds", "only applies with ttlAttribute set");
    }
    ownClientOnly(OWN_CLIENT_ONLY)(o, ctx);
  });

/** What a `dynamodb://` URL says. */
export interface DynamoDbUrl {
  kind: "dynamodb";
  table: string;
  region?: string;
  endpoint?: string;
  partitionKey?: string;
  ttlAttribute?: string;
}

interface DynamoDbModule {
  DynamoDbStore: new (options: DynamoDbStoreOptions) => LeaseStore;
}

export const dynamoDbBackend: Backend<DynamoDbUrl> = {
  kind: "dynamodb",
  schemes: ["dynamodb"],
  forms: ["dynamodb://TABLE?region=REGION&endpoint=URL&pk=ATTRIBUTE&ttl=ATTRIBUTE"],
  options: dynamoDbOptionsSchema,
  runtimes: { node: true, lambda: true, workers: true },
  env: ["AWS_REGION", "AWS_DEFAULT_REGION"],
  parse(text) {
    const url = parts.host(text, "dynamodb", "dynamodb://TABLE", "the AWS SDK reads credentials itself");
    if (url.port !== "") throw parts.invalid("dynamodb table", "expected a table name, not host:port (use ?endpoint=)");
    parts.check(tableName, url.hostname, "dynamodb table");
    if (url.pathname !== "" && url.pathname !== "/") {
      throw parts.invalid(
        "dynamodb path",
        `expected nothing after the table name, got ${JSON.stringify(url.pathname)}`,
      );
    }
    const params = parts.query(url, "dynamodb", ["region", "endpoint", "pk", "ttl"]);
    const region = params.get("region");
    if (region !== undefined) parts.check(awsRegion, region, 'query parameter "region"');
    const partitionKey = params.get("pk");
    if (partitionKey !== undefined) parts.check(urlAttribute, partitionKey, 'query parameter "pk"');
    // Opt-in TTL stamping (see the caveat in src/stores/dynamodb.ts: a deleted record restarts terms).
    const ttlAttribute = params.get("ttl");
    if (ttlAttribute !== undefined) parts.check(urlAttribute, ttlAttribute, 'query parameter "ttl"');
    return {
      kind: "dynamodb",
      table: url.hostname,
      ...parts.defined({ region, endpoint: parts.endpoint(params.get("endpoint")), partitionKey, ttlAttribute }),
    };
  },
  module: "./stores/dynamodb.js",
  open(spec, { env, client, module }) {
    const options = dynamoDbOptionsOf(spec, env, client === undefined ? {} : { client: client as DynamoDBClient });
    const { DynamoDbStore } = module as DynamoDbModule;
    return new DynamoDbStore(options);
  },
};

/**
 * The store options a `dynamodb://` URL gives, the region defaulting to AWS_REGION /
 * AWS_DEFAULT_REGION in `env`; `client` is the caller's (then no region is needed) or the
 * credentials for the client the store creates (the Worker's secrets).
 */
export function dynamoDbOptionsOf(
  spec: DynamoDbUrl,
  env: Record<string, string | undefined>,
  client: { client: DynamoDBClient } | { credentials?: DynamoDbStoreOptions["credentials"] },
): DynamoDbStoreOptions {
  const table = parts.defined({ table: spec.table, partitionKey: spec.partitionKey, ttlAttribute: spec.ttlAttribute });
  if ("client" in client) return { table: spec.table, ...table, ...client };
  const region = regionOf(spec.region, env);
  return { table: spec.table, ...table, region, ...parts.defined({ endpoint: spec.endpoint }), ...client };
}
