import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { CloudEvent } from "../events/cloud-event.js";
import { jsonText } from "../events/json-text.js";

/**
 * The words a tenant's event repeats (the shapes of docs/tenant.md#webhook-delivery), as deflate's preset
 * dictionary: a 1 KB `user.updated` compresses to about a third with it instead of about
 * two thirds without (docs/benchmarks.md). Never change it: payloads written with it are
 * read with it. A new dictionary is a new codec byte.
 */
const dictionaryV1 = Buffer.from(
  '{"id":"evt_","source":"urn:auth0:","specversion":"1.0","type":"user.updated","time":"2026-01-01T00:00:00.000Z","data":{"object":{"user_id":"auth0|","email":"@example.com","email_verified":false,"name":"","nickname":"","given_name":"","family_name":"","picture":"https://s.gravatar.com/avatar/","created_at":"2025-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z","last_login":"","logins_count":0,"identities":[{"connection":"Username-Password-Authentication","provider":"auth0","user_id":"","isSocial":false}],"app_metadata":{},"user_metadata":{},"organization":{"id":"org_","name":""},"group":{"id":""}}},"a0tenant":"","a0stream":"est_","datacontenttype":"application/json"}',
);
const codecV1 = 1;

/**
 * The event as sent (its JSON text), compressed: one codec byte, then raw deflate with the
 * preset dictionary. A 2 KiB window (the dictionary's size and a payload's) and the smallest
 * state that holds it: deflate's default state is 256 KiB, allocated and given back for every
 * payload, several times the compression's own cost in a busy process (docs/benchmarks.md).
 * Any inflate reads it (a window up to 32 KiB).
 */
export function encodePayloadText(eventText: string): Buffer {
  return Buffer.concat([Buffer.of(codecV1), deflateRawSync(eventText, { dictionary: dictionaryV1, windowBits: 11, memLevel: 4 })]);
}

export function encodePayload(event: CloudEvent): Buffer {
  return encodePayloadText(jsonText(event));
}

export function decodePayload(payload: Buffer): CloudEvent {
  if (payload[0] !== codecV1) throw new Error(`archived payload has codec ${payload[0]}, which this version cannot read; upgrade Streamkeeper`);
  return JSON.parse(inflateRawSync(payload.subarray(1), { dictionary: dictionaryV1 }).toString("utf8")) as CloudEvent;
}
