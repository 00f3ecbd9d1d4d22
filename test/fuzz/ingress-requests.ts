import { randomUUID } from "node:crypto";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import fc from "fast-check";
import { tenantEventTypes } from "../../src/events/event-types.js";
import { isWellFormed } from "../../src/events/is-well-formed.js";
import { tenantId } from "../helpers/fixtures.js";

/**
 * Generators of requests to the public ingress for the fuzz test: each case says what a
 * correct receiver must answer, where that is known. Bodies stay around `limit`
 * (WEBHOOK_MAX_BODY_BYTES) so the size boundary is crossed often.
 */
export interface IngressCase {
  label: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Send with Transfer-Encoding: chunked instead of Content-Length. */
  chunked: boolean;
  authOk: boolean;
  /** The path does not percent-decode: refused (400) before the credentials are looked at. */
  badPath: boolean;
  /** The one right answer when the credentials are right, where it is known. */
  expected?: number;
  /** Ids of the valid events in the request: stored once it is answered 202. */
  ids: string[];
}

export interface Credentials {
  username: string;
  password: string;
}

const printable = (max: number) => fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: max });
/** Any text, lone surrogates and grapheme clusters included. */
const anyText = (min: number, max: number) =>
  fc.oneof(fc.string({ minLength: min, maxLength: max }), fc.string({ unit: "grapheme", minLength: min, maxLength: max }), fc.string({ unit: "binary", minLength: min, maxLength: max }));
/** Without lone surrogates (\p{Cs} matches only unpaired ones under the u flag), so encodeURIComponent takes it. */
const wellFormed = (min: number, max: number) => anyText(min, max).filter((text) => !/\p{Cs}/u.test(text));

type Event = Record<string, unknown>;

/** Valid CloudEvents 1.0: unicode ids and types, arbitrary data and extensions. */
const validEvent = (text: (min: number, max: number) => fc.Arbitrary<string>) =>
  fc
    .record({
      id: text(1, 64),
      source: fc.oneof(fc.constant("urn:auth0:acme.us.auth0.com"), text(1, 40)),
      type: fc.oneof(fc.constantFrom(...tenantEventTypes), text(1, 40)),
      data: fc.jsonValue({ maxDepth: 4 }),
      extensions: fc.dictionary(fc.stringMatching(/^x[a-z0-9]{1,10}$/), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      time: fc.option(fc.date({ min: new Date("2020-01-01"), max: new Date("2030-01-01"), noInvalidDate: true }).map((date) => date.toISOString())),
    })
    // A unique suffix: fast-check repeats small ids (and shrinks to them), and a repeat is a duplicate, not a new event.
    .map(({ id, time, extensions, ...rest }): Event => ({ ...extensions, ...rest, id: `${id}~${randomUUID()}`, specversion: "1.0", ...(time ? { time } : {}) }));

/** Every id well-formed Unicode: an id with a lone surrogate is refused 400 (README.md#http-surfaces). */
function idsOk(events: Event[]): boolean {
  return events.every((event) => typeof event.id === "string" && isWellFormed(event.id));
}

/** A copy of `event` padded so its JSON is `size` bytes (when it can be). */
function padded(event: Event, size: number): Event {
  const base = Buffer.byteLength(JSON.stringify({ ...event, xpad: "" }));
  return { ...event, xpad: "p".repeat(Math.max(0, size - base)) };
}

const structuredTypes = ["application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8", "application/cloudevents+json", "APPLICATION/CLOUDEVENTS+JSON; charset=utf-8", "application/json; charset=latin1"];
const batchTypes = ["application/cloudevents-batch+json", "Application/CloudEvents-Batch+JSON; charset=utf-8"];
const otherTypes = ["text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "json", "*/*", "application/"];

export function ingressCases(credentials: Credentials, limit: number): fc.Arbitrary<IngressCase> {
  const basic = (user: string, password: string) => Buffer.from(`${user}:${password}`).toString("base64");
  const right = basic(credentials.username, credentials.password);
  const auth = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(`Basic ${right}`, `basic ${right}`, `BASIC ${right}`, `Basic   ${right}  `).map((value) => ({ value, ok: true })) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constant(undefined),
          fc.constant(`Basic ${basic(credentials.username, "wrong-password")}`),
          fc.constant(`Basic ${basic(credentials.username.toUpperCase(), credentials.password)}`),
          fc.constant(`Bearer ${credentials.password}`),
          fc.constant("Basic"),
          fc.constant(`Basic ${right.slice(0, -2)}`),
          printable(40).map((junk) => `Basic ${junk}`),
          printable(40),
        )
        .map((value) => ({ value, ok: false })),
    },
  );
  const path = fc.oneof(
    { weight: 4, arbitrary: fc.constant("/webhooks") },
    { weight: 3, arbitrary: fc.constant(`/webhooks/${tenantId("est")}`) },
    { weight: 2, arbitrary: wellFormed(1, 30).map((segment) => `/webhooks/${encodeURIComponent(segment)}`) },
    { weight: 1, arbitrary: fc.constantFrom("/webhooks/%ZZ", "/webhooks/%", "/webhooks/a%2Fb", "/webhooks/%E0%A4%A", "/webhooks/", "/webhooks?x=%ZZ") },
  );
  const sizeNear = fc.integer({ min: limit - 4, max: limit + 4 });

  // Each body kind: headers, body, what is known about the right answer.
  type Body = Pick<IngressCase, "label" | "headers" | "body" | "expected" | "ids">;
  const bySize = (body: Buffer, fits: number) => (body.length <= limit ? fits : 413);

  const structured: fc.Arbitrary<Body> = fc
    .tuple(validEvent(anyText), fc.constantFrom(...structuredTypes), fc.option(sizeNear, { freq: 3 }), fc.constantFrom("Content-Type", "content-type", "CONTENT-TYPE"))
    .map(([event, type, size, name]) => {
      const sent = size === null ? event : padded(event, size);
      const body = Buffer.from(JSON.stringify(sent));
      const expected = bySize(body, idsOk([sent]) ? 202 : 400);
      return { label: "structured", headers: { [name]: type }, body, expected, ids: expected === 202 ? [String(sent.id)] : [] };
    });
  const batch: fc.Arbitrary<Body> = fc.tuple(fc.array(validEvent(anyText), { minLength: 1, maxLength: 3 }), fc.constantFrom(...batchTypes)).map(([events, type]) => {
    const body = Buffer.from(JSON.stringify(events));
    // One id with a lone surrogate refuses the whole batch (all valid or none stored).
    const expected = bySize(body, idsOk(events) ? 202 : 400);
    return { label: "batch", headers: { "content-type": type }, body, expected, ids: expected === 202 ? events.map((event) => String(event.id)) : [] };
  });
  const binary: fc.Arbitrary<Body> = fc.tuple(validEvent(wellFormed), fc.boolean(), fc.constantFrom("CE-", "ce-", "Ce-")).map(([event, withBody, prefix]) => {
    const headers: Record<string, string> = {};
    for (const name of ["specversion", "id", "source", "type"]) headers[`${prefix}${name}`] = encodeURIComponent(String(event[name]));
    const body = withBody ? Buffer.from(JSON.stringify(event.data)) : Buffer.alloc(0);
    if (withBody) headers["content-type"] = "application/json";
    return { label: "binary", headers, body, expected: bySize(body, 202), ids: [String(event.id)] };
  });
  const compressed: fc.Arbitrary<Body> = fc.tuple(validEvent(anyText), fc.constantFrom("gzip", "deflate", "br", "GZIP")).map(([event, encoding]) => {
    const plain = Buffer.from(JSON.stringify(event));
    const zip = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync }[encoding.toLowerCase() as "gzip" | "deflate" | "br"];
    const expected = bySize(plain, idsOk([event]) ? 202 : 400);
    return { label: `compressed ${encoding}`, headers: { "content-type": "application/json", "content-encoding": encoding }, body: zip(plain), expected, ids: expected === 202 ? [String(event.id)] : [] };
  });
  const brokenJson: fc.Arbitrary<Body> = fc.tuple(validEvent(anyText), fc.double({ min: 0, max: 0.999, noNaN: true }), fc.constantFrom(...structuredTypes)).map(([event, cut, type]) => {
    const text = JSON.stringify(event);
    // Any strict prefix of an object's JSON is not JSON.
    const body = Buffer.from(text.slice(0, Math.floor(text.length * cut)));
    return { label: "broken JSON", headers: { "content-type": type }, body, expected: bySize(body, 400), ids: [] };
  });
  const wrongTypes: fc.Arbitrary<Body> = fc
    .tuple(
      validEvent(anyText),
      fc.constantFrom("id", "source", "type", "specversion", "time"),
      fc.oneof(fc.integer(), fc.constant(null), fc.constant(""), fc.array(fc.string(), { maxLength: 2 }), fc.object({ maxDepth: 1 }), fc.constant("0.3"), fc.constant("x".repeat(300)), fc.constant("yesterday")),
    )
    .filter(([, field, value]) => !(field === "source" && typeof value === "string" && value !== "") && !(field === "id" && value === "0.3") && !(field === "type" && typeof value === "string" && value !== "") && !(field === "id" && value === "yesterday"))
    .map(([event, field, value]) => {
      const body = Buffer.from(JSON.stringify({ ...event, [field]: value }));
      return { label: `wrong ${field}`, headers: { "content-type": "application/json" }, body, expected: bySize(body, 400), ids: [] };
    });
  const notAnEvent: fc.Arbitrary<Body> = fc
    .oneof(fc.jsonValue({ maxDepth: 3 }).filter((value) => typeof value !== "object" || value === null || Array.isArray(value)), fc.integer({ min: 1, max: 2000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)).map((text) => JSON.parse(text) as unknown))
    .chain((value) => fc.constantFrom(...structuredTypes, ...batchTypes).map((type) => ({ value, type })))
    .map(({ value, type }) => {
      const body = Buffer.from(JSON.stringify(value));
      return { label: "not an event", headers: { "content-type": type }, body, expected: bySize(body, 400), ids: [] };
    });
  const otherContentType: fc.Arbitrary<Body> = fc.tuple(validEvent(anyText), fc.option(fc.constantFrom(...otherTypes))).map(([event, type]) => {
    const body = Buffer.from(JSON.stringify(event));
    return { label: `content type ${type}`, headers: type === null ? ({} as Record<string, string>) : { "content-type": type }, body, expected: bySize(body, 415), ids: [] };
  });
  const junkEncoding: fc.Arbitrary<Body> = fc.tuple(validEvent(anyText), fc.constantFrom("gzip", "deflate", "br", "compress", "x-unknown")).map(([event, encoding]) => {
    const body = Buffer.from(JSON.stringify(event)); // says compressed, is not
    const unsupported = encoding === "compress" || encoding === "x-unknown";
    return { label: `junk ${encoding} body`, headers: { "content-type": "application/json", "content-encoding": encoding }, body, expected: unsupported ? 415 : 400, ids: [] };
  });
  const huge: fc.Arbitrary<Body> = fc.tuple(fc.integer({ min: limit + 1, max: limit * 3 }), fc.constantFrom(...structuredTypes, ...otherTypes)).map(([size, type]) => ({
    label: "huge",
    headers: { "content-type": type },
    body: Buffer.from(JSON.stringify({ id: "x", junk: "h".repeat(size) })),
    expected: 413,
    ids: [],
  }));
  // Valid events whose data nests deeper than JSON.stringify can write: stored and delivered all the same.
  const deep: fc.Arbitrary<Body> = fc
    .tuple(validEvent(wellFormed), fc.integer({ min: 1000, max: 6000 }), fc.constantFrom("[", '{"a":'), fc.constantFrom(...structuredTypes))
    .map(([event, depth, open, type]) => {
      const close = open === "[" ? "]" : "}";
      const { data: _data, ...envelope } = event;
      const text = `${JSON.stringify(envelope).slice(0, -1)},"data":${open.repeat(depth)}1${close.repeat(depth)}}`;
      const body = Buffer.from(text);
      const expected = bySize(body, 202);
      return { label: `deep ${depth}`, headers: { "content-type": type }, body, expected, ids: expected === 202 ? [String(event.id)] : [] };
    });
  // Binary mode with any bytes as data (most are not UTF-8: delivered as data_base64).
  const binaryBytes: fc.Arbitrary<Body> = fc
    .tuple(validEvent(wellFormed), fc.uint8Array({ minLength: 1, maxLength: 512 }), fc.constantFrom("application/octet-stream", "image/png", "text/plain"))
    .map(([event, bytes, type]) => {
      const headers: Record<string, string> = { "content-type": type };
      for (const name of ["specversion", "id", "source", "type"]) headers[`ce-${name}`] = encodeURIComponent(String(event[name]));
      return { label: `binary bytes ${type}`, headers, body: Buffer.from(bytes), expected: 202, ids: [String(event.id)] };
    });
  const junk: fc.Arbitrary<Body> = fc
    .tuple(
      fc.uint8Array({ maxLength: limit + 8 }),
      // Not content-length or transfer-encoding: those would break the framing, which Node's parser answers itself.
      fc.dictionary(fc.oneof(fc.stringMatching(/^(ce-|CE-)[a-z]{1,12}$/), fc.constant("content-type")), printable(30), { maxKeys: 4 }),
    )
    .map(([bytes, headers]) => ({ label: "junk", headers, body: Buffer.from(bytes), ids: [] }));

  const body = fc.oneof(
    { weight: 5, arbitrary: structured },
    { weight: 2, arbitrary: batch },
    { weight: 2, arbitrary: binary },
    { weight: 1, arbitrary: compressed },
    { weight: 2, arbitrary: brokenJson },
    { weight: 2, arbitrary: wrongTypes },
    { weight: 1, arbitrary: notAnEvent },
    { weight: 1, arbitrary: otherContentType },
    { weight: 1, arbitrary: junkEncoding },
    { weight: 1, arbitrary: huge },
    { weight: 2, arbitrary: junk },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: binaryBytes },
  );

  return fc.record({ auth, path, body, chunked: fc.boolean() }).map(({ auth, path, body, chunked }) => {
    const badPath = /%(?![0-9A-Fa-f]{2})/.test(path.split("?")[0]!);
    return {
      label: body.label,
      path,
      headers: { ...body.headers, ...(auth.value === undefined ? {} : { Authorization: auth.value }) },
      body: body.body,
      chunked,
      authOk: auth.ok,
      badPath,
      expected: badPath ? 400 : body.expected,
      ids: body.ids,
    };
  });
}
