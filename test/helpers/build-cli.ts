import { cp, mkdir, mkdtemp } from "node:fs/promises";
import { dirname, join } from "node:path";
import { inject } from "vitest";

/**
 * The run's build of src/ (compiled once by test/helpers/global-setup.ts, as the Dockerfile
 * compiles it with tsconfig.build.json), copied into a directory of this test's own beside
 * it under test-artifacts/, which the test may change or remove. Returns the directory that
 * holds `dist/`.
 */
export async function buildCli(name: string): Promise<string> {
  const shared = inject("builtDir");
  await mkdir(dirname(shared), { recursive: true });
  const dir = await mkdtemp(join(dirname(shared), `${name}-`));
  await cp(join(shared, "dist"), join(dir, "dist"), { recursive: true });
  return dir;
}
