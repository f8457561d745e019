/**
 * The GCS backend's declaration (../backend.ts): `gcs://BUCKET/PREFIX?endpoint=&project=`, the
 * GCS store's options, Node and Lambda only (the SDK hangs inside workerd), and its one limit:
 * GCS sustains about one write per second to one object, so renewals may not come faster. The
 * store is src/backends/gcs/store.ts. Runtime-neutral, no SDK.
 */
import type { Bucket, Storage } from "@google-cloud/storage";
import { z } from "zod";
import type { Backend, StoreLimits, StoreModule } from "../backend.js";
import { objectStoreFields } from "../object-store/fields.js";
import * as parts from "../url.js";

export interface GcsStoreOptions {
  /** Bucket name, or a `Bucket` of your own `Storage` (then `storage`, `apiEndpoint`, `projectId` are unused). */
  bucket: string | Bucket;
  /** Your own client (credentials, retries); default: a new `Storage` with SDK retries off. */
  storage?: Storage;
  /** Object name prefix for every lease; default "leases/". Objects are `<prefix><name>.json`. */
  prefix?: string;
  /** API endpoint for the client this store creates, e.g. an emulator's "http://127.0.0.1:4443". */
  apiEndpoint?: string;
  /** Project for the client this store creates (default: from the environment). */
  projectId?: string;
  /** On a conflict, read the object so the error carries the current record; default true. */
  readCurrentOnConflict?: boolean;
  /** Per-request timeout in ms (an upload that times out is ambiguous); default 10000. */
  timeoutMs?: number;
}

/** GCS bucket names: 3-63 characters (up to 222 with dots) of lowercase letters, digits, - _ . */
const bucketName = z.string({ error: "expected a GCS bucket name" }).regex(/^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/, {
  error: "expected a GCS bucket name (3-222 characters of a-z 0-9 . _ -, starting and ending with a letter or digit)",
});

export const gcsOptionsSchema = z.strictObject(
  {
    bucket: z.union(
      [bucketName, z.custom<Bucket>((b) => typeof (b as { file?: unknown } | null)?.file === "function")],
      {
        error: (issue) =>
          typeof issue.input === "string"
            ? "expected a GCS bucket name (3-222 characters of a-z 0-9 . _ -, starting and ending with a letter or digit)"
            : "expected a bucket name or a Bucket from @google-cloud/storage",
      },
    ),
    storage: z
      .custom<Storage>((s) => typeof (s as { bucket?: unknown } | null)?.bucket === "function", {
        error: "expected a Storage from @google-cloud/storage",
      })
      .optional(),
    ...objectStoreFields,
    apiEndpoint: z.url({ protocol: /^https?$/, error: "expected an http(s) URL" }).optional(),
    projectId: z.string({ error: "expected a project id" }).min(1, { error: "expected a project id" }).optional(),
    readCurrentOnConflict: z.boolean({ error: "expected true or false" }).optional(),
  },
  { error: "expected an object with at least a bucket" },
);

/** What a `gcs://` URL says. `prefix` absent: the store's default, "leases/". */
export interface GcsUrl {
  kind: "gcs";
  bucket: string;
  prefix?: string;
  endpoint?: string;
  projectId?: string;
}

/** GCS allows about one write per second to one object name; faster writes get 429. */
export const GCS_LIMITS: StoreLimits = {
  minWriteIntervalMs: 1000,
  reason: "GCS allows about one write per second to one object",
};

export const gcsBackend: Backend<GcsUrl> = {
  kind: "gcs",
  schemes: ["gcs"],
  forms: ["gcs://BUCKET/PREFIX?endpoint=URL&project=PROJECT"],
  options: gcsOptionsSchema,
  runtimes: {
    node: true,
    lambda: true,
    workers: "its SDK hangs inside workerd without sending a request",
  },
  limits: GCS_LIMITS,
  env: { GOOGLE_CLOUD_PROJECT: z.string() },
  parse(text) {
    const url = parts.host(text, "gcs", "gcs://BUCKET/PREFIX", null);
    if (url.username !== "" || url.password !== "" || url.port !== "") {
      throw parts.invalid("gcs bucket", "expected a bucket name, not user@host:port (use ?endpoint=)");
    }
    parts.check(bucketName, url.hostname, "gcs bucket");
    const prefix = parts.prefix(url, "gcs prefix");
    const params = parts.query(url, "gcs", ["endpoint", "project"]);
    return {
      kind: "gcs",
      bucket: url.hostname,
      ...parts.defined({
        prefix: prefix === "" ? undefined : prefix,
        endpoint: parts.endpoint(params.get("endpoint")),
        projectId: params.get("project"),
      }),
    };
  },
  module: "./backends/gcs/store.js",
  open(spec, { env, client, module }) {
    const projectId = spec.projectId ?? (env.GOOGLE_CLOUD_PROJECT || undefined);
    const { GcsStore } = module as StoreModule<"GcsStore", GcsStoreOptions>;
    return new GcsStore({
      bucket: spec.bucket,
      ...parts.defined({ prefix: spec.prefix }),
      ...(client === undefined
        ? parts.defined({ apiEndpoint: spec.endpoint, projectId })
        : { storage: client as Storage }),
    });
  },
};
