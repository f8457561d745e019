/** CDK app entry (cdk.json runs it): one LeaseholdStack configured from the environment (lib/config.ts). */
import { App } from "aws-cdk-lib";
import { propsFromEnv, stackNameFromEnv } from "../lib/config.js";
import { LeaseholdStack } from "../lib/leasehold-stack.js";

const app = new App();
new LeaseholdStack(app, stackNameFromEnv(process.env), propsFromEnv(process.env));
app.synth();
