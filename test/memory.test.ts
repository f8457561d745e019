import { MemoryStore } from "../src/stores/memory.js";
import { describeElectorContract } from "./conformance/elector-contract.js";
import { describeStoreContract } from "./conformance/store-contract.js";

const create = async () => ({ store: new MemoryStore() });
describeStoreContract("memory", { create, conflictCarriesCurrent: true });
describeElectorContract("memory", create);
