/**
 * How a backend declares itself (STYLE.md 14, after unstorage's `defineDriver`): its URL
 * scheme(s) and how a URL of them reads, its options as a zod schema (the one its store's
 * constructor validates with), the runtimes it runs on (or why not), its limits, and how it opens
 * a store, with or without a client the caller brings. src/open-store.ts is the registry of these
 * declarations; nothing outside a declaration knows its backend's options or name rules.
 *
 * A declaration is pure: it imports no SDK and no Node API, so the registry can hold every one of
 * them and the Worker bundle stays small. `open` loads the store module (and its SDK) on demand,
 * through a computed specifier bundlers do not follow.
 *
 * Also the URL helpers the declarations share. Runtime-neutral.
 */
import type { z } from "zod";
import { LeaseValidationError, StoreUnavailableError } from "../errors.js";
import type { LeaseStore, StoreLimits } from "../lease.js";

/** Where a store may run: Node (library, CLI, `npm start`), the Lambda handler, the Worker. */
export type Runtime = "node" | "lambda" | "workers";

export type { StoreLimits } from "../lease.js";

export interface OpenContext {
  /** Environment variables a backend takes defaults from (region, project, token, keys); never read from globals. */
  env: Record<string, string | undefined>;
  /** False for read-only uses: a SQLite file that does not exist is an error, not created. */
  create: boolean;
  /** A client of the backend's SDK the caller brings (the store then never closes it). */
  client?: unknown;
}

export interface Backend<Spec extends { kind: string } = { kind: string }> {
  kind: Spec["kind"];
  /** URL schemes, lower case, without ":". */
  schemes: readonly string[];
  /** Every accepted URL form, for help text and error messages. */
  forms: readonly string[];
  /** The store's options: the same schema its constructor validates with. */
  options: z.ZodType;
  /** Each runtime: true, or why the store is refused there. */
  runtimes: Record<Runtime, true | string>;
  limits?: StoreLimits;
  /** The environment variables `open` takes defaults from. */
  env?: readonly string[];
  /** Describes a URL of this backend's scheme; throws `LeaseValidationError` naming the wrong part. Pure. */
  parse(url: string): Spec;
  /** Opens the store a parsed URL names (loading its module and SDK). */
  open(spec: Spec, context: OpenContext): Promise<LeaseStore>;
}

/** Every accepted form of every backend, filled in by the registry for error messages. */
let allForms: readonly string[] = [];
export function setUrlForms(forms: readonly string[]): void {
  allForms = forms;
}

/** A bad part of a store URL, with every accepted form in the message. */
export function invalid(part: string, message: string): LeaseValidationError {
  return new LeaseValidationError("store URL", [
    { path: part, message: `${message} (accepted forms: ${allForms.join(" | ")})` },
  ]);
}

/**
 * Reads the query parameters a scheme allows; any other one is an error naming it. A value must be
 * non-empty and given once.
 */
export function queryParams(url: URL, scheme: string, allowed: readonly string[]): Map<string, string> {
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

/** `?endpoint=`: an http(s) URL. */
export function endpointParam(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== "http:" && url?.protocol !== "https:") {
    throw invalid('query parameter "endpoint"', `expected an http(s) URL, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * A `scheme://HOST/...` URL: checks the scheme's "//", parses it, refuses a fragment and (unless
 * `credentialsHint` is null) a user:password@. `what` names the URL in messages ("s3 URL").
 */
export function hostUrl(text: string, scheme: string, form: string, credentialsHint: string | null): URL {
  if (!text.toLowerCase().startsWith(`${scheme}://`)) throw invalid(`${scheme} URL`, `expected "${form}"`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`${scheme} URL`, "not a valid URL");
  }
  if (url.hash !== "") throw invalid("fragment", `expected no "#..." part, got ${JSON.stringify(url.hash)}`);
  if (credentialsHint !== null && (url.username !== "" || url.password !== "")) {
    throw invalid("credentials", `expected no user:password@ in the URL; ${credentialsHint}`);
  }
  return url;
}

/** The object-name prefix in a URL's path (decoded), or "" for none. */
export function pathPrefix(url: URL, part: string, path = url.pathname): string {
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

/**
 * Checks one URL part with the field's schema from the backend's options, so a name rule lives
 * once, in the options schema: its message, under the URL part's name.
 */
export function checkPart(schema: z.ZodType, value: unknown, part: string, got = value): void {
  const result = schema.safeParse(value);
  if (!result.success) {
    const message = result.error.issues[0]?.message ?? "invalid";
    throw invalid(part, `${message}, got ${JSON.stringify(got)}`);
  }
}

/** Copies the defined entries of `values`: the specs leave out what the URL did not say. */
export function defined<T extends Record<string, unknown>>(values: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as never;
}

/** Loads one of our own store modules; a missing module is named as such, other failures pass through. */
export async function loadStoreModule<T>(kind: string, specifier: string): Promise<T> {
  try {
    // A computed specifier: bundlers cannot follow it, so Node-only stores stay out of Worker bundles.
    return (await import(specifier)) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = String((error as { message?: unknown }).message ?? "");
    // Only the store module itself being absent; a missing SDK inside it keeps its own message.
    const file = specifier.replace(/^(\.\.?\/)+/, "").replace(/\.js$/, "");
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
