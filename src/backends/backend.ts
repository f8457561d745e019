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
 * Runtime-neutral.
 */
import type { z } from "zod";
import { StoreUnavailableError } from "../errors.js";
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
