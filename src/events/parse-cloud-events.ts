import { isUtf8 } from "node:buffer";
import type { CloudEvent } from "./cloud-event.js";
import { InvalidEventError } from "./invalid-event-error.js";
import { validateCloudEvent } from "./validate-cloud-event.js";

/** An HTTP message reduced to what the CloudEvents HTTP binding reads: no Express here. */
export interface HttpMessage {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const jsonTypes = new Set(["application/json", "application/cloudevents+json"]);
const batchType = "application/cloudevents-batch+json";

/**
 * Reads the events of one request, in any mode of the CloudEvents HTTP binding:
 * - batch: `application/cloudevents-batch+json`, a JSON array of events (all valid or none stored);
 * - binary: `ce-specversion` header present, attributes in `ce-*` headers, the body is
 *   `data` (`data_base64` when its bytes are not UTF-8);
 * - structured: `application/cloudevents+json`, or `application/json` as the tenant sends it.
 * Media types compare case-insensitively and ignore parameters such as `charset`.
 */
export function parseCloudEvents(message: HttpMessage): CloudEvent[] {
  const contentType = mediaType(header(message.headers, "content-type"));
  if (contentType === batchType) {
    const body = parseJson(message.body);
    if (!Array.isArray(body)) throw new InvalidEventError("a batch (application/cloudevents-batch+json) must be a JSON array of CloudEvents");
    if (body.length === 0) throw new InvalidEventError("the batch is empty: send at least one CloudEvent");
    return body.map((item, index) => validateCloudEvent(item, `events[${index}].`));
  }
  if (header(message.headers, "ce-specversion") !== undefined) return [binaryEvent(message, contentType)];
  if (contentType && jsonTypes.has(contentType)) return [validateCloudEvent(parseJson(message.body))];
  throw new InvalidEventError(
    `content type ${contentType ? `"${contentType}"` : "missing"}: send application/json, application/cloudevents+json, ${batchType}, or a binary-mode event with ce-* headers`,
    415,
  );
}

function binaryEvent(message: HttpMessage, contentType: string | undefined): CloudEvent {
  const attributes: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(message.headers)) {
    if (!name.startsWith("ce-") || value === undefined) continue;
    // CloudEvents HTTP binding §3.1.3.2: header values are percent-encoded.
    attributes[name.slice(3)] = safeDecode(Array.isArray(value) ? value.join(",") : value);
  }
  if (contentType) attributes.datacontenttype = header(message.headers, "content-type");
  // Bytes that are not UTF-8 would turn into U+FFFD as text: kept as they came, in
  // base64 (CloudEvents JSON format §3.1.1 `data_base64`).
  if (message.body.length > 0 && !isUtf8(message.body)) attributes.data_base64 = message.body.toString("base64");
  else if (message.body.length > 0) {
    const json = contentType === undefined || contentType === "application/json" || contentType.endsWith("+json");
    attributes.data = json ? parseJson(message.body) : message.body.toString("utf8");
  }
  return validateCloudEvent(attributes);
}

function parseJson(body: Buffer): unknown {
  if (body.length === 0) throw new InvalidEventError("the body is empty: send a CloudEvent as JSON");
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new InvalidEventError(`the body is not valid JSON: ${(error as Error).message}`);
  }
}

function header(headers: HttpMessage["headers"], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function mediaType(value: string | undefined): string | undefined {
  return value?.split(";")[0]?.trim().toLowerCase() || undefined;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
