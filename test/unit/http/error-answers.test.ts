import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { BadCursorError as ArchiveCursorError } from "../../../src/archive/archive-queries.js";
import { BadCursorError as DeadLetterCursorError } from "../../../src/admin/page-dead-letters.js";
import { ReplayRefusedError } from "../../../src/archive/replays.js";
import { carriesHttpAnswer } from "../../../src/errors/http-answer.js";
import { sendErrorProblem } from "../../../src/http/problem.js";
import { ConnectStreamError } from "../../../src/streams/connect-stream.js";
import { WindowRefusedError, WindowUnavailableError } from "../../../src/sweep/create-window-runner.js";
import { TenantApiError, TenantNotFoundError, TenantValidationError } from "../../../src/tenant/tenant-api-error.js";

const tenantAnswer = (status: number) => ({ status, operation: "get_event_stream", tenantMessage: "" });

describe("errors carry their HTTP answer", () => {
  it("when each error the admin API relays is raised, then it carries the status the routers used to pick for it", () => {
    const statuses = [
      new ConnectStreamError("bad", "bad_public_url"),
      new ConnectStreamError("none", "no_public_url"),
      new ConnectStreamError("auth", "no_auth"),
      new ConnectStreamError("tenant", "no_tenant"),
      new ConnectStreamError("receiver", "no_receiver"),
      new WindowRefusedError("refused"),
      new WindowUnavailableError("unavailable"),
      new TenantValidationError("take", "give 1 to 100"),
      new TenantNotFoundError("missing", tenantAnswer(404)),
      new TenantApiError("forbidden", tenantAnswer(403)),
      new TenantApiError("down", tenantAnswer(0)),
      new ArchiveCursorError(),
      new DeadLetterCursorError(),
      new ReplayRefusedError("busy", 409),
    ].map((error) => (carriesHttpAnswer(error) ? [error.httpStatus, error.problemType] : "none"));
    expect(statuses).toEqual([
      [400, "about:blank"],
      [400, "about:blank"],
      [409, "about:blank"],
      [409, "about:blank"],
      [409, "about:blank"],
      [400, "about:blank"],
      [409, "about:blank"],
      [400, "about:blank"],
      [404, "about:blank"],
      [502, "about:blank"],
      [502, "about:blank"],
      [400, "about:blank"],
      [400, "about:blank"],
      [409, "about:blank"],
    ]);
  });

  describe("when a handler throws", () => {
    let server: Server;
    let url: string;
    beforeAll(async () => {
      const app = express();
      app.get("/refused", () => {
        throw new WindowUnavailableError("set MGMT_CLIENT_ID for the service");
      });
      app.get("/plain", () => {
        throw new Error("boom");
      });
      app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        if (!sendErrorProblem(res, error)) res.status(503).end();
      });
      server = app.listen(0, "127.0.0.1");
      await new Promise((ok) => server.once("listening", ok));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise((ok) => server.close(ok)));

    it("then an error carrying its answer gets that status and a problem document with its message, and any other error is left to the caller", async () => {
      const refused = await fetch(`${url}/refused`);
      expect(refused.status).toBe(409);
      expect(refused.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await refused.json()).toEqual({ type: "about:blank", title: "Conflict", status: 409, detail: "set MGMT_CLIENT_ID for the service" });
      expect((await fetch(`${url}/plain`)).status).toBe(503);
    });
  });
});
