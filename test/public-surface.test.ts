/**
 * The package's public surface, pinned: every entry's exported names, values and types alike, so a
 * change to them is deliberate (edit the list here with it, and the CHANGELOG). The main entry holds
 * what a first program needs, at most 50 names; no name is exported from two entries unless it has
 * a reason written here. docs/design.md §6.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { exportedNames } from "./support/exported-names.js";

const root = join(import.meta.dirname, "..");
const { exports } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  exports: Record<string, string | { default: string }>;
};

/** Each entry's source module, by its import specifier. */
const entries = Object.fromEntries(
  Object.entries(exports).flatMap(([key, target]) =>
    typeof target === "object"
      ? [
          [
            key === "." ? "leasehold" : `leasehold/${key.slice(2)}`,
            target.default.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"),
          ],
        ]
      : [],
  ),
) as Record<string, string>;

const PINNED: Record<string, string[]> = {
  leasehold: [
    "BoundElector",
    "BoundElectorOptions",
    "Clock",
    "DeposedEvent",
    "ElectedEvent",
    "Elector",
    "ElectorEvents",
    "ElectorMetrics",
    "ElectorOptions",
    "ElectorPhase",
    "ElectorState",
    "FieldIssue",
    "LeaderContext",
    "LeaderElector",
    "LeaderEvent",
    "LeadershipLostError",
    "LeaseRecord",
    "LeaseSession",
    "LeaseStore",
    "LeaseStoreError",
    "LeaseValidationError",
    "LeaseholdError",
    "LossReason",
    "MemoryStore",
    "OpenStoreOptions",
    "RunAsLeaderOptions",
    "SessionOptions",
    "StoreContractError",
    "StoreUnavailableError",
    "StoreUrl",
    "Stored",
    "isAmbiguous",
    "isLeadershipLostError",
    "isLeaseStoreError",
    "isLeaseValidationError",
    "isLeaseholdError",
    "isStoreContractError",
    "isStoreUnavailableError",
    "openSession",
    "openStore",
    "parseStoreUrl",
    "runAsLeader",
    "runLeader",
    "systemClock",
  ],
  "leasehold/stores/sqlite": ["SqliteStore", "SqliteStoreOptions"],
  "leasehold/stores/dynamodb": [
    "DEFAULT_TTL_GRACE_SECONDS",
    "DynamoDbStore",
    "DynamoDbStoreOptions",
    "MIN_TTL_GRACE_SECONDS",
  ],
  "leasehold/stores/gcs": ["GcsStore", "GcsStoreOptions"],
  "leasehold/stores/s3": ["S3Store", "S3StoreOptions"],
  "leasehold/stores/azure-blob": ["AzureBlobStore", "AzureBlobStoreOptions", "AzureCredential"],
  "leasehold/stores/http": [
    "HttpStore",
    "HttpStoreOptions",
    "LeaseStillHeldError",
    "LeaseTermRuleError",
    "fromView",
    "isLeaseStillHeldError",
    "isLeaseTermRuleError",
  ],
  "leasehold/stores/durable-object": [
    "DurableObjectStore",
    "DurableObjectStoreOptions",
    "LeaseNamespace",
    "LeaseObject",
  ],
  "leasehold/fencing": [
    "FenceCorruptError",
    "StaleTermError",
    "isFenceCorruptError",
    "isStaleTermError",
    "parseStoredTerm",
    "termSchema",
  ],
  "leasehold/fencing/dynamodb": [
    "DEFAULT_FENCE_ATTRIBUTE",
    "DynamoDbFenceOptions",
    "FENCE_NAME_PLACEHOLDER",
    "FENCE_VALUE_PLACEHOLDER",
    "FenceCorruptError",
    "FenceExpression",
    "StaleTermError",
    "fenceExpression",
    "fencedPutItem",
    "fencedUpdateItem",
    "withSet",
  ],
  "leasehold/fencing/sqlite": [
    "FenceCorruptError",
    "FencedUpdateOptions",
    "FencedUpdateOutcome",
    "SqlValue",
    "StaleTermError",
    "fencedUpdate",
  ],
  "leasehold/fencing/gcs": [
    "DEFAULT_TERM_KEY",
    "FenceCorruptError",
    "FencedWriteOptions",
    "FencedWriteResult",
    "StaleTermError",
    "WRITE_ID_KEY",
    "fencedWrite",
  ],
  "leasehold/api": ["AdmissionOptions", "ApiLimits", "AppOptions", "LatenessProbe", "StreamSupport", "createApp"],
  "leasehold/http": [
    "AcquireBody",
    "AskedHandoff",
    "ClientOptions",
    "HandoffBody",
    "HandoffConfirmation",
    "HandoffResult",
    "HandoffResultView",
    "Heartbeat",
    "HeartbeatBody",
    "HeartbeatRequest",
    "HeartbeatView",
    "HeldBucket",
    "Lease",
    "LeaseList",
    "LeaseListView",
    "LeaseResult",
    "LeaseResultView",
    "LeaseView",
    "LeaseholdApiError",
    "LeaseholdClient",
    "LeaveBody",
    "LeaveRequest",
    "MemberLeft",
    "MemberLeftView",
    "Problem",
    "ProblemKind",
    "ProblemView",
    "RecordBody",
    "RecordWrite",
    "SseMessage",
    "TermBody",
    "WatchEvent",
    "WatchEventView",
    "isLeaseholdApiError",
    "readSse",
  ],
  "leasehold/store-kit": [
    "CallLimit",
    "CallOptions",
    "CasWriter",
    "CasWriterOptions",
    "LeaseConflictError",
    "LeaseCorruptError",
    "ListOptions",
    "Listed",
    "MAX_HOLDER_LENGTH",
    "MAX_LEASE_MS",
    "MAX_METADATA_BYTES",
    "MAX_NAME_LENGTH",
    "MIN_LEASE_MS",
    "NAME_PATTERN",
    "PREFIX_PATTERN",
    "Revision",
    "TermRule",
    "TermRuleViolation",
    "Unreadable",
    "WriteOutcome",
    "checkTermRules",
    "holderSchema",
    "isLeaseConflictError",
    "isLeaseCorruptError",
    "isUnreadable",
    "leaseMsSchema",
    "metadataSchema",
    "nameSchema",
    "newWriteId",
    "orUnreadable",
    "parseRecord",
    "parseRevision",
    "prefixSchema",
    "prefixUpperBound",
    "recordSchema",
    "settleUnreadable",
    "storedAt",
    "unreadable",
    "validate",
    "validateName",
    "validatePrefix",
    "validateRecord",
    "zodIssues",
  ],
  "leasehold/testkit": [
    "CallCounts",
    "Capability",
    "ElectorContractOptions",
    "FaultyStore",
    "ManualClock",
    "ManualClockOptions",
    "PutFault",
    "SAFETY_CASES",
    "SafetyCase",
    "SafetyContext",
    "ShardedContractOptions",
    "StoreContractOptions",
    "StoreUnderTest",
    "StoreWrapper",
    "TrackedStore",
    "casWrite",
    "check",
    "describeElectorContract",
    "describeShardedContract",
    "describeStoreContract",
    "makeRecord",
    "uniqueName",
  ],
  "leasehold/sharding": [
    "AssignedEvent",
    "AssignedKind",
    "BucketContext",
    "BucketLostError",
    "BucketState",
    "BucketStatus",
    "GroupStatus",
    "MAX_BUCKETS",
    "MemberState",
    "MemberStatus",
    "MigrateGroupOptions",
    "MigrateGroupResult",
    "ReshardOptions",
    "ReshardResult",
    "RevokeReason",
    "RevokedEvent",
    "RunShardedOptions",
    "ShardedElector",
    "ShardedElectorEvents",
    "ShardedElectorMetrics",
    "ShardedElectorOptions",
    "ShardedElectorState",
    "bucketOf",
    "groupStatus",
    "isBucketLostError",
    "migrateGroup",
    "reshard",
    "runSharded",
  ],
  "leasehold/lane": [
    "Lane",
    "LaneKind",
    "LaneRelease",
    "LaneStats",
    "LoadLane",
    "LoadLaneOptions",
    "openLane",
    "processLane",
  ],
};

/** Names exported from more than one entry, each with why. */
const SHARED: Record<string, string> = {
  StaleTermError: "leasehold/fencing's error, also exported by each fence helper that throws it",
  FenceCorruptError: "leasehold/fencing's error, also exported by each fence helper that throws it",
};

it("every entry exports exactly its pinned names", () => {
  const actual = Object.fromEntries(
    Object.entries(entries).map(([entry, file]) => [entry, exportedNames(join(root, file))]),
  );
  expect(actual).toEqual(PINNED);
});

it("the main entry exports at most 50 names", () => {
  expect(exportedNames(join(root, entries.leasehold!)).length).toBeLessThanOrEqual(50);
});

it("no name is exported from two entries without a reason", () => {
  const where = new Map<string, string[]>();
  for (const [entry, file] of Object.entries(entries)) {
    for (const name of exportedNames(join(root, file))) where.set(name, [...(where.get(name) ?? []), entry]);
  }
  const shared = [...where].filter(([, at]) => at.length > 1).map(([name, at]) => `${name}: ${at.join(", ")}`);
  expect(shared.filter((s) => !(s.split(":")[0]! in SHARED))).toEqual([]);
});
