import { describe, expect, it } from "vitest";
import { InvalidEventError } from "../../../src/events/invalid-event-error.js";
import { parseCloudEvents, type HttpMessage } from "../../../src/events/parse-cloud-events.js";
import { userEvent } from "../../helpers/fixtures.js";

const message = (headers: HttpMessage["headers"], body: string | object): HttpMessage => ({
  headers,
  body: Buffer.from(typeof body === "string" ? body : JSON.stringify(body)),
});

function refusal(run: () => unknown): { status: number; detail: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidEventError) return { status: error.status, detail: error.detail };
    throw error;
  }
  throw new Error("expected the message to be refused");
}

describe("parseCloudEvents", () => {
  it("when the tenant posts application/json with a charset in any case, then the structured event is read as sent", () => {
    const event = userEvent();
    expect(parseCloudEvents(message({ "content-type": "Application/JSON;charset=UTF-8" }, event))).toEqual([event]);
    expect(parseCloudEvents(message({ "content-type": "application/cloudevents+json; charset=utf-8" }, event))).toEqual([event]);
  });

  it("when a batch is posted, then every event is read, and one bad element names its index", () => {
    const events = [userEvent(), userEvent()];
    expect(parseCloudEvents(message({ "content-type": "application/cloudevents-batch+json" }, events))).toEqual(events);
    const bad = [userEvent(), { ...userEvent(), type: "" }];
    expect(refusal(() => parseCloudEvents(message({ "content-type": "application/cloudevents-batch+json" }, bad)))).toEqual({ status: 400, detail: "events[1].type must be a non-empty string" });
    expect(refusal(() => parseCloudEvents(message({ "content-type": "application/cloudevents-batch+json" }, [])))).toEqual({ status: 400, detail: "the batch is empty: send at least one CloudEvent" });
    expect(refusal(() => parseCloudEvents(message({ "content-type": "application/cloudevents-batch+json" }, userEvent()))).detail).toMatch(/must be a JSON array/);
  });

  it("when a binary-mode event arrives, then its ce-* headers are decoded and the JSON body is its data", () => {
    const events = parseCloudEvents(
      message(
        { "content-type": "application/json", "ce-specversion": "1.0", "ce-id": "evt_1", "ce-source": "urn%3Aauth0%3A", "ce-type": "user.created", "ce-a0stream": "est_x" },
        { object: { user_id: "auth0|1" } },
      ),
    );
    expect(events).toEqual([{ specversion: "1.0", id: "evt_1", source: "urn:auth0:", type: "user.created", a0stream: "est_x", datacontenttype: "application/json", data: { object: { user_id: "auth0|1" } } }]);
  });

  it("when the content type is another or missing, then it is 415 naming the accepted ones", () => {
    const refused = refusal(() => parseCloudEvents(message({ "content-type": "text/plain" }, "hi")));
    expect(refused.status).toBe(415);
    expect(refused.detail).toBe('content type "text/plain": send application/json, application/cloudevents+json, application/cloudevents-batch+json, or a binary-mode event with ce-* headers');
    expect(refusal(() => parseCloudEvents(message({}, "{}"))).detail).toMatch(/^content type missing: /);
  });

  it("when the body is empty or not JSON, then the detail says so", () => {
    expect(refusal(() => parseCloudEvents(message({ "content-type": "application/json" }, "")))).toEqual({ status: 400, detail: "the body is empty: send a CloudEvent as JSON" });
    expect(refusal(() => parseCloudEvents(message({ "content-type": "application/json" }, "{nope"))).detail).toMatch(/^the body is not valid JSON: /);
  });
});
