import type { Response } from "express";
import { STATUS_CODES } from "node:http";

/** Answers with an RFC 9457 problem document; `detail` says what to change. */
export function sendProblem(res: Response, status: number, detail: string, headers: Record<string, string> = {}): void {
  res
    .status(status)
    .set(headers)
    .type("application/problem+json")
    .send(JSON.stringify({ type: "about:blank", title: STATUS_CODES[status] ?? "Error", status, detail }));
}
