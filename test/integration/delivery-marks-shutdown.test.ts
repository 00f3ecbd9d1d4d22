import { describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";

/** A delivered mark goes with its job's completion (mark-at-completion.ts), a mark sent apart waits for others (deliveryMarkGatherMs): a stop writes both before it ends. */
describe("delivered marks at shutdown", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the service stops while a delivery is in flight, then the delivery's mark is in the ledger once the stop is over", async () => {
    let answer = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const sink = await startSinkServer(async () => (await answered, { status: 204 }));
    cleanup.push(() => sink.close());
    const service = await startTestService({ DOWNSTREAM_URL: sink.url, SHUTDOWN_TIMEOUT_MS: "10000" });
    const event = userEvent();
    expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await sink.untilReceived(1);

    // The stop begins before the 2xx: the mark goes with the job's completion, which the stop
    // waits for (a mark sent apart, gathered, only the stop's flush could send).
    const stopped = service.close();
    answer();
    await stopped;

    const store = await inspectStore(service.config);
    cleanup.push(() => store.close());
    const record = await store.ledger.get(event.id);
    expect(record?.deliveredAt.default).toBeGreaterThan(0);
  });
});
