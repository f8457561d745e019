/**
 * How a backend declares itself (STYLE.md 14, after unstorage's `defineDriver`): its URL
 * scheme(s) and how a URL of them reads, its options as a zod schema (the one its store's
 * constructor validates with), the runtimes it runs on (or why not), its limits, and how it opens
 * a store, with or without a client the caller brings. ./registry.ts lists the declarations and
 * src/open-store.ts chooses among them; nothing outside a declaration knows its backend's options,
 * name rules or environment.
 *
 * A declaration is pure: it imports no SDK and no Node API, so the registry can hold every one of
 * them and the Worker bundle stays small. It names its store module; the registry loads it (and
 * its SDK) on demand, through a computed specifier bundlers do not follow, and `open` builds the
 * store from it.
 *
 * Runtime-neutral.
 */
import type { z } from "zod";
import type { FieldIssue } from "../errors.js";
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
  /** The backend's store module (`Backend.module`), loaded by the registry. */
  module?: unknown;
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
  /**
   * The environment variables `open` takes defaults from (region, project, token, keys), each with
   * the rule its value keeps. A server reads these, passes them on to `open`, and refuses them
   * where no backend that reads them runs.
   */
  env?: Readonly<Record<string, z.ZodType<string>>>;
  /**
   * What a URL of this backend still needs from `env` to open on `runtime`, checked when a server
   * starts so that a missing region or key refuses to start instead of failing the first request.
   * Each issue names the variable (`path`), or the URL itself (`path: ""`). Pure.
   */
  check?(spec: Spec, env: Record<string, string | undefined>, runtime: Runtime): FieldIssue[];
  /** Describes a URL of this backend's scheme; throws `LeaseValidationError` naming the wrong part. Pure. */
  parse(url: string): Spec;
  /**
   * The store module, relative to src/ (src/open-store.ts loads it with a computed import, which
   * also loads its SDK); absent for a store in the core.
   */
  module?: string;
  /** Opens the store a parsed URL names, from its loaded module. */
  open(spec: Spec, context: OpenContext): LeaseStore;
  /**
   * The DDL that makes this backend's storage, for backends whose store creates it on first use
   * (PostgreSQL): `leasehold migrate` prints it or runs it, for roles that may not run DDL.
   */
  migration?(spec: Spec): string;
}

/** A store module as `open` receives it (`OpenContext.module`): its store class under `Name`. */
export type StoreModule<Name extends string, Options> = { [K in Name]: new (options: Options) => LeaseStore };
