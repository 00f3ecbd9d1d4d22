/**
 * A stream id: `est_` and 22 letters or digits (real-world.md, "Identifiers"). Imports
 * nothing, so config.ts can check RECONCILE_SWEEP_STREAMS with it.
 */
export const streamIdPattern = /^est_[A-Za-z0-9]{22}$/;
