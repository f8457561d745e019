import { MemoryStore } from "../src/stores/memory.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeStoreContract } from "../src/testkit/store-contract.js";

const create = async () => ({ store: new MemoryStore() });
describeStoreContract("memory", { create, conflictCarriesCurrent: true });
describeElectorContract("memory", create);
