import type { Response } from "express";
import { STATUS_CODES } from "node:http";

/** An RFC 9457 problem document; `detail` says what to change. */
export interface Problem {
  type: "about:blank";
  title: string;
  status: number;
  detail: string;
}

export function problemDocument(status: number, detail: string): Problem {
  return { type: "about:blank", title: STATUS_CODES[status] ?? "Error", status, detail };
}

/** Answers with a problem document (`application/problem+json`). */
export function sendProblem(res: Response, status: number, detail: string, headers: Record<string, string> = {}): void {
  res.status(status).set(headers).type("application/problem+json").send(JSON.stringify(problemDocument(status, detail)));
}
