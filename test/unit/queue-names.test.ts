import { describe, expect, it } from "vitest";
import { deliveryQueueName, reconcileQueueName, routeOfQueue } from "../../src/queue/queue-names.js";

describe("queue names", () => {
  it("when a route's queue name is written, then reading it back gives the route", () => {
    expect(routeOfQueue(deliveryQueueName("crm-2"))).toBe("crm-2");
  });

  it("when the queue is not a route's, then it has no route", () => {
    expect(routeOfQueue(reconcileQueueName)).toBeUndefined();
  });
});
