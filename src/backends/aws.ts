/**
 * What the AWS backends (DynamoDB, S3) share in their declarations: the region rule, where a
 * region comes from, and the options of a store that builds its SDK client or takes the caller's.
 * Runtime-neutral, no SDK.
 */
import { z } from "zod";
import * as parts from "./url.js";

export const awsRegion = z
  .string({ error: "expected an AWS region such as eu-west-1" })
  .regex(/^[a-z0-9-]{1,64}$/, { error: "expected an AWS region such as eu-west-1" });

/** The region a URL names, else AWS_REGION / AWS_DEFAULT_REGION from `env`. */
export function regionOf(given: string | undefined, env: Record<string, string | undefined>): string {
  const region = given ?? (env.AWS_REGION || undefined) ?? (env.AWS_DEFAULT_REGION || undefined);
  if (region === undefined) {
    throw parts.invalid('query parameter "region"', "expected ?region=... or AWS_REGION in the environment");
  }
  return region;
}

/** `client` (the caller's, expected to be `what`), or `region`, `endpoint`, `credentials` for the store's own. */
export function awsClientFields<Client, Credentials>(what: string) {
  return {
    client: z
      .custom<Client>((c) => typeof (c as { send?: unknown } | null)?.send === "function", {
        error: `expected ${what}`,
      })
      .optional(),
    region: awsRegion.optional(),
    endpoint: z.url({ protocol: /^https?$/, error: "expected an http(s) URL" }).optional(),
    credentials: z
      .custom<Credentials>((c) => typeof c === "object" || typeof c === "function", {
        error: "expected AWS credentials or a credential provider",
      })
      .optional(),
  };
}

/** With the caller's `client`, each of `fields` given is an issue: it would be silently unused. */
export function ownClientOnly(fields: readonly string[]) {
  return (o: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    if (o.client === undefined) return;
    for (const field of fields) {
      if (o[field] !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [field],
          message: "only applies to the client the store creates; configure your own client instead",
        });
      }
    }
  };
}
