/**
 * The Durable Objects backend's declaration (../backend.ts): `durable-object:BINDING`, the Worker's
 * namespace binding of `LeaseObject` (the Worker's default store is `durable-object:LEASES`). It runs
 * on Workers only: the objects live inside Cloudflare's runtime, and the store reaches them through
 * the binding, which `open` takes as the caller's client (`openStore(url, { client: env.LEASES })`).
 * The store is ./store.ts, the objects ./object.ts. Runtime-neutral, no SDK.
 */
import { z } from "zod";
import type { Backend, StoreModule } from "../backend.js";
import * as parts from "../url.js";
import { type LeaseNamespace, MAX_INDEX_PAGE } from "./wire.js";

export interface DurableObjectStoreOptions {
  /** The namespace binding of `LeaseObject` (`env.LEASES`). */
  namespace: LeaseNamespace;
  /** Names `list` fetches from the directory per request; their records are then read in parallel. Default 100. */
  listPageSize?: number;
}

export const durableObjectOptionsSchema = z.strictObject(
  {
    namespace: z.custom<LeaseNamespace>(
      (n) =>
        typeof (n as Partial<LeaseNamespace> | null)?.idFromName === "function" &&
        typeof (n as Partial<LeaseNamespace>).get === "function",
      { error: "expected a Durable Object namespace binding (env.LEASES)" },
    ),
    listPageSize: z
      .number({ error: `expected a whole number from 1 to ${MAX_INDEX_PAGE}` })
      .int({ error: `expected a whole number from 1 to ${MAX_INDEX_PAGE}` })
      .min(1, { error: `expected a whole number from 1 to ${MAX_INDEX_PAGE}` })
      .max(MAX_INDEX_PAGE, { error: `expected a whole number from 1 to ${MAX_INDEX_PAGE}` })
      .optional(),
  },
  { error: "expected an object with the namespace" },
);

/** The Worker's binding of `LeaseObject` when LEASEHOLD_STORE is unset (wrangler.toml). */
export const DEFAULT_BINDING = "LEASES";

/** What a `durable-object:` URL says: the name of the Worker's namespace binding. */
export interface DurableObjectUrl {
  kind: "durable-object";
  binding: string;
}

/** A binding name as wrangler.toml accepts one. */
const bindingName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, { error: "expected a binding name such as LEASES" });

const WORKERS_ONLY = "Durable Objects are reached through a Worker's namespace binding, inside Cloudflare Workers";

export const durableObjectBackend: Backend<DurableObjectUrl> = {
  kind: "durable-object",
  schemes: ["durable-object"],
  forms: [`durable-object:BINDING (on the Worker; its default is durable-object:${DEFAULT_BINDING})`],
  options: durableObjectOptionsSchema,
  runtimes: { node: WORKERS_ONLY, lambda: WORKERS_ONLY, workers: true },
  parse(text) {
    const binding = text.slice("durable-object:".length);
    parts.check(bindingName, binding, "durable-object binding");
    return { kind: "durable-object", binding };
  },
  module: "./backends/durable-object/store.js",
  open(spec, { client, module }) {
    if (client === undefined) {
      throw parts.invalid(
        "durable-object binding",
        `expected the namespace binding ${spec.binding} as the client (openStore(url, { client: env.${spec.binding} }))`,
      );
    }
    const { DurableObjectStore } = module as StoreModule<"DurableObjectStore", DurableObjectStoreOptions>;
    return new DurableObjectStore({ namespace: client as LeaseNamespace });
  },
};
