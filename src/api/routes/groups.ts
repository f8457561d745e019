/**
 * The sharded group routes (docs/sharding.md, "Over HTTP"): a remote member's heartbeat, hand-off
 * confirmation and leave (src/api/shard-service.ts). The token must cover the member's own record,
 * `<group>/_members/<member>`: a token scoped to exactly that name acts for that member alone, one
 * scoped to `<group>/` for any member of the group. What the member proves beyond its token is its
 * `instance` (its digest is in its session record). Runtime-neutral.
 */
import type { Context } from "hono";
import { memberName, validateGroup, validateMemberId } from "../../sharding/layout.js";
import { type Api, callerOf, type Deps, type Env } from "../context.js";
import { scoped, wellFormed } from "../middleware.js";

const groupMember = (c: Context) => ({
  group: validateGroup(c.req.param("group")),
  member: validateMemberId(c.req.param("member"), "member"),
});

export function registerGroupRoutes(app: Api, deps: Deps): void {
  const { routes, shards } = deps;
  const memberRecord = (c: Context) => {
    const { group, member } = groupMember(c);
    return memberName(group, member);
  };
  const middleware = [scoped(deps, "write", memberRecord), wellFormed];
  const caller = (c: Context<Env>) => callerOf(deps, c, memberRecord(c));

  app.openapi({ ...routes.heartbeat, middleware }, async (c) => {
    const { group, member } = groupMember(c);
    return c.json(await shards.heartbeat(group, member, c.req.valid("json"), caller(c)), 200);
  });

  app.openapi({ ...routes.handoff, middleware }, async (c) => {
    const { group, member } = groupMember(c);
    return c.json(await shards.confirmHandoff(group, member, c.req.valid("json"), caller(c)), 200);
  });

  app.openapi({ ...routes.leave, middleware }, async (c) => {
    const { group, member } = groupMember(c);
    return c.json(await shards.leave(group, member, c.req.valid("json"), caller(c)), 200);
  });
}
