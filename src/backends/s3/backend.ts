/**
 * The S3 backend's declaration (../backend.ts): `s3://BUCKET/PREFIX?region=&endpoint=&pathStyle=`,
 * the S3 store's options, Node and Lambda (the Worker is not given it). The store is
 * src/backends/s3/store.ts. Runtime-neutral, no SDK.
 */
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import { z } from "zod";
import { awsClientFields, awsRegion, ownClientOnly, regionOf } from "../aws.js";
import type { Backend, StoreModule } from "../backend.js";
import { objectStoreFields } from "../object-store/fields.js";
import * as parts from "../url.js";

export interface S3StoreOptions {
  /** Bucket name (a general purpose bucket: listing relies on key order). */
  bucket: string;
  /** Object key prefix for every lease; default "leases/". Objects are `<prefix><name>.json`. */
  prefix?: string;
  /**
   * Your own client (credentials, retries, middleware); the store never destroys it. Default: a
   * new `S3Client` from `region`, `endpoint`, `forcePathStyle`, `credentials`, with one attempt
   * per request.
   */
  client?: S3Client;
  /** Region for the client this store creates (default: the SDK's, e.g. AWS_REGION). */
  region?: string;
  /** Endpoint for the client this store creates, e.g. an S3-compatible server's "http://127.0.0.1:7070". */
  endpoint?: string;
  /** Path-style URLs (`endpoint/bucket/key`) for the client this store creates; most S3-compatible servers need it. */
  forcePathStyle?: boolean;
  /** Credentials for the client this store creates (default: the SDK's provider chain). */
  credentials?: S3ClientConfig["credentials"];
  /** Per-request timeout in ms for the client this store creates (a write that times out is ambiguous); default 10000. */
  timeoutMs?: number;
}

/** S3 bucket names: 3-63 characters of a-z 0-9 . - starting and ending with a letter or digit. */
const bucket = z.string({ error: "expected an S3 bucket name" }).regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, {
  error: "expected an S3 bucket name (3-63 characters of a-z 0-9 . - starting and ending with a letter or digit)",
});
const OWN_CLIENT_ONLY = ["region", "endpoint", "forcePathStyle", "credentials", "timeoutMs"] as const;

export const s3OptionsSchema = z
  .strictObject(
    {
      bucket,
      ...objectStoreFields,
      ...awsClientFields<S3Client, S3ClientConfig["credentials"]>("an S3Client from @aws-sdk/client-s3"),
      forcePathStyle: z.boolean({ error: "expected true or false" }).optional(),
    },
    { error: "expected an object with at least a bucket" },
  )
  .superRefine(ownClientOnly(OWN_CLIENT_ONLY));

/** What an `s3://` URL says. `prefix` absent: the store's default, "leases/". */
export interface S3Url {
  kind: "s3";
  bucket: string;
  prefix?: string;
  region?: string;
  endpoint?: string;
  forcePathStyle?: boolean;
}

export const s3Backend: Backend<S3Url> = {
  kind: "s3",
  schemes: ["s3"],
  forms: ["s3://BUCKET/PREFIX?region=REGION&endpoint=URL&pathStyle=true"],
  options: s3OptionsSchema,
  runtimes: {
    node: true,
    lambda: true,
    workers: "its SDK parses S3's XML answers with DOMParser, which workerd lacks",
  },
  env: { AWS_REGION: awsRegion, AWS_DEFAULT_REGION: awsRegion },
  parse(text) {
    const url = parts.host(text, "s3", "s3://BUCKET/PREFIX", "the AWS SDK reads credentials itself");
    if (url.port !== "") throw parts.invalid("s3 bucket", "expected a bucket name, not host:port (use ?endpoint=)");
    parts.check(bucket, url.hostname, "s3 bucket");
    const prefix = parts.prefix(url, "s3 prefix");
    const params = parts.query(url, "s3", ["region", "endpoint", "pathStyle"]);
    const region = params.get("region");
    if (region !== undefined) parts.check(awsRegion, region, 'query parameter "region"');
    const pathStyle = params.get("pathStyle");
    if (pathStyle !== undefined && pathStyle !== "true" && pathStyle !== "false") {
      throw parts.invalid('query parameter "pathStyle"', `expected true or false, got ${JSON.stringify(pathStyle)}`);
    }
    return {
      kind: "s3",
      bucket: url.hostname,
      ...parts.defined({
        prefix: prefix === "" ? undefined : prefix,
        region,
        endpoint: parts.endpoint(params.get("endpoint")),
        forcePathStyle: pathStyle === undefined ? undefined : pathStyle === "true",
      }),
    };
  },
  module: "./backends/s3/store.js",
  open(spec, { env, client, module }) {
    const location = { bucket: spec.bucket, ...parts.defined({ prefix: spec.prefix }) };
    const settings =
      client === undefined
        ? {
            region: regionOf(spec.region, env),
            ...parts.defined({ endpoint: spec.endpoint, forcePathStyle: spec.forcePathStyle }),
          }
        : { client: client as S3Client };
    const { S3Store } = module as StoreModule<"S3Store", S3StoreOptions>;
    return new S3Store({ ...location, ...settings });
  },
};
