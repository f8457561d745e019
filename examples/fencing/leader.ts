import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type LeaseStore, runAsLeader } from "leasehold";
import { fencedPutItem, StaleTermError } from "leasehold/fencing/dynamodb";

export async function publishReports(
  store: LeaseStore,
  client: DynamoDBClient,
  renderReport: () => Promise<string>,
  stop: AbortSignal,
) {
  await runAsLeader({ store, name: "reports/daily", signal: stop }, async ({ term, signal }) => {
    try {
      while (!signal.aborted) {
        const body = await renderReport();
        // The term goes with every write; the item refuses it once a newer term has written.
        await fencedPutItem(client, { TableName: "reports", Item: { pk: { S: "daily" }, body: { S: body } } }, { term });
      }
    } catch (error) {
      if (!(error instanceof StaleTermError)) throw error;
      // A newer leader exists: this term's work is over. Do not retry with this term, and do not
      // return yet (returning while still leader means "done": the lease is released and
      // runAsLeader resolves). The elector notices at its next renewal, or when the lease runs
      // out, aborts `signal`, and campaigns again after we return.
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    }
  });
}
