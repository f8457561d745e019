import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { fencedPutItem } from "leasehold/fencing/dynamodb";

// The recipe: one conditional PutItem. It applies only if the item has no term yet or its term is
// <= mine, and it stores my term with the data. No read first: DynamoDB checks and writes atomically.
export async function saveReport(client: DynamoDBClient, table: string, id: string, body: string, term: number) {
  try {
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: id }, body: { S: body }, term: { N: String(term) } },
        ConditionExpression: "attribute_not_exists(#term) OR #term <= :term",
        ExpressionAttributeNames: { "#term": "term" },
        ExpressionAttributeValues: { ":term": { N: String(term) } },
      }),
    );
    return true;
  } catch (error) {
    // Refused: a newer leader has written this item. Stop acting as leader; never retry.
    if ((error as Error).name === "ConditionalCheckFailedException") return false;
    throw error; // anything else (a timeout: outcome unknown) is not a refusal
  }
}

// The same with the helper: it adds the condition and the attribute (`fenceTerm` by default) to
// your own input, and throws StaleTermError (with the item's term) when refused.
export async function saveReportWithHelper(client: DynamoDBClient, table: string, id: string, body: string, term: number) {
  await fencedPutItem(client, { TableName: table, Item: { pk: { S: id }, body: { S: body } } }, { term });
}
