/**
 * GCS store overhead against fake-gcs-server on loopback (its own instance, started here):
 * a raw SDK conditional upload vs `GcsStore.put` vs an elector-style renewal (next record from the
 * held one, fresh writeId, CAS on the held generation), plus a read and a lost CAS for scale.
 * fake-gcs-server does not enforce GCS's one write per second per object, so writes chain back to
 * back; on real GCS the network round trip dominates all of these.
 */
import { Storage } from "@google-cloud/storage";
import { GcsStore } from "../src/backends/gcs/store.js";
import { newWriteId, type Stored } from "../src/lease.js";
import { startFakeGcs } from "../test/servers/fake-gcs.server.js";
import { benchRecord } from "./support/common.js";
import { median, quantile, type Table, timeCalls } from "./table.js";

const N = 400;
const projectId = "leasehold-bench";

export async function run(): Promise<Table[]> {
  const server = await startFakeGcs();
  try {
    const bucketName = `bench-${Date.now().toString(36)}`;
    const storage = new Storage({
      apiEndpoint: server.endpoint,
      projectId,
      retryOptions: { autoRetry: false, maxRetries: 0 },
    });
    await storage.createBucket(bucketName);
    const bucket = storage.bucket(bucketName);
    const store = new GcsStore({ bucket: bucketName, apiEndpoint: server.endpoint, projectId });

    // Raw: the same upload the store sends, without validation, parsing or error mapping.
    let rawGeneration: string | number = 0;
    const raw = await timeCalls(N, async () => {
      const file = bucket.file("raw/lease.json");
      await file.save(JSON.stringify(benchRecord("raw")), {
        resumable: false,
        validation: false,
        preconditionOpts: { ifGenerationMatch: rawGeneration },
        metadata: { contentType: "application/json", cacheControl: "no-store" },
      });
      rawGeneration = file.metadata.generation ?? 0;
    });

    let held: Stored = await store.put(benchRecord("put"), null);
    const put = await timeCalls(N, async () => {
      held = await store.put(benchRecord("put"), held.revision);
    });

    let lease: Stored = await store.put(benchRecord("renew"), null);
    const renew = await timeCalls(N, async () => {
      lease = await store.put({ ...lease.record, renewedAt: Date.now(), writeId: newWriteId() }, lease.revision);
    });

    const read = await timeCalls(N, () => store.get("renew"));

    const stale = held.revision;
    await store.put(benchRecord("put"), held.revision);
    const lost = await timeCalls(N, () =>
      store.put(benchRecord("put"), stale).then(
        () => {
          throw new Error("a stale CAS succeeded");
        },
        () => undefined,
      ),
    );

    const base = median(raw);
    const row = (label: string, samples: number[]) => [
      label,
      median(samples),
      quantile(samples, 0.99),
      median(samples) / base,
    ];
    return [
      {
        title: "GCS store: conditional write latency (fake-gcs-server, loopback)",
        note: `${N} sequential calls each after 20 warm-up calls, ms; ratio = median / raw median. Node ${process.version}.`,
        columns: ["operation", "median ms", "p99 ms", "ratio to raw"],
        rows: [
          row("raw SDK save, ifGenerationMatch", raw),
          row("GcsStore.put (CAS on generation)", put),
          row("elector-style renewal via GcsStore", renew),
          row("GcsStore.get (one GET, body + generation)", read),
          row("GcsStore.put lost (412 + read current)", lost),
        ],
      },
    ];
  } finally {
    await server.stop();
  }
}
