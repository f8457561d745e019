/**
 * The HTTP backend's declaration (../backend.ts): `http(s)://HOST[:PORT]/`, another leasehold API
 * (its bearer token from LEASEHOLD_TOKEN, never from the URL), on Node and Lambda. The store is
 * src/backends/http/store.ts, over the API client (src/http/client.ts), which validates its own options.
 * Runtime-neutral.
 */
import { z } from "zod";
import type { Backend, StoreModule } from "../backend.js";
import * as parts from "../url.js";

export interface HttpUrl {
  kind: "http";
  baseUrl: string;
}

export const httpBackend: Backend<HttpUrl> = {
  kind: "http",
  schemes: ["http", "https"],
  forms: ["http(s)://HOST[:PORT]/ (token from LEASEHOLD_TOKEN)"],
  options: z.object({ baseUrl: z.url({ protocol: /^https?$/ }), token: z.string().min(1).optional() }),
  runtimes: {
    node: true,
    lambda: true,
    workers: "the HTTP store is not bundled into the Worker; point clients at that API directly",
  },
  env: { LEASEHOLD_TOKEN: z.string() },
  parse(text) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw parts.invalid("http URL", "not a valid URL");
    }
    if (url.hash !== "") throw parts.invalid("fragment", `expected no "#..." part, got ${JSON.stringify(url.hash)}`);
    if (url.hostname === "") throw parts.invalid("host", "expected http(s)://HOST[:PORT]/");
    if (url.username !== "" || url.password !== "") {
      // A token in the URL ends up in process lists and shell history.
      throw parts.invalid("credentials", "expected no user:password@ in the URL; put the token in LEASEHOLD_TOKEN");
    }
    if (url.search !== "") throw parts.invalid("query", `expected no query string, got ${JSON.stringify(url.search)}`);
    return { kind: "http", baseUrl: url.href };
  },
  module: "./backends/http/store.js",
  open(spec, { env, module }) {
    const token = env.LEASEHOLD_TOKEN;
    const { HttpStore } = module as StoreModule<"HttpStore", { baseUrl: string; token?: string }>;
    return new HttpStore({ baseUrl: spec.baseUrl, ...(token === undefined || token === "" ? {} : { token }) });
  },
};
