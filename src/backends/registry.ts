/**
 * Every backend a store URL can name: one line per backend, each its folder's declaration
 * (`<name>/backend.ts`, the shape is ./backend.ts). Adding a backend is its folder and one line
 * here (CONTRIBUTING.md); src/open-store.ts reads this list, and the store URL type is derived from
 * it. Declarations import no SDK and no Node API, so listing them all costs the Worker bundle
 * nothing. Runtime-neutral.
 */
export { azureBlobBackend } from "./azure-blob/backend.js";
export { durableObjectBackend } from "./durable-object/backend.js";
export { dynamoDbBackend } from "./dynamodb/backend.js";
export { gcsBackend } from "./gcs/backend.js";
export { httpBackend } from "./http/backend.js";
export { memoryBackend } from "./memory/backend.js";
export { postgresBackend } from "./postgres/backend.js";
export { s3Backend } from "./s3/backend.js";
export { sqliteBackend } from "./sqlite/backend.js";
