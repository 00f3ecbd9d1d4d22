/**
 * BullMQ's Lua commands as its package ships them, includes resolved (the CommonJS build:
 * its ESM build is not loadable by Node as is). Read by admission-script.ts and finish-script.ts.
 */
declare module "bullmq/dist/cjs/scripts/index.js" {
  interface BullCommand {
    name: string;
    content: string;
    keys: number;
  }
  export const addStandardJob: BullCommand;
  export const addPrioritizedJob: BullCommand;
  export const moveToFinished: BullCommand;
}
