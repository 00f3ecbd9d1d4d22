import { loadLua } from "../redis/load-lua.js";

/** The ledger's ops and the functions they share (ledger-core.lua: keys, arguments, the record's layout). */
export const ledgerCore = loadLua(new URL("./ledger-core.lua", import.meta.url));

/** One op or a batch of them, each run by `run` (the ledger's ops, or the admission's as well). */
export const ledgerDispatch = loadLua(new URL("./ledger-dispatch.lua", import.meta.url));

/** The ledger's one script (ledger.lua). */
export const ledgerScript = loadLua(new URL("./ledger.lua", import.meta.url));
