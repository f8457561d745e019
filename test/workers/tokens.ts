/** Scoped bearer tokens the Worker under test accepts (bound as LEASEHOLD_TOKENS in vitest.config.ts). */
export const TEST_TOKENS = [
  { name: "writer", token: "writer-token-0123456789", prefixes: [""], verbs: ["read", "write", "cas"] },
  { name: "reader", token: "reader-token-0123456789", prefixes: ["public/"], verbs: ["read"] },
];

export const WRITER = TEST_TOKENS[0]!.token;
export const READER = TEST_TOKENS[1]!.token;
/** The instance of the requests these tests make by hand (a client picks its own). */
export const INSTANCE = "workers-test-instance-0001";
