/**
 * One fenced resource of each kind the fence helpers cover, named by a small JSON-able spec, so a
 * test and the leader processes it starts (test/support/fenced-leader.ts) write and read the same
 * resource: an SQL row (SQLite file, or a PostgreSQL table), a DynamoDB item (dynalite), a GCS object
 * (fake-gcs-server), an S3 object (versitygw), an Azure blob (azurite), and a route of an HTTP
 * service behind the fence.
 * `writerFor` is the leader's fenced write (it loads only the SDK its kind needs), `readResource`
 * what the resource holds at the end (the test makes the table, bucket or container).
 */
export type ResourceSpec =
  | { kind: "sqlite"; path: string }
  | { kind: "postgres"; url: string; table: string }
  | { kind: "dynamodb"; endpoint: string; table: string; id: string }
  | { kind: "gcs"; endpoint: string; bucket: string; name: string }
  | { kind: "s3"; endpoint: string; bucket: string; key: string }
  | { kind: "azure-blob"; connectionString: string; container: string; blob: string }
  | { kind: "http"; url: string; id: string; lease: string };

export type ResourceKind = ResourceSpec["kind"];

const credentials = { accessKeyId: "leasehold-test", secretAccessKey: "leasehold-test" };

/** The fenced write of `body` with `term` to the resource (throws StaleTermError when refused). */
export async function writerFor(spec: ResourceSpec): Promise<(term: number, body: string) => Promise<unknown>> {
  switch (spec.kind) {
    case "sqlite": {
      const { default: Database } = await import("better-sqlite3");
      const { fencedUpdate } = await import("../../src/fencing/sqlite.js");
      const db = new Database(spec.path);
      db.pragma("busy_timeout = 10000");
      return async (term, body) => fencedUpdate(db, { table: "reports", key: { id: "daily" }, set: { body }, term });
    }
    case "postgres": {
      const { default: pg } = await import("pg");
      const { fencedUpdate } = await import("../../src/fencing/postgres.js");
      // One connection, kept idle across the pause: the server does not close it meanwhile.
      const pool = new pg.Pool({ connectionString: spec.url, max: 1 });
      pool.on("error", () => undefined); // an idle connection's error: the next query opens another
      return (term, body) => fencedUpdate(pool, { table: spec.table, key: { id: "daily" }, set: { body }, term });
    }
    case "dynamodb": {
      const { DynamoDBClient } = await import("@aws-sdk/client-dynamodb");
      const { fencedPutItem } = await import("../../src/fencing/dynamodb.js");
      const client = new DynamoDBClient({ endpoint: spec.endpoint, region: "us-east-1", credentials });
      return (term, body) =>
        fencedPutItem(client, { TableName: spec.table, Item: { pk: { S: spec.id }, body: { S: body } } }, { term });
    }
    case "gcs": {
      const { Storage } = await import("@google-cloud/storage");
      const { fencedWrite } = await import("../../src/fencing/gcs.js");
      const file = new Storage({ apiEndpoint: spec.endpoint, projectId: "leasehold-test" })
        .bucket(spec.bucket)
        .file(spec.name);
      return (term, body) => fencedWrite(file, { term, data: body });
    }
    case "s3": {
      const { S3Client } = await import("@aws-sdk/client-s3");
      const { fencedPutObject } = await import("../../src/fencing/s3.js");
      const client = new S3Client({ endpoint: spec.endpoint, region: "us-east-1", forcePathStyle: true, credentials });
      return (term, body) => fencedPutObject(client, { Bucket: spec.bucket, Key: spec.key }, { term, data: body });
    }
    case "azure-blob": {
      const { BlobServiceClient } = await import("@azure/storage-blob");
      const { fencedWrite } = await import("../../src/fencing/azure-blob.js");
      const blob = BlobServiceClient.fromConnectionString(spec.connectionString)
        .getContainerClient(spec.container)
        .getBlockBlobClient(spec.blob);
      return (term, body) => fencedWrite(blob, { term, data: body });
    }
    case "http": {
      const { saveReport } = await import("../../examples/fencing/http.js");
      return (term, body) => saveReport(spec.url, spec.id, body, spec.lease, term);
    }
  }
}

/** What the resource holds: the last fenced write's body and term (`saved`: an HTTP service's record). */
export async function readResource(
  spec: ResourceSpec,
  saved?: Map<string, string[]>,
): Promise<{ body: string; term: number | undefined }> {
  switch (spec.kind) {
    case "sqlite": {
      const { default: Database } = await import("better-sqlite3");
      const db = new Database(spec.path, { readonly: true });
      try {
        const row = db.prepare("SELECT body, term FROM reports WHERE id = 'daily'").get() as {
          body: string;
          term: number;
        };
        return { body: row.body, term: row.term };
      } finally {
        db.close();
      }
    }
    case "postgres": {
      const { default: pg } = await import("pg");
      const client = new pg.Client({ connectionString: spec.url });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT body, term::int AS term FROM "${spec.table}" WHERE id = 'daily'`);
        return { body: rows[0]?.body ?? "", term: rows[0]?.term };
      } finally {
        await client.end();
      }
    }
    case "dynamodb": {
      const { DynamoDBClient, GetItemCommand } = await import("@aws-sdk/client-dynamodb");
      const client = new DynamoDBClient({ endpoint: spec.endpoint, region: "us-east-1", credentials });
      const { Item } = await client.send(
        new GetItemCommand({ TableName: spec.table, Key: { pk: { S: spec.id } }, ConsistentRead: true }),
      );
      client.destroy();
      return { body: Item?.body?.S ?? "", term: Number(Item?.fenceTerm?.N) };
    }
    case "gcs": {
      const { Storage } = await import("@google-cloud/storage");
      const file = new Storage({ apiEndpoint: spec.endpoint, projectId: "leasehold-test" })
        .bucket(spec.bucket)
        .file(spec.name);
      const [metadata] = await file.getMetadata();
      const [body] = await file.download();
      return { body: body.toString(), term: Number(metadata.metadata?.["leasehold-term"]) };
    }
    case "s3": {
      const { GetObjectCommand, S3Client } = await import("@aws-sdk/client-s3");
      const client = new S3Client({ endpoint: spec.endpoint, region: "us-east-1", forcePathStyle: true, credentials });
      const got = await client.send(new GetObjectCommand({ Bucket: spec.bucket, Key: spec.key }));
      const body = (await got.Body?.transformToString()) ?? "";
      client.destroy();
      return { body, term: Number(got.Metadata?.["leasehold-term"]) };
    }
    case "azure-blob": {
      const { BlobServiceClient } = await import("@azure/storage-blob");
      const blob = BlobServiceClient.fromConnectionString(spec.connectionString)
        .getContainerClient(spec.container)
        .getBlockBlobClient(spec.blob);
      const body = (await blob.downloadToBuffer()).toString();
      const { metadata } = await blob.getProperties();
      return { body, term: Number(metadata?.leasehold_term) };
    }
    case "http": {
      const last = saved?.get(spec.id)?.at(-1) ?? "";
      return { body: last, term: undefined };
    }
  }
}
