/**
 * Providers' public list prices, in US dollars per single request, for the cost table.
 * List prices as of 2025-06 (the author's knowledge of the public pricing pages; they could not be
 * looked up online for this run): check before relying on them. Free tiers and included usage are
 * ignored; storage, egress and duration charges are not request charges and are left out.
 */
export const PRICES_AS_OF = "2025-06 (not re-checked online)";

const perMillion = (usd: number) => usd / 1_000_000;
const perThousand = (usd: number) => usd / 1_000;

export interface RequestPrices {
  provider: string;
  /** What one store write costs, and why. */
  write: number;
  read: number;
  basis: string;
}

export const PRICES: Record<"dynamodb" | "gcs" | "s3" | "azureBlob" | "durableObjects", RequestPrices> = {
  // On-demand, us-east-1, after the November 2024 cut: one conditional PutItem of a record < 1 KB is
  // one write request unit (a failed condition is charged too); one strongly consistent GetItem of
  // < 4 KB is one read request unit.
  dynamodb: {
    provider: "DynamoDB on-demand, us-east-1",
    write: perMillion(0.625),
    read: perMillion(0.125),
    basis: "$0.625 / million WRU, $0.125 / million RRU (strongly consistent read = 1 RRU)",
  },
  // Standard storage in a region: an object upload is a Class A operation, an object GET a Class B one.
  gcs: {
    provider: "GCS Standard, regional",
    write: perThousand(0.005),
    read: perThousand(0.0004),
    basis: "Class A $0.005 / 1,000 ops (upload), Class B $0.0004 / 1,000 ops (GET)",
  },
  // S3 Standard in us-east-1: PutObject (conditional or not, and a 412 too) is a PUT request, GetObject a GET.
  s3: {
    provider: "S3 Standard, us-east-1",
    write: perThousand(0.005),
    read: perThousand(0.0004),
    basis: "PUT $0.005 / 1,000 requests, GET $0.0004 / 1,000 requests",
  },
  // Block blobs, Hot tier, LRS, East US: Put Blob is a write operation, Get Blob a read operation,
  // billed per 10,000. Hot-tier operation prices have changed over the years; check this one.
  azureBlob: {
    provider: "Azure Blob Hot LRS, East US",
    write: 0.065 / 10_000,
    read: 0.005 / 10_000,
    basis: "write ops $0.065 / 10,000, read ops $0.005 / 10,000",
  },
  // Workers Paid: each API call is one Worker request ($0.30 / million) that makes one Durable Object
  // request ($0.15 / million). The DO's duration (GB-s) is extra and not counted here.
  durableObjects: {
    provider: "Cloudflare Workers + Durable Objects",
    write: perMillion(0.3 + 0.15),
    read: perMillion(0.3 + 0.15),
    basis: "$0.30 / million Worker requests + $0.15 / million DO requests per call; duration not counted",
  },
};

export const SECONDS_PER_MONTH = 30 * 24 * 3600;
