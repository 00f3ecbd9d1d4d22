import type { RequestListener } from "node:http";
import { serve, type ServeOptions, type Serving } from "./serve.js";
import { problemDocument } from "./problem.js";

export interface LateServing extends Serving {
  /** From now on requests go to `handler`; before, each is answered 503 (starting). */
  attach(handler: RequestListener): void;
}

/**
 * Binds the port first and takes the handler once the rest of the service is built: a port
 * in use then stops a start before it has touched Redis or anything a running service or a
 * command sees (README.md#commands: a start that fails changes nothing).
 */
export async function serveLater(port: number, host: string, options: ServeOptions = {}): Promise<LateServing> {
  let handler: RequestListener | undefined;
  const serving = await serve(
    (req, res) => {
      if (handler) return handler(req, res);
      res.writeHead(503, { "content-type": "application/problem+json", "retry-after": "1", connection: "close" });
      res.end(JSON.stringify(problemDocument(503, "the service is starting; retry in a moment")));
    },
    port,
    host,
    options,
  );
  return {
    ...serving,
    attach(next) {
      handler = next;
    },
  };
}
