// `npm run build` runs this after tsc: the archive's migrations (src/archive/sql/*.sql)
// are read at run time beside the compiled module, so dist/ needs them too.
import { cpSync } from "node:fs";

cpSync("src/archive/sql", "dist/archive/sql", { recursive: true });
