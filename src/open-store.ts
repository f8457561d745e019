/**
 * One store URL understood everywhere (CLI, API runtimes, scripts):
 *
 *   sqlite:./data/leasehold.db   sqlite:/abs/path.db   sqlite::memory:
 *   memory:
 *   dynamodb://TABLE?region=eu-west-1&endpoint=http://127.0.0.1:8000&pk=name&ttl=expires
 *   gcs://BUCKET/PREFIX?endpoint=http://127.0.0.1:4443&project=my-project
 *   s3://BUCKET/PREFIX?region=eu-west-1&endpoint=http://127.0.0.1:7070&pathStyle=true
 *   azblob://ACCOUNT/CONTAINER/PREFIX?endpoint=http://127.0.0.1:10000/ACCOUNT
 *     (Azure credentials from the environment: AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY
 *     or AZURE_STORAGE_SAS_TOKEN, in that order)
 *   http://HOST[:PORT]/  https://HOST/   (the leasehold API; bearer token from env LEASEHOLD_TOKEN)
 *
 * `parseStoreUrl` is pure: it only describes the URL. `openStore` loads the one backend module the
 * URL names through a computed dynamic import, so bundlers (wrangler/esbuild for Workers) do not
 * pull Node-only stores into the core bundle. Runtime-neutral: the environment is passed in, never
 * read from globals.
 */
import { LeaseValidationError, StoreUnavailableError } from "./errors.js";

import type { LeaseStore } from "./lease.js";
import { importPeer } from "./peer.js";
import { MemoryStore } from "./stores/memory.js";

export type StoreUrl =
  | { kind: "memory" }
  | { kind: "sqlite"; path: string }
  | {
      kind: "dynamodb";
      table: string;
      region?: string;
      endpoint?: string;
      partitionKey?: string;
      ttlAttribute?: string;
    }
  /** `prefix` absent (no path, or just "/"): the store's default, "leases/". */
  | { kind: "gcs"; bucket: string; prefix?: string; endpoint?: string; projectId?: string }
  /** `prefix` absent: the store's default, "leases/". */
  | { kind: "s3"; bucket: string; prefix?: string; region?: string; endpoint?: string; forcePathStyle?: boolean }
  /** `endpoint` absent: https://ACCOUNT.blob.core.windows.net. `prefix` absent: "leases/". */
  | { kind: "azure-blob"; account: string; container: string; prefix?: string; endpoint?: string }
  | { kind: "http"; baseUrl: string };

export type StoreKind = StoreUrl["kind"];

/** Every accepted form, for error messages and help text. */
export const STORE_URL_FORMS: readonly string[] = [
  "sqlite:PATH (e.g. sqlite:./data/leasehold.db, sqlite:/abs/path.db)",
  "sqlite::memory:",
  "memory:",
  "dynamodb://TABLE?region=REGION&endpoint=URL&pk=ATTRIBUTE&ttl=ATTRIBUTE",
  "gcs://BUCKET/PREFIX?endpoint=URL&project=PROJECT",
  "s3://BUCKET/PREFIX?region=REGION&endpoint=URL&pathStyle=true",
  "azblob://ACCOUNT/CONTAINER/PREFIX?endpoint=URL (key from AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN)",
  "http(s)://HOST[:PORT]/ (token from LEASEHOLD_TOKEN)",
];

export interface OpenStoreOptions {
  /**
   * Environment variables to take defaults from: LEASEHOLD_TOKEN (http), AWS_REGION /
   * AWS_DEFAULT_REGION (dynamodb, s3), GOOGLE_CLOUD_PROJECT (gcs), AZURE_STORAGE_CONNECTION_STRING /
   * AZURE_STORAGE_KEY / AZURE_STORAGE_SAS_TOKEN (azblob). Nothing is read when omitted. (The AWS
   * SDK reads its own credentials chain from the process environment.)
   */
  env?: Record<string, string | undefined>;
  /**
   * Default true. False for read-only uses: a SQLite URL naming a file that does not exist is an
   * error instead of a new empty database (and folder) left behind.
   */
  create?: boolean;
}

function invalid(part: string, message: string): LeaseValidationError {
  return new LeaseValidationError("store URL", [
    { path: part, message: `${message} (accepted forms: ${STORE_URL_FORMS.join(" | ")})` },
  ]);
}

// DynamoDB table names: 3-255 of letters, digits, underscore, dash, dot.
const DYNAMODB_TABLE = /^[A-Za-z0-9_.-]{3,255}$/;
// Attribute names are free-form in DynamoDB; keep them to identifier-like names for sanity.
const DYNAMODB_ATTRIBUTE = /^[A-Za-z_][A-Za-z0-9_.-]{0,254}$/;
// GCS bucket names: 3-63 characters (up to 222 with dots) of lowercase letters, digits, - _ .
const GCS_BUCKET = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;
// S3 bucket names: 3-63 characters of lowercase letters, digits, dots and hyphens.
const S3_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const AWS_REGION = /^[a-z0-9-]{1,64}$/;
// Azure storage accounts: 3-24 lowercase letters and digits; containers: 3-63 of a-z 0-9 - without "--".
const AZURE_ACCOUNT = /^[a-z0-9]{3,24}$/;
const AZURE_CONTAINER = /^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** Reads the query parameters a scheme allows; any other one is an error naming it. */
function queryParams(url: URL, scheme: string, allowed: readonly string[]): Map<string, string> {
  const params = new Map<string, string>();
  for (const [key, value] of url.searchParams) {
    if (!allowed.includes(key)) {
      throw invalid(
        `query parameter "${key}"`,
        `not understood by ${scheme}: URLs; expected ${allowed.map((a) => `"${a}"`).join(", ")}`,
      );
    }
    if (params.has(key)) throw invalid(`query parameter "${key}"`, "given more than once");
    if (value === "") throw invalid(`query parameter "${key}"`, "expected a value");
    params.set(key, value);
  }
  return params;
}

function endpointParam(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid('query parameter "endpoint"', `expected an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid('query parameter "endpoint"', `expected an http(s) URL, got ${JSON.stringify(value)}`);
  }
  return value;
}

function parseUrl(text: string, scheme: string): URL {
  try {
    return new URL(text);
  } catch {
    throw invalid(scheme, "not a valid URL");
  }
}

function noFragment(url: URL): void {
  if (url.hash !== "") throw invalid("fragment", `expected no "#..." part, got ${JSON.stringify(url.hash)}`);
}

/** Describes a store URL without opening anything; throws `LeaseValidationError` naming the wrong part. */
export function parseStoreUrl(url: string): StoreUrl {
  if (typeof url !== "string" || url.trim() === "") throw invalid("URL", "expected a non-empty string");
  const colon = url.indexOf(":");
  if (colon <= 0) throw invalid("scheme", `expected a URL starting with a scheme such as "sqlite:"`);
  const scheme = url.slice(0, colon).toLowerCase();
  const rest = url.slice(colon + 1);
  switch (scheme) {
    case "memory":
      if (rest !== "" && rest !== "//") throw invalid("memory: URL", `expected nothing after "memory:"`);
      return { kind: "memory" };
    case "sqlite":
      return parseSqlite(rest);
    case "dynamodb":
      return parseDynamoDb(url);
    case "gcs":
      return parseGcs(url);
    case "s3":
      return parseS3(url);
    case "azblob":
      return parseAzureBlob(url);
    case "http":
    case "https":
      return parseHttp(url);
    default:
      throw invalid("scheme", `unknown scheme "${url.slice(0, colon)}:"`);
  }
}

function parseSqlite(path: string): StoreUrl {
  if (path === "") throw invalid("sqlite path", `expected a file path after "sqlite:"`);
  // "sqlite://x" could mean a host, "x" relative or "/x": refuse to guess.
  if (path.startsWith("//")) {
    throw invalid("sqlite path", `expected sqlite:/abs/path or sqlite:./relative/path, not "sqlite://..."`);
  }
  return { kind: "sqlite", path };
}

function parseDynamoDb(text: string): StoreUrl {
  if (!text.toLowerCase().startsWith("dynamodb://")) throw invalid("dynamodb URL", `expected "dynamodb://TABLE"`);
  const url = parseUrl(text, "dynamodb URL");
  noFragment(url);
  if (url.username !== "" || url.password !== "") {
    throw invalid("credentials", "expected no user:password@ in the URL; the AWS SDK reads credentials itself");
  }
  if (url.port !== "") throw invalid("dynamodb table", "expected a table name, not host:port (use ?endpoint=)");
  const table = url.hostname;
  if (!DYNAMODB_TABLE.test(table)) {
    throw invalid(
      "dynamodb table",
      `expected 3-255 characters of A-Z a-z 0-9 _ . - after "dynamodb://", got ${JSON.stringify(table)}`,
    );
  }
  if (url.pathname !== "" && url.pathname !== "/") {
    throw invalid("dynamodb path", `expected nothing after the table name, got ${JSON.stringify(url.pathname)}`);
  }
  const params = queryParams(url, "dynamodb", ["region", "endpoint", "pk", "ttl"]);
  const region = params.get("region");
  if (region !== undefined && !/^[a-z0-9-]{1,64}$/.test(region)) {
    throw invalid(
      'query parameter "region"',
      `expected an AWS region such as eu-west-1, got ${JSON.stringify(region)}`,
    );
  }
  const partitionKey = params.get("pk");
  if (partitionKey !== undefined && !DYNAMODB_ATTRIBUTE.test(partitionKey)) {
    throw invalid('query parameter "pk"', `expected an attribute name, got ${JSON.stringify(partitionKey)}`);
  }
  // Opt-in TTL stamping (see the caveat in src/stores/dynamodb.ts: a deleted record restarts terms).
  const ttlAttribute = params.get("ttl");
  if (ttlAttribute !== undefined && !DYNAMODB_ATTRIBUTE.test(ttlAttribute)) {
    throw invalid('query parameter "ttl"', `expected an attribute name, got ${JSON.stringify(ttlAttribute)}`);
  }
  const endpoint = endpointParam(params.get("endpoint"));
  return {
    kind: "dynamodb",
    table,
    ...(region === undefined ? {} : { region }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(partitionKey === undefined ? {} : { partitionKey }),
    ...(ttlAttribute === undefined ? {} : { ttlAttribute }),
  };
}

function parseGcs(text: string): StoreUrl {
  if (!text.toLowerCase().startsWith("gcs://")) throw invalid("gcs URL", `expected "gcs://BUCKET/PREFIX"`);
  const url = parseUrl(text, "gcs URL");
  noFragment(url);
  if (url.username !== "" || url.password !== "" || url.port !== "") {
    throw invalid("gcs bucket", "expected a bucket name, not user@host:port (use ?endpoint=)");
  }
  const bucket = url.hostname;
  if (!GCS_BUCKET.test(bucket)) {
    throw invalid(
      "gcs bucket",
      `expected 3-222 characters of a-z 0-9 - _ . starting and ending with a letter or digit, got ${JSON.stringify(bucket)}`,
    );
  }
  const prefix = pathPrefix(url, "gcs prefix");
  const params = queryParams(url, "gcs", ["endpoint", "project"]);
  const endpoint = endpointParam(params.get("endpoint"));
  const projectId = params.get("project");
  return {
    kind: "gcs",
    bucket,
    ...(prefix === "" ? {} : { prefix }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(projectId === undefined ? {} : { projectId }),
  };
}

/** The object-name prefix in a URL's path (decoded), or "" for none. */
function pathPrefix(url: URL, part: string, path = url.pathname): string {
  let prefix: string;
  try {
    prefix = decodeURIComponent(path.replace(/^\//, ""));
  } catch {
    throw invalid(part, "expected valid percent-encoding");
  }
  if (prefix.startsWith("/") || prefix.includes("//")) {
    throw invalid(part, `expected object name segments without empty parts, got ${JSON.stringify(prefix)}`);
  }
  return prefix;
}

function parseS3(text: string): StoreUrl {
  if (!text.toLowerCase().startsWith("s3://")) throw invalid("s3 URL", `expected "s3://BUCKET/PREFIX"`);
  const url = parseUrl(text, "s3 URL");
  noFragment(url);
  if (url.username !== "" || url.password !== "") {
    throw invalid("credentials", "expected no user:password@ in the URL; the AWS SDK reads credentials itself");
  }
  if (url.port !== "") throw invalid("s3 bucket", "expected a bucket name, not host:port (use ?endpoint=)");
  const bucket = url.hostname;
  if (!S3_BUCKET.test(bucket)) {
    throw invalid(
      "s3 bucket",
      `expected 3-63 characters of a-z 0-9 . - starting and ending with a letter or digit, got ${JSON.stringify(bucket)}`,
    );
  }
  const prefix = pathPrefix(url, "s3 prefix");
  const params = queryParams(url, "s3", ["region", "endpoint", "pathStyle"]);
  const region = params.get("region");
  if (region !== undefined && !AWS_REGION.test(region)) {
    throw invalid(
      'query parameter "region"',
      `expected an AWS region such as eu-west-1, got ${JSON.stringify(region)}`,
    );
  }
  const pathStyle = params.get("pathStyle");
  if (pathStyle !== undefined && pathStyle !== "true" && pathStyle !== "false") {
    throw invalid('query parameter "pathStyle"', `expected true or false, got ${JSON.stringify(pathStyle)}`);
  }
  const endpoint = endpointParam(params.get("endpoint"));
  return {
    kind: "s3",
    bucket,
    ...(prefix === "" ? {} : { prefix }),
    ...(region === undefined ? {} : { region }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(pathStyle === undefined ? {} : { forcePathStyle: pathStyle === "true" }),
  };
}

function parseAzureBlob(text: string): StoreUrl {
  if (!text.toLowerCase().startsWith("azblob://")) {
    throw invalid("azblob URL", `expected "azblob://ACCOUNT/CONTAINER/PREFIX"`);
  }
  const url = parseUrl(text, "azblob URL");
  noFragment(url);
  if (url.username !== "" || url.password !== "") {
    throw invalid("credentials", "expected no user:password@ in the URL; put the key in AZURE_STORAGE_KEY");
  }
  if (url.port !== "")
    throw invalid("azblob account", "expected a storage account name, not host:port (use ?endpoint=)");
  const account = url.hostname;
  if (!AZURE_ACCOUNT.test(account)) {
    throw invalid("azblob account", `expected 3-24 characters of a-z 0-9, got ${JSON.stringify(account)}`);
  }
  const [, container = "", ...rest] = url.pathname.split("/");
  if (!AZURE_CONTAINER.test(container)) {
    throw invalid(
      "azblob container",
      `expected 3-63 characters of a-z 0-9 - (no "--") after the account, got ${JSON.stringify(container)}`,
    );
  }
  const prefix = rest.length === 0 ? "" : pathPrefix(url, "azblob prefix", `/${rest.join("/")}`);
  const params = queryParams(url, "azblob", ["endpoint"]);
  const endpoint = endpointParam(params.get("endpoint"));
  return {
    kind: "azure-blob",
    account,
    container,
    ...(prefix === "" ? {} : { prefix }),
    ...(endpoint === undefined ? {} : { endpoint }),
  };
}

function parseHttp(text: string): StoreUrl {
  const url = parseUrl(text, "http URL");
  noFragment(url);
  if (url.hostname === "") throw invalid("host", "expected http(s)://HOST[:PORT]/");
  if (url.username !== "" || url.password !== "") {
    // A token in the URL ends up in process lists and shell history.
    throw invalid("credentials", "expected no user:password@ in the URL; put the token in LEASEHOLD_TOKEN");
  }
  if (url.search !== "") throw invalid("query", `expected no query string, got ${JSON.stringify(url.search)}`);
  return { kind: "http", baseUrl: url.href };
}

/** Loads one of our own store modules; a missing module is named as such, other failures pass through. */
async function loadStoreModule<T>(kind: StoreKind, specifier: string): Promise<T> {
  try {
    // A computed specifier: bundlers cannot follow it, so Node-only stores stay out of Worker bundles.
    return (await import(specifier)) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = String((error as { message?: unknown }).message ?? "");
    // Only the store module itself being absent; a missing SDK inside it keeps its own message.
    const file = specifier.replace(/^\.\//, "").replace(/\.js$/, "");
    const missing = message.match(/Cannot find module '([^']*)'/)?.[1] ?? "";
    if (
      (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
      /\.(js|ts)$/.test(missing) &&
      missing.replace(/\.(js|ts)$/, "").endsWith(file)
    ) {
      throw new StoreUnavailableError(
        `the ${kind} store is not available in this build of leasehold (module ${specifier} not found)`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** The loader itself, exported for its test only (a missing module cannot be staged otherwise). */
export const loadStoreModuleForTest = loadStoreModule;

// The constructors this module relies on, stated structurally so this file does not depend on
// the other store modules at compile time.
interface SqliteModule {
  SqliteStore: new (options: { path: string; create?: boolean }) => LeaseStore;
}
interface DynamoDbModule {
  DynamoDbStore: new (options: { client: unknown; table: string; partitionKey?: string }) => LeaseStore;
}
interface DynamoDbSdk {
  DynamoDBClient: new (config: { region: string; endpoint?: string }) => unknown;
}
interface GcsModule {
  GcsStore: new (options: { bucket: string; prefix?: string; apiEndpoint?: string; projectId?: string }) => LeaseStore;
}
interface S3Module {
  S3Store: new (options: S3UrlOptions) => LeaseStore;
}
interface AzureBlobModule {
  AzureBlobStore: new (options: AzureBlobUrlOptions) => LeaseStore;
}
interface AzureSdk {
  StorageSharedKeyCredential: new (account: string, key: string) => unknown;
  AnonymousCredential: new () => unknown;
}
interface HttpModule {
  HttpStore: new (options: { baseUrl: string; token?: string }) => LeaseStore;
}

/**
 * Opens the store a URL names. Defaults that are not in the URL come from `options.env` only
 * (see `OpenStoreOptions`). Throws `LeaseValidationError` for a bad URL, `StoreUnavailableError`
 * when the backend's module is missing, and the backend's own error when it cannot start.
 */
/**
 * The table settings a `dynamodb://` URL carries, for `new DynamoDbStore({ client, ...these })`:
 * shared with the Worker runtime, which builds its client differently (secrets, no computed import).
 */
export function dynamoDbTableOptions(spec: Extract<StoreUrl, { kind: "dynamodb" }>): {
  table: string;
  partitionKey?: string;
  ttlAttribute?: string;
} {
  return {
    table: spec.table,
    ...(spec.partitionKey === undefined ? {} : { partitionKey: spec.partitionKey }),
    ...(spec.ttlAttribute === undefined ? {} : { ttlAttribute: spec.ttlAttribute }),
  };
}

/** What `new S3Store(...)` takes from an `s3://` URL (shared with the Worker runtime, which adds credentials). */
export interface S3UrlOptions {
  bucket: string;
  prefix?: string;
  region: string;
  endpoint?: string;
  forcePathStyle?: boolean;
}

/** The S3 store's options from an `s3://` URL, the region defaulting to AWS_REGION / AWS_DEFAULT_REGION in `env`. */
export function s3StoreOptions(
  spec: Extract<StoreUrl, { kind: "s3" }>,
  env: Record<string, string | undefined>,
): S3UrlOptions {
  const region = spec.region ?? (env.AWS_REGION || undefined) ?? (env.AWS_DEFAULT_REGION || undefined);
  if (region === undefined) {
    throw invalid('query parameter "region"', "expected ?region=... or AWS_REGION in the environment");
  }
  return {
    bucket: spec.bucket,
    region,
    ...(spec.prefix === undefined ? {} : { prefix: spec.prefix }),
    ...(spec.endpoint === undefined ? {} : { endpoint: spec.endpoint }),
    ...(spec.forcePathStyle === undefined ? {} : { forcePathStyle: spec.forcePathStyle }),
  };
}

/** What `new AzureBlobStore(...)` takes from an `azblob://` URL and the environment. */
export type AzureBlobUrlOptions = { container: string; prefix?: string } & (
  | { connectionString: string }
  | { accountUrl: string; credential: unknown }
);

/**
 * The Azure Blob store's options from an `azblob://` URL and its credentials from `env`:
 * AZURE_STORAGE_CONNECTION_STRING (it must name the URL's account and brings its own endpoint), else
 * AZURE_STORAGE_KEY (the account key), else AZURE_STORAGE_SAS_TOKEN. `sharedKey` builds the
 * SDK's StorageSharedKeyCredential, `anonymous` its AnonymousCredential (for a SAS).
 */
export function azureBlobStoreOptions(
  spec: Extract<StoreUrl, { kind: "azure-blob" }>,
  env: Record<string, string | undefined>,
  credentials: { sharedKey: (account: string, key: string) => unknown; anonymous: () => unknown },
): AzureBlobUrlOptions {
  const base = { container: spec.container, ...(spec.prefix === undefined ? {} : { prefix: spec.prefix }) };
  const connectionString = env.AZURE_STORAGE_CONNECTION_STRING;
  if (connectionString) {
    if (spec.endpoint !== undefined) {
      throw invalid(
        'query parameter "endpoint"',
        "not used with AZURE_STORAGE_CONNECTION_STRING, which names the endpoint",
      );
    }
    const named = /(?:^|;)\s*AccountName=([^;]*)/i.exec(connectionString)?.[1]?.trim();
    if (named !== spec.account) {
      throw invalid(
        "azblob account",
        `the URL names account "${spec.account}" but AZURE_STORAGE_CONNECTION_STRING is for ${named ? `"${named}"` : "no AccountName"}`,
      );
    }
    return { ...base, connectionString };
  }
  const accountUrl = (spec.endpoint ?? `https://${spec.account}.blob.core.windows.net`).replace(/\/+$/, "");
  if (env.AZURE_STORAGE_KEY) {
    return { ...base, accountUrl, credential: credentials.sharedKey(spec.account, env.AZURE_STORAGE_KEY) };
  }
  const sas = env.AZURE_STORAGE_SAS_TOKEN?.replace(/^\?/, "");
  if (sas) return { ...base, accountUrl: `${accountUrl}?${sas}`, credential: credentials.anonymous() };
  throw invalid(
    "azblob credentials",
    "expected AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN in the environment (for Entra ID, create AzureBlobStore in code with a TokenCredential)",
  );
}

export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<LeaseStore> {
  const env = options.env ?? {};
  const spec = parseStoreUrl(url);
  switch (spec.kind) {
    case "memory":
      return new MemoryStore();
    case "sqlite": {
      const { SqliteStore } = await loadStoreModule<SqliteModule>("sqlite", "./stores/sqlite.js");
      return new SqliteStore({ path: spec.path, ...(options.create === false ? { create: false } : {}) });
    }
    case "dynamodb": {
      const region = spec.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
      if (region === undefined || region === "") {
        throw invalid('query parameter "region"', "expected ?region=... or AWS_REGION in the environment");
      }
      const { DynamoDbStore } = await loadStoreModule<DynamoDbModule>("dynamodb", "./stores/dynamodb.js");
      const sdkName = "@aws-sdk/client-dynamodb";
      const { DynamoDBClient } = await importPeer(
        sdkName,
        `${sdkName}@3`,
        () => import(sdkName) as Promise<DynamoDbSdk>,
      );
      const client = new DynamoDBClient({
        region,
        ...(spec.endpoint === undefined ? {} : { endpoint: spec.endpoint }),
      });
      return new DynamoDbStore({ client, ...dynamoDbTableOptions(spec) });
    }
    case "gcs": {
      const projectId = spec.projectId ?? env.GOOGLE_CLOUD_PROJECT;
      const { GcsStore } = await loadStoreModule<GcsModule>("gcs", "./stores/gcs.js");
      return new GcsStore({
        bucket: spec.bucket,
        ...(spec.prefix === undefined ? {} : { prefix: spec.prefix }),
        ...(spec.endpoint === undefined ? {} : { apiEndpoint: spec.endpoint }),
        ...(projectId === undefined || projectId === "" ? {} : { projectId }),
      });
    }
    case "s3": {
      const storeOptions = s3StoreOptions(spec, env);
      const { S3Store } = await loadStoreModule<S3Module>("s3", "./stores/s3.js");
      return new S3Store(storeOptions);
    }
    case "azure-blob": {
      const sdkName = "@azure/storage-blob";
      const sdk = await importPeer(sdkName, `${sdkName}@12`, () => import(sdkName) as Promise<AzureSdk>);
      const storeOptions = azureBlobStoreOptions(spec, env, {
        sharedKey: (account, key) => new sdk.StorageSharedKeyCredential(account, key),
        anonymous: () => new sdk.AnonymousCredential(),
      });
      const { AzureBlobStore } = await loadStoreModule<AzureBlobModule>("azure-blob", "./stores/azure-blob.js");
      return new AzureBlobStore(storeOptions);
    }
    case "http": {
      const token = env.LEASEHOLD_TOKEN;
      const { HttpStore } = await loadStoreModule<HttpModule>("http", "./stores/http.js");
      return new HttpStore({ baseUrl: spec.baseUrl, ...(token === undefined || token === "" ? {} : { token }) });
    }
  }
}
