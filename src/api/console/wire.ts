/**
 * The wire shapes of the console's routes (docs/console.md): the change log of one lease, and the
 * events of the prefix and group streams. Zod schemas with `.meta()`, so the OpenAPI document
 * (./routes.ts) is built from them; the browser client imports only their types.
 */
import { z } from "zod";
import { recordName, UnreadableLease, WatchEvent } from "../../http/schemas.js";
import { MAX_BUCKETS } from "../../sharding/bucket-of.js";

const wall = (description: string) => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).meta({ description });
const count = (description: string) => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).meta({ description });
const metadata = z
  .record(z.string(), z.string())
  .meta({ description: "The record's metadata, reserved keys left out" });

export const TermEnd = z
  .discriminatedUnion("kind", [
    z.object({ kind: z.literal("released"), at: wall("When it was released (server wall clock, ms)") }),
    z.object({
      kind: z.literal("taken-over"),
      at: wall("When the next term began (its acquiredAt)"),
      by: z.string().meta({ description: "The next term's holder" }),
    }),
    z.object({
      kind: z.literal("expired"),
      at: wall("renewedAt + leaseMs of its last renewal: when it ran out"),
    }),
    z.object({
      kind: z.literal("unseen"),
      next: count("The next term this server saw: the ones between began and ended while it was not looking"),
    }),
  ])
  .meta({
    id: "TermEnd",
    description:
      "What ended a term: released (same term, no holder), taken-over (the next term began under another holder without a release), expired (nothing renewed it: no newer record, and the server's rule says it is free, or the same holder began the next term), unseen (terms went by unobserved)",
  });

export const HistoryTerm = z
  .object({
    term: count("The fencing token of this term"),
    holder: z.string().nullable().meta({ description: "null: first seen already released, holder unknown" }),
    acquiredAt: wall("When the term began (its writer's wall clock, ms)"),
    renewedAt: wall("The last renewal this server saw (the release, once released)"),
    leaseMs: count("The lease length of the last renewal seen"),
    metadata,
    seenAt: wall("When this server first saw the term (its own wall clock, ms)"),
    // null: the term is still running as far as this server knows (no .meta(): it would copy the component).
    end: TermEnd.nullable(),
  })
  .meta({ id: "HistoryTerm", description: "One term of a lease as this server saw it" });

export const LeaseHistory = z
  .object({
    name: recordName,
    now: wall("This server's wall clock when it answered (ms)"),
    since: wall("When this server's change log began (the server started): nothing older is known"),
    firstSeenAt: wall("When this server first saw the lease").nullable(),
    limit: count("Terms kept per lease (0: history is off on this server)"),
    dropped: count("Older terms of this lease dropped to stay within `limit`"),
    terms: z.array(HistoryTerm).meta({ description: "Newest first" }),
  })
  .meta({
    id: "LeaseHistory",
    description:
      "The terms this server has seen of one lease, in its memory only: a restart (or another instance) starts with none. It costs the store nothing",
  });

export const LeaseSnapshot = z
  .object({
    prefix: z.string(),
    now: wall("This server's wall clock (ms): what `free` was judged against"),
    maxSkewMs: count("The server's skew bound: a lease is free once renewedAt + leaseMs + maxSkewMs has passed"),
    limit: count("The most leases a stream carries"),
    truncated: z.boolean().meta({ description: "More leases match than `limit`: only the first, in name order" }),
    leases: z.array(WatchEvent),
    unreadable: z.array(UnreadableLease).meta({
      description:
        'The records under the prefix this server cannot read or judge, each with its name and why (a later "lease" event for the name replaces it)',
    }),
  })
  .meta({
    id: "LeaseSnapshot",
    description: 'The data of a "snapshot" event: every lease under the prefix, and those the server cannot read',
  });

export const LeaseRemoved = z.object({ name: recordName }).meta({ id: "LeaseRemoved" });

export const StreamProblem = z
  .object({ detail: z.string() })
  .meta({ id: "StreamProblem", description: "The server cannot read the store now; it keeps trying" });

const memberId = z.string().meta({ description: "A member id" });
const bucket = z
  .number()
  .int()
  .min(0)
  .max(MAX_BUCKETS - 1);

export const GroupStatus = z
  .object({
    group: z.string(),
    config: z.object({
      buckets: count("The bucket count N"),
      epoch: count("+1 each time the count changes"),
      previous: count("The count before the last change"),
    }),
    members: z.array(
      z.object({
        id: memberId,
        session: count("The session term"),
        state: z.enum(["live", "expired", "left", "fenced"]),
        held: count("Buckets it holds under its current session and the current count"),
        target: count("Buckets the balanced assignment gives it"),
        wants: z.array(bucket).meta({ description: "Buckets it asks their owners to hand over" }),
        fencedBy: memberId.nullable(),
        // No expiresAt: it moves with every heartbeat, and the stream sends the status only when it changes.
      }),
    ),
    buckets: z.array(
      z.object({
        bucket,
        owner: memberId.nullable(),
        term: count("The bucket's fencing term"),
        state: z.enum(["held", "free", "owner-expired", "session-over", "old-count"]),
        target: memberId.nullable().meta({ description: "Where the balanced assignment puts it" }),
      }),
    ),
    unowned: count("Buckets below the count nobody holds"),
    balanced: z.boolean(),
  })
  .meta({ id: "GroupStatus", description: "A sharded group as `leasehold status --group` reads it" });

export const GroupWatchEvent = z
  .object({
    group: z.string(),
    now: wall("This server's wall clock (ms): what liveness was judged against"),
    // null: the group has no config record (yet). No .meta(): it would copy the component.
    status: GroupStatus.nullable(),
  })
  .meta({ id: "GroupWatchEvent", description: 'The data of a "group" event' });

export type LeaseHistoryWire = z.infer<typeof LeaseHistory>;
export type HistoryTermWire = z.infer<typeof HistoryTerm>;
export type LeaseSnapshotWire = z.infer<typeof LeaseSnapshot>;
export type GroupWatchEventWire = z.infer<typeof GroupWatchEvent>;
export type GroupStatusWire = z.infer<typeof GroupStatus>;
