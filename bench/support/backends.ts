import { BlobServiceClient } from "@azure/storage-blob";
import { Storage } from "@google-cloud/storage";
import { AzureBlobStore } from "../../src/backends/azure-blob/store.js";
import { DynamoDbStore } from "../../src/backends/dynamodb/store.js";
import { GcsStore } from "../../src/backends/gcs/store.js";
import { HttpStore } from "../../src/backends/http/store.js";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { PostgresStore } from "../../src/backends/postgres/store.js";
import { S3Store } from "../../src/backends/s3/store.js";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import type { LeaseStore } from "../../src/lease.js";
import { serve } from "../../src/runtime/node.js";
import { startAzurite } from "../../test/servers/azurite.server.js";
import { startFakeGcs } from "../../test/servers/fake-gcs.server.js";
import {
  createTestBucket,
  S3_TEST_CREDENTIALS,
  S3_TEST_REGION,
  startVersitygw,
} from "../../test/servers/versitygw.server.js";
import { createLeaseTable, dynamoClient, startDynalite } from "../../test/support/dynamo-server.js";
import { startPostgres } from "../../test/support/postgres-server.js";
import { tempDir } from "./common.js";
import { CountingStore } from "./counting-store.js";

export type BackendName = "memory" | "sqlite" | "http" | "dynamodb" | "gcs" | "s3" | "azure-blob" | "postgres";
export const BACKENDS: BackendName[] = ["memory", "sqlite", "http", "dynamodb", "gcs", "s3", "azure-blob", "postgres"];

export interface Backend {
  name: BackendName;
  /** A store for one candidate (a new client where the backend has clients). */
  store(): LeaseStore;
  /** HTTP only: the API's calls to the SQLite store behind it. */
  behindApi?: CountingStore;
  close(): Promise<void>;
}

export async function openBackend(name: BackendName): Promise<Backend> {
  switch (name) {
    case "memory": {
      const store = new MemoryStore();
      return { name, store: () => store, close: async () => undefined };
    }
    case "sqlite": {
      const dir = tempDir("sqlite");
      const store = new SqliteStore({ path: dir.path("leases.db") });
      return {
        name,
        store: () => store,
        close: async () => {
          await store.close();
          dir.remove();
        },
      };
    }
    case "http": {
      const dir = tempDir("http");
      const sqlite = new SqliteStore({ path: dir.path("api.db") });
      const behindApi = new CountingStore(sqlite, () => "follower");
      const server = await serve({ store: behindApi, host: "127.0.0.1", port: 0, insecureNoAuth: true });
      return {
        name,
        store: () => new HttpStore({ baseUrl: server.url }),
        behindApi,
        close: async () => {
          await server.close();
          await sqlite.close();
          dir.remove();
        },
      };
    }
    case "dynamodb": {
      const server = await startDynalite();
      const client = dynamoClient(server.endpoint);
      const table = await createLeaseTable(client);
      const store = new DynamoDbStore({ client, table });
      return {
        name,
        store: () => store,
        close: async () => {
          client.destroy();
          await server.stop();
        },
      };
    }
    case "gcs": {
      const server = await startFakeGcs();
      const projectId = "leasehold-bench";
      const bucket = `bench-${Date.now().toString(36)}`;
      await new Storage({ apiEndpoint: server.endpoint, projectId }).createBucket(bucket);
      return {
        name,
        store: () => new GcsStore({ bucket, apiEndpoint: server.endpoint, projectId }),
        close: () => server.stop(),
      };
    }
    case "s3": {
      const server = await startVersitygw();
      const bucket = await createTestBucket(server.endpoint, "bench");
      const config = { endpoint: server.endpoint, region: S3_TEST_REGION, forcePathStyle: true };
      const stores: S3Store[] = [];
      return {
        name,
        store: () => {
          const store = new S3Store({ bucket, ...config, credentials: S3_TEST_CREDENTIALS });
          stores.push(store);
          return store;
        },
        close: async () => {
          await Promise.all(stores.map((s) => s.close()));
          await server.stop();
        },
      };
    }
    case "postgres": {
      // A server of its own; each candidate its own store and pool, as a process of its own would.
      const server = await startPostgres();
      const stores: PostgresStore[] = [];
      return {
        name,
        store: () => {
          const store = new PostgresStore({ connectionString: server.url, poolSize: 2 });
          stores.push(store);
          return store;
        },
        close: async () => {
          await Promise.all(stores.map((s) => s.close()));
          await server.stop();
        },
      };
    }
    case "azure-blob": {
      const server = await startAzurite();
      const container = `bench-${Date.now().toString(36)}`;
      await BlobServiceClient.fromConnectionString(server.connectionString).getContainerClient(container).create();
      return {
        name,
        store: () => new AzureBlobStore({ container, connectionString: server.connectionString }),
        close: () => server.stop(),
      };
    }
  }
}
