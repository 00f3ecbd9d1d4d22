import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";

describe("dispatch: a downstream whose 2xx body is slow", () => {
  const cleanup = useCleanup("all");

  it("when the status is 2xx but the body takes longer than timeoutMs, then the event counts as delivered and is not sent again", async () => {
    const received: string[] = [];
    // The status at once, the rest of the body only once the test has seen the outcome:
    // slower than any timeoutMs, however loaded the machine.
    let releaseBody = () => {};
    const bodyReleased = new Promise<void>((ok) => (releaseBody = ok));
    const sink = createServer((req, res) => {
      req.resume();
      received.push(String(req.headers["webhook-id"]));
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("ok, ");
      void bodyReleased.then(() => res.end("and the rest, late"));
    });
    sink.listen(0, "127.0.0.1");
    await once(sink, "listening");
    cleanup.push(() => new Promise<void>((ok) => (releaseBody(), sink.close(() => ok()))));
    const dir = await mkdtemp(join(tmpdir(), "sk-slow-"));
    const routesFile = join(dir, "routes.yaml");
    // A timeoutMs the status line meets even on a loaded machine; the body never does.
    await writeFile(routesFile, `routes:\n  - name: slow\n    match: "*"\n    url: http://127.0.0.1:${(sink.address() as AddressInfo).port}/\n    timeoutMs: 5000\n`);
    const service = await startTestService({ ROUTES_FILE: routesFile, ADMIN_TOKEN: "t" });
    cleanup.push(() => service.close());

    const event = userEvent();
    expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    const deadline = Date.now() + 60_000;
    let state = "";
    while (Date.now() < deadline) {
      const res = await fetch(`${service.adminUrl}/admin/events/${event.id}`, { headers: { authorization: "Bearer t" } });
      const body = (await res.json()) as { routes?: Array<{ state: string; attempts: number }> };
      state = body.routes?.[0]?.state ?? "";
      if (state === "delivered" || state === "retrying" || state === "dead_letter") break;
      await new Promise((ok) => setTimeout(ok, 50));
    }
    expect(state).toBe("delivered");
    // Delivered is a completed job: no attempt can follow, so the count is final.
    expect(received).toEqual([event.id]);
    releaseBody();
  });
});
