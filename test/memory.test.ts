import { MemoryStore } from "../src/backends/memory/store.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract } from "../src/testkit/store-contract.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";

const create = async () => ({ store: new MemoryStore() });
describeStoreContract("memory", {
  create,
  conflictCarriesCurrent: true,
  cannotHoldUnreadable: "it keeps in memory only records it validated, and nothing else can write there",
});
describeElectorContract("memory", create);
describeElectorContract("memory", create, { session: false });
describeShardedContract("memory", create);

// A third-party store may lack list (a plain key-value service): the contract still holds every
// safety case for it, and checks that it declares the gap honestly.
describeStoreContract("memory without list (a store that cannot list)", {
  create: async () => ({ store: new StoreWrapper(new MemoryStore(), { without: ["list"] }) }),
  conflictCarriesCurrent: true,
  noList: "a key-value service with no prefix listing",
  cannotHoldUnreadable: "it wraps a memory store, which keeps only records it validated",
});
