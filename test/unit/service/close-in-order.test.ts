import { describe, expect, it } from "vitest";
import { closeInOrder } from "../../../src/service/close-in-order.js";

describe("closeInOrder", () => {
  it("when a step fails, then every later step still runs, in order, and the first failure is thrown at the end", async () => {
    const ran: string[] = [];
    const step = (name: string, fails = false) => async () => {
      ran.push(name);
      if (fails) throw new Error(`${name} failed`);
    };
    await expect(closeInOrder([step("ingress"), step("workers", true), undefined, step("admin", true), step("connections")])).rejects.toThrow("workers failed");
    expect(ran).toEqual(["ingress", "workers", "admin", "connections"]);
  });

  it("when a step waits, then the next one starts only after it settled", async () => {
    const ran: string[] = [];
    let release!: () => void;
    const slow = new Promise<void>((ok) => (release = ok));
    const closing = closeInOrder([async () => (await slow, ran.push("slow")), async () => void ran.push("next")]);
    await Promise.resolve();
    expect(ran).toEqual([]);
    release();
    await closing;
    expect(ran).toEqual(["slow", "next"]);
  });
});
