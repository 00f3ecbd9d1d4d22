import { resolve } from "node:path";

/** Two builds to compare (bench/receiver-ab.ts, pipeline-ab.ts): their CLIs, and in which order a round runs them. */
export interface AbBuilds {
  rounds: number;
  /** `a` or `b`'s `cli/main.js` */
  entry(build: "a" | "b"): string;
  /** A then B, B first in every other round, so a drift of the machine moves both alike. */
  order(round: number): ReadonlyArray<"a" | "b">;
}

/** `<dist-a> <dist-b> [rounds]` from the command line (rounds: 3 unless given); exits 2 naming the usage when a build is missing. */
export function abBuilds(tool: string, argv = process.argv.slice(2)): AbBuilds {
  const [distA, distB, rounds = "3"] = argv;
  if (!distA || !distB) {
    process.stderr.write(`error: give two build directories: ${tool} <dist-a> <dist-b> [rounds]\n`);
    process.exit(2);
  }
  return {
    rounds: Number(rounds),
    entry: (build) => resolve(build === "a" ? distA : distB, "cli/main.js"),
    order: (round) => (round % 2 === 1 ? ["a", "b"] : ["b", "a"]),
  };
}
