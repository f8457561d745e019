/**
 * Choosing among the backends (each declares itself in its folder under src/backends/, listed in
 * src/backends/registry.ts: its URL scheme, options, runtimes, limits), and the one place a store
 * is opened, for the CLI, `npm start`,
 * `leasehold serve`, the Lambda handler and the Worker:
 *
 *   sqlite:./data/leasehold.db   sqlite:/abs/path.db   sqlite::memory:
 *   memory:
 *   dynamodb://TABLE?region=eu-west-1&endpoint=http://127.0.0.1:8000&pk=name&ttl=expires
 *   gcs://BUCKET/PREFIX?endpoint=http://127.0.0.1:4443&project=my-project
 *   s3://BUCKET/PREFIX?region=eu-west-1&endpoint=http://127.0.0.1:7070&pathStyle=true
 *   azblob://ACCOUNT/CONTAINER/PREFIX?endpoint=http://127.0.0.1:10000/ACCOUNT
 *   postgres://USER:PASSWORD@HOST:5432/DATABASE?table=leasehold_leases&schema=public&pool=10
 *   http://HOST[:PORT]/  https://HOST/   (the leasehold API; bearer token from env LEASEHOLD_TOKEN)
 *   durable-object:LEASES                 (on the Worker: its namespace binding, passed as the client)
 *
 * `parseStoreUrl` is pure: it only describes the URL. `openStore` loads the one backend module the
 * URL names, through a computed import, so bundlers (wrangler/esbuild for Workers) do not pull
 * Node-only stores into the core bundle. Runtime-neutral: the environment is passed in, never read
 * from globals.
 */
import type { Backend, Runtime } from "./backends/backend.js";
import * as registry from "./backends/registry.js";
import { invalid } from "./backends/url.js";
import { isLeaseValidationError, LeaseValidationError, StoreUnavailableError } from "./errors.js";
import type { LeaseStore } from "./lease.js";

export type { Runtime } from "./backends/backend.js";

type SpecOf<B> = B extends Backend<infer Spec> ? Spec : never;

/** What a store URL says, per backend: derived from the registry (src/backends/registry.ts). */
export type StoreUrl = SpecOf<(typeof registry)[keyof typeof registry]>;
export type StoreKind = StoreUrl["kind"];

/** Every backend a URL can name (src/backends/registry.ts). */
export const BACKENDS: readonly Backend<StoreUrl>[] = Object.values(registry) as Backend<StoreUrl>[];

/** Every accepted form, for error messages and help text. */
export const STORE_URL_FORMS: readonly string[] = BACKENDS.flatMap((b) => b.forms);

/** The forms of the backends that run on `runtime`, for that runtime's help text. */
export function storeUrlFormsOn(runtime: Runtime): string[] {
  return BACKENDS.filter((b) => b.runtimes[runtime] === true).flatMap((b) => b.forms);
}

export function backendOf(kind: StoreKind): Backend<StoreUrl> {
  return BACKENDS.find((b) => b.kind === kind)!;
}

export interface OpenStoreOptions {
  /**
   * Environment variables to take defaults from: LEASEHOLD_TOKEN (http), AWS_REGION /
   * AWS_DEFAULT_REGION (dynamodb, s3), GOOGLE_CLOUD_PROJECT (gcs), AZURE_STORAGE_CONNECTION_STRING /
   * AZURE_STORAGE_KEY / AZURE_STORAGE_SAS_TOKEN (azblob), PGPASSWORD (postgres). Nothing is read when omitted. (The AWS
   * SDK reads its own credentials chain from the process environment.)
   */
  env?: Record<string, string | undefined>;
  /**
   * Default true. False for read-only uses: a SQLite URL naming a file that does not exist is an
   * error instead of a new empty database (and folder) left behind.
   */
  create?: boolean;
  /**
   * A client of the backend's SDK to use instead of one built from the URL and the environment
   * (an `S3Client`, a GCS `Storage`, an Azure `ContainerClient`, a `DynamoDBClient`, a `pg.Pool`); the URL
   * still names the bucket, table or container. The store never closes it. For
   * `durable-object:BINDING`, the Worker's namespace binding.
   */
  client?: unknown;
  /**
   * The backend's store module, already loaded: a bundled program (the Worker) imports it with a
   * literal specifier its bundler can follow. Default: loaded here by a computed import, which
   * bundlers leave out, so one backend's SDK never lands in another's bundle.
   */
  module?: unknown;
}

/** Describes a store URL without opening anything; throws `LeaseValidationError` naming the wrong part. */
export function parseStoreUrl(url: string): StoreUrl {
  return listingForms(() => {
    if (typeof url !== "string" || url.trim() === "") throw invalid("URL", "expected a non-empty string");
    const colon = url.indexOf(":");
    if (colon <= 0) throw invalid("scheme", `expected a URL starting with a scheme such as "sqlite:"`);
    const scheme = url.slice(0, colon).toLowerCase();
    const backend = BACKENDS.find((b) => b.schemes.includes(scheme));
    if (!backend) throw invalid("scheme", `unknown scheme "${url.slice(0, colon)}:"`);
    return backend.parse(url);
  });
}

/** Runs a declaration's `parse` or `open`; a bad part of the URL it names gets every accepted form appended. */
function listingForms<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (!isLeaseValidationError(error) || error.what !== "store URL") throw error;
    const forms = ` (accepted forms: ${STORE_URL_FORMS.join(" | ")})`;
    throw new LeaseValidationError(
      "store URL",
      error.issues.map((i) => ({ ...i, message: i.message + forms })),
      { cause: error },
    );
  }
}

/**
 * Opens the store a URL names. Defaults that are not in the URL come from `options.env` only
 * (see `OpenStoreOptions`). Throws `LeaseValidationError` for a bad URL, `StoreUnavailableError`
 * when the backend's module or SDK is missing, and the backend's own error when it cannot start.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<LeaseStore> {
  const spec = parseStoreUrl(url);
  const backend = backendOf(spec.kind);
  const module =
    options.module ?? (backend.module === undefined ? undefined : await loadStoreModule(spec.kind, backend.module));
  return listingForms(() =>
    backend.open(spec, {
      env: options.env ?? {},
      create: options.create ?? true,
      ...(options.client === undefined ? {} : { client: options.client }),
      module,
    }),
  );
}

/** Why the store a URL names cannot run on `runtime`, or undefined when it can. */
export function refusedOn(runtime: Runtime, spec: StoreUrl): string | undefined {
  const verdict = backendOf(spec.kind).runtimes[runtime];
  return verdict === true ? undefined : verdict;
}

/** The SQLite file `npm start`, `leasehold serve` and the CLI use when neither LEASEHOLD_STORE nor LEASEHOLD_DB is set. */
export const DEFAULT_DB = "./data/leasehold.db";

/** Where a Node entry's store URL came from, for the start-up line and error messages. */
export type StoreSource = "--store" | "LEASEHOLD_STORE" | "LEASEHOLD_DB" | "default";

/** A store URL, and where it came from. */
export interface ChosenStore {
  url: string;
  from: StoreSource;
}

/**
 * Which store a Node entry uses (a CLI command, `npm start`, `leasehold serve`): `--store`, else
 * LEASEHOLD_STORE, else the SQLite file LEASEHOLD_DB, else DEFAULT_DB. LEASEHOLD_STORE together
 * with LEASEHOLD_DB is a contradiction (`LeaseValidationError` naming LEASEHOLD_DB); with
 * `--store`, LEASEHOLD_DB is ignored and a warning says so. Unset and "" mean the same.
 */
export function chooseStoreUrl(given: {
  flag?: string | undefined;
  store?: string | undefined;
  db?: string | undefined;
}): ChosenStore & { warnings: string[] } {
  const store = given.store || undefined;
  const db = given.db || undefined;
  if (given.flag !== undefined) {
    return {
      url: given.flag,
      from: "--store",
      warnings: db ? ["LEASEHOLD_DB is ignored: --store names the store"] : [],
    };
  }
  if (store !== undefined && db !== undefined) {
    throw new LeaseValidationError("store", [
      {
        path: "LEASEHOLD_DB",
        message:
          "contradicts LEASEHOLD_STORE: LEASEHOLD_DB names the SQLite file used when LEASEHOLD_STORE is unset; set only one",
      },
    ]);
  }
  if (store !== undefined) return { url: store, from: "LEASEHOLD_STORE", warnings: [] };
  if (db !== undefined) return { url: `sqlite:${db}`, from: "LEASEHOLD_DB", warnings: [] };
  return { url: `sqlite:${DEFAULT_DB}`, from: "default", warnings: [] };
}

/** Loads one of our own store modules; a missing module is named as such, other failures pass through. */
async function loadStoreModule<T>(kind: string, specifier: string): Promise<T> {
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
