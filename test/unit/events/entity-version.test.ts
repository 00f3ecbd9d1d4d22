import { describe, expect, it } from "vitest";
import { entityVersionOf } from "../../../src/events/entity-version.js";
import { userEvent } from "../../helpers/fixtures.js";

const at = (iso: string) => Date.parse(iso);

describe("entityVersionOf", () => {
  it("when a user event carries updated_at, then the entity is the user_id and the age is updated_at, not the event's time", () => {
    const event = userEvent({ time: "2025-02-02T18:00:00.000Z", data: { object: { user_id: "auth0|abc", updated_at: "2025-02-02T17:56:01.566Z" } } });
    expect(entityVersionOf(event)).toEqual({ entity: "user:auth0|abc", age: at("2025-02-02T17:56:01.566Z"), change: "changed", eventId: event.id });
  });

  it("when the object has no updated_at, then the age is the event's time", () => {
    const event = userEvent({ type: "user.deleted", time: "2025-02-02T18:00:00.000Z", data: { object: { user_id: "auth0|abc" } } });
    expect(entityVersionOf(event)).toEqual({ entity: "user:auth0|abc", age: at("2025-02-02T18:00:00.000Z"), change: "deleted", eventId: event.id });
  });

  it.each([
    ["organization.updated", "organization:org_1", "changed"],
    ["organization.created", "organization:org_1", "created"],
    ["group.deleted", "group:org_1", "deleted"],
    ["connection.updated", "connection:org_1", "changed"],
  ] as const)("when a %s event carries data.object.id, then the entity is %s", (type, entity, change) => {
    const event = userEvent({ type, data: { object: { id: "org_1", user_id: "ignored", updated_at: "2025-02-02T17:56:01.566Z" } } });
    expect(entityVersionOf(event)).toEqual({ entity, age: at("2025-02-02T17:56:01.566Z"), change, eventId: event.id });
  });

  it("when an organization or group event has no data.object.id, or a user event no user_id, then it is about no entity", () => {
    expect(entityVersionOf(userEvent({ type: "organization.updated", data: { object: { user_id: "auth0|abc" } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "user.updated", data: { object: { id: "auth0|abc" } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "user.updated", data: { object: { user_id: "" } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "user.updated", data: { object: { user_id: 42 } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "user.updated", data: "not an object" }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "user.updated", data: undefined }))).toBeUndefined();
  });

  it("when the event is about a relationship (organization.member.deleted), then it is about no entity, even with an id: it must not count as the organization's delete", () => {
    const member = { organization: { id: "org_1" }, user: { user_id: "auth0|abc" } };
    expect(entityVersionOf(userEvent({ type: "organization.member.deleted", data: { object: member } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "organization.member.deleted", data: { object: { ...member, id: "org_1" } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "group.role.assigned", data: { object: { id: "grp_1" } } }))).toBeUndefined();
  });

  it("when the type is not one of an entity kind, then it is about no entity", () => {
    expect(entityVersionOf(userEvent({ type: "client.updated", data: { object: { id: "c1", user_id: "u1" } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "user", data: { object: { user_id: "u1" } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ type: "constructor.updated", data: { object: { id: "c1" } } }))).toBeUndefined();
  });

  it("when neither updated_at nor time can be read, then it is about no known version and goes unguarded", () => {
    expect(entityVersionOf(userEvent({ time: undefined, data: { object: { user_id: "u1" } } }))).toBeUndefined();
    expect(entityVersionOf(userEvent({ time: "yesterday", data: { object: { user_id: "u1", updated_at: "soon" } } }))).toBeUndefined();
    // An unreadable updated_at falls back to the event's time.
    expect(entityVersionOf(userEvent({ time: "2025-02-02T18:00:00Z", data: { object: { user_id: "u1", updated_at: "soon" } } }))?.age).toBe(at("2025-02-02T18:00:00Z"));
  });
});
