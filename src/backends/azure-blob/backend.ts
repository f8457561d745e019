/**
 * The Azure Blob backend's declaration (../backend.ts): `azblob://ACCOUNT/CONTAINER/PREFIX?endpoint=`
 * with the key from the environment (AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or
 * AZURE_STORAGE_SAS_TOKEN, in that order), the Azure Blob store's options, Node and Lambda. The
 * store is src/backends/azure-blob/store.ts. Runtime-neutral, no SDK.
 */
import type { AnonymousCredential, ContainerClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { z } from "zod";
import type { Backend, StoreModule } from "../backend.js";
import { objectStoreFields } from "../object-store/fields.js";
import * as parts from "../url.js";

/**
 * What `new BlobServiceClient(url, credential)` accepts: a shared key, a TokenCredential (e.g.
 * `DefaultAzureCredential` from @azure/identity), or anonymous access with a SAS in `accountUrl`.
 */
export type AzureCredential =
  | StorageSharedKeyCredential
  | AnonymousCredential
  | {
      getToken(
        scopes: string | string[],
        options?: object,
      ): Promise<{ token: string; expiresOnTimestamp: number } | null>;
    };

export interface AzureBlobStoreOptions {
  /**
   * Container name (then give `connectionString`, or `accountUrl` with `credential`, `accountKey`
   * or `sasToken`), or your own `ContainerClient` (credentials, retries: used as it is).
   */
  container: string | ContainerClient;
  /** An account's connection string (e.g. AZURE_STORAGE_CONNECTION_STRING) for the client this store creates. */
  connectionString?: string;
  /** The account's blob endpoint, e.g. "https://ACCOUNT.blob.core.windows.net" (an emulator's: with the account in the path). */
  accountUrl?: string;
  /** With `accountUrl`: a `StorageSharedKeyCredential`, or a TokenCredential (e.g. DefaultAzureCredential). */
  credential?: AzureCredential;
  /** With `accountUrl` and `accountName`: the account key (the store builds the shared key credential). */
  accountKey?: string;
  /** The storage account `accountKey` belongs to. */
  accountName?: string;
  /** With `accountUrl`: a SAS token (with or without its leading "?"). */
  sasToken?: string;
  /** Blob name prefix for every lease; default "leases/". Blobs are `<prefix><name>.json`. */
  prefix?: string;
  /** Per-request timeout in ms for the client this store creates (a write that times out is ambiguous); default 10000. */
  timeoutMs?: number;
}

/** Azure storage accounts: 3-24 lowercase letters and digits. */
const accountName = z
  .string({ error: "expected a storage account name" })
  .regex(/^[a-z0-9]{3,24}$/, { error: "expected 3-24 characters of a-z 0-9" });
/** Azure container names: 3-63 characters of a-z 0-9 -, starting with a letter or digit, no "--". */
const containerName = z
  .string({ error: "expected an Azure container name" })
  .regex(/^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/, {
    error:
      'expected an Azure container name (3-63 characters of a-z 0-9 -, no "--", starting and ending with a letter or digit)',
  });
const secret = (what: string) => z.string({ error: `expected ${what}` }).min(1, { error: `expected ${what}` });
const OWN_CLIENT_ONLY = [
  "connectionString",
  "accountUrl",
  "credential",
  "accountKey",
  "accountName",
  "sasToken",
  "timeoutMs",
] as const;

export const azureBlobOptionsSchema = z
  .strictObject(
    {
      container: z.union(
        [
          containerName,
          z.custom<ContainerClient>(
            (c) => typeof (c as { getBlockBlobClient?: unknown } | null)?.getBlockBlobClient === "function",
          ),
        ],
        {
          error: (issue) =>
            typeof issue.input === "string"
              ? 'expected an Azure container name (3-63 characters of a-z 0-9 -, no "--", starting and ending with a letter or digit)'
              : "expected a container name or a ContainerClient from @azure/storage-blob",
        },
      ),
      connectionString: secret("a non-empty connection string").optional(),
      accountUrl: z.url({ protocol: /^https?$/, error: "expected an http(s) URL" }).optional(),
      credential: z
        .custom<AzureCredential>((c) => typeof c === "object" && c !== null, {
          error: "expected a StorageSharedKeyCredential or a TokenCredential",
        })
        .optional(),
      accountKey: secret("the account key").optional(),
      accountName: accountName.optional(),
      sasToken: secret("a SAS token").optional(),
      ...objectStoreFields,
    },
    { error: "expected an object with at least a container" },
  )
  .superRefine((o, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if (typeof o.container !== "string") {
      for (const field of OWN_CLIENT_ONLY) {
        if (o[field] !== undefined)
          issue(field, "only applies when container is a name; configure your own client instead");
      }
      return;
    }
    const byString = o.connectionString !== undefined;
    const byUrl = o.accountUrl !== undefined;
    if (byString === byUrl) {
      issue(
        byString ? "accountUrl" : "connectionString",
        byString
          ? "expected either connectionString or accountUrl, not both"
          : "expected connectionString, or accountUrl with credential",
      );
    }
    const keys = (["credential", "accountKey", "sasToken"] as const).filter((k) => o[k] !== undefined);
    if (byUrl && keys.length === 0) {
      issue(
        "credential",
        "expected a StorageSharedKeyCredential or a TokenCredential (e.g. DefaultAzureCredential) with accountUrl, or accountKey, or sasToken",
      );
    }
    if (keys.length > 1) issue(keys[1]!, `expected one of credential, accountKey, sasToken; got ${keys.join(" and ")}`);
    if (byString && keys.length > 0) issue(keys[0]!, "not used with connectionString, which carries the key");
    if ((o.accountKey === undefined) !== (o.accountName === undefined)) {
      issue("accountName", "expected accountName and accountKey together");
    }
  });

/** What an `azblob://` URL says. `endpoint` absent: https://ACCOUNT.blob.core.windows.net. `prefix` absent: "leases/". */
export interface AzureBlobUrl {
  kind: "azure-blob";
  account: string;
  container: string;
  prefix?: string;
  endpoint?: string;
}

export const azureBlobBackend: Backend<AzureBlobUrl> = {
  kind: "azure-blob",
  schemes: ["azblob"],
  forms: [
    "azblob://ACCOUNT/CONTAINER/PREFIX?endpoint=URL (key from AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN)",
  ],
  options: azureBlobOptionsSchema,
  runtimes: {
    node: true,
    lambda: true,
    workers: "the Worker bundles the Durable Object and DynamoDB stores only",
  },
  // In this order of preference; each a secret.
  env: {
    AZURE_STORAGE_CONNECTION_STRING: z.string(),
    AZURE_STORAGE_KEY: z.string(),
    AZURE_STORAGE_SAS_TOKEN: z.string(),
  },
  parse(text) {
    const url = parts.host(text, "azblob", "azblob://ACCOUNT/CONTAINER/PREFIX", "put the key in AZURE_STORAGE_KEY");
    if (url.port !== "") {
      throw parts.invalid("azblob account", "expected a storage account name, not host:port (use ?endpoint=)");
    }
    parts.check(accountName, url.hostname, "azblob account");
    const [, container = "", ...rest] = url.pathname.split("/");
    parts.check(containerName, container, "azblob container");
    const prefix = rest.length === 0 ? "" : parts.prefix(url, "azblob prefix", `/${rest.join("/")}`);
    const params = parts.query(url, "azblob", ["endpoint"]);
    return {
      kind: "azure-blob",
      account: url.hostname,
      container,
      ...parts.defined({
        prefix: prefix === "" ? undefined : prefix,
        endpoint: parts.endpoint(params.get("endpoint")),
      }),
    };
  },
  module: "./backends/azure-blob/store.js",
  open(spec, { env, client, module }) {
    const { AzureBlobStore } = module as StoreModule<"AzureBlobStore", AzureBlobStoreOptions>;
    const base = parts.defined({ prefix: spec.prefix });
    if (client !== undefined) return new AzureBlobStore({ container: client as ContainerClient, ...base });
    return new AzureBlobStore({ container: spec.container, ...base, ...credentialsFrom(spec, env) });
  },
};

/**
 * The client settings of an `azblob://` URL, its key from `env`: AZURE_STORAGE_CONNECTION_STRING
 * (it must name the URL's account and brings its own endpoint), else AZURE_STORAGE_KEY (the
 * account key), else AZURE_STORAGE_SAS_TOKEN.
 */
function credentialsFrom(
  spec: AzureBlobUrl,
  env: Record<string, string | undefined>,
): Pick<AzureBlobStoreOptions, "connectionString" | "accountUrl" | "accountKey" | "accountName" | "sasToken"> {
  const connectionString = env.AZURE_STORAGE_CONNECTION_STRING;
  if (connectionString) {
    if (spec.endpoint !== undefined) {
      throw parts.invalid(
        'query parameter "endpoint"',
        "not used with AZURE_STORAGE_CONNECTION_STRING, which names the endpoint",
      );
    }
    const named = /(?:^|;)\s*AccountName=([^;]*)/i.exec(connectionString)?.[1]?.trim();
    if (named !== spec.account) {
      throw parts.invalid(
        "azblob account",
        `the URL names account "${spec.account}" but AZURE_STORAGE_CONNECTION_STRING is for ${named ? `"${named}"` : "no AccountName"}`,
      );
    }
    return { connectionString };
  }
  const accountUrl = (spec.endpoint ?? `https://${spec.account}.blob.core.windows.net`).replace(/\/+$/, "");
  if (env.AZURE_STORAGE_KEY) return { accountUrl, accountName: spec.account, accountKey: env.AZURE_STORAGE_KEY };
  if (env.AZURE_STORAGE_SAS_TOKEN) return { accountUrl, sasToken: env.AZURE_STORAGE_SAS_TOKEN };
  throw parts.invalid(
    "azblob credentials",
    "expected AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN in the environment (for Entra ID, create AzureBlobStore in code with a TokenCredential)",
  );
}
