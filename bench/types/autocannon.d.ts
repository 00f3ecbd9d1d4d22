// autocannon 9 ships no types: the little of its API the bench uses.
declare module "autocannon" {
  import type { EventEmitter } from "node:events";

  interface RequestParams {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  }

  interface Options {
    url: string;
    method?: string;
    connections?: number;
    duration?: number;
    overallRate?: number;
    headers?: Record<string, string>;
    requests?: Array<RequestParams & { setupRequest?: (request: RequestParams) => RequestParams }>;
  }

  interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
  }

  type Instance = EventEmitter & PromiseLike<Result>;

  function autocannon(options: Options): Instance;
  export default autocannon;
}
