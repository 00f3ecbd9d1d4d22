/** What the JSON body parser's refusal (its error's `type`) means to the caller, in our words. */
export function unreadableBody(error: unknown): { status: number; detail: string } | undefined {
  const { status, type } = error as { status?: number; type?: string };
  if (!status || status < 400 || status >= 500) return undefined;
  if (type === "entity.parse.failed") return { status: 400, detail: "the request body is not valid JSON: send a JSON object with Content-Type: application/json" };
  if (type === "entity.too.large") return { status: 413, detail: "the request body is over the admin API's 2 MB limit: send fewer items per request (10,000 event ids fit)" };
  if (type === "encoding.unsupported" || type === "charset.unsupported") return { status: 415, detail: "the request body's encoding is not one the admin API reads: send JSON in UTF-8, uncompressed or gzip" };
  return { status, detail: "the request body could not be read whole: send it again" };
}
