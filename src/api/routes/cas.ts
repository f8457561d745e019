/**
 * The raw compare-and-swap PUT (docs/design.md §5): what the HTTP store writes through, a verb of
 * its own (`cas`, not implied by `write`). `If-Match: "<revision>"` replaces that revision,
 * `If-None-Match: *` creates; `Leasehold-Instance` names the writing process, so a write that keeps
 * the holder comes from the process that took the lease, and a lease still held is never given
 * to another holder (the holding rules, src/api/lease-service.ts). Runtime-neutral.
 */
import { ENTITY_TAG_PATTERN, INSTANCE_HEADER, INSTANCE_PATTERN } from "../../http/schemas.js";
import { type Api, callerOf, type Deps, etagOf } from "../context.js";
import { scoped, wellFormed } from "../middleware.js";
import { ProblemError } from "../problems.js";
import { writableName } from "./leases.js";

export function registerCasRoute(app: Api, deps: Deps): void {
  const { routes, service } = deps;
  app.openapi({ ...routes.put, middleware: [scoped(deps, "cas", writableName), wellFormed] }, async (c) => {
    const name = writableName(c);
    const expected = expectedRevision(c.req.header("if-match"), c.req.header("if-none-match"));
    if (expected !== null) service.checkRevision("If-Match", expected);
    const instance = writerInstance(c.req.header(INSTANCE_HEADER));
    const stored = await service.put(name, c.req.valid("json"), expected, instance, callerOf(deps, c, name));
    return c.json(await deps.views.view(stored), expected === null ? 201 : 200, { ETag: etagOf(stored) });
  });
}

/** The writer's instance from its header: required, and a random id as in the plain routes' bodies. */
function writerInstance(header: string | undefined): string {
  const value = header?.trim();
  if (value !== undefined && INSTANCE_PATTERN.test(value)) return value;
  throw new ProblemError("validation", `send ${INSTANCE_HEADER}: the writing process's instance`, {
    errors: [
      {
        path: INSTANCE_HEADER,
        message: `expected 16-64 characters of A-Z a-z 0-9 . _ : - (a random id the process picked, e.g. a UUID)${value === undefined ? "" : `, got ${value.length} characters`}`,
      },
    ],
  });
}

/**
 * The raw PUT's precondition: `If-Match: "<revision>"` (replace that revision) or
 * `If-None-Match: *` (create). Anything else is the client's error, named by its header.
 */
function expectedRevision(ifMatch: string | undefined, ifNoneMatch: string | undefined): string | null {
  if (ifMatch === undefined && ifNoneMatch === undefined) {
    throw new ProblemError("precondition-required", 'send exactly one of If-Match: "<revision>" or If-None-Match: *');
  }
  if (ifMatch !== undefined && ifNoneMatch !== undefined) {
    throw new ProblemError("validation", "send only one of If-Match and If-None-Match", {
      errors: [{ path: "If-None-Match", message: "expected no If-None-Match beside If-Match" }],
    });
  }
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() === "*") return null;
    throw new ProblemError("validation", "If-None-Match must be * (create only if absent)", {
      errors: [{ path: "If-None-Match", message: `expected *, got ${JSON.stringify(ifNoneMatch.slice(0, 80))}` }],
    });
  }
  const quoted = ENTITY_TAG_PATTERN.exec((ifMatch ?? "").trim());
  if (!quoted?.[1]) {
    throw new ProblemError("validation", "If-Match must be one quoted revision, as the ETag header gave it", {
      errors: [
        {
          path: "If-Match",
          message: `expected a quoted revision such as "3" (no list, no W/, no *), got ${JSON.stringify((ifMatch ?? "").slice(0, 80))}`,
        },
      ],
    });
  }
  return quoted[1];
}
