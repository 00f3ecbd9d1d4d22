import type { Response } from "express";
import { STATUS_CODES } from "node:http";
import { carriesHttpAnswer, plainProblem } from "../errors/http-answer.js";

/** An RFC 9457 problem document; `detail` says what to change. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
}

export function problemDocument(status: number, detail: string, type = plainProblem): Problem {
  return { type, title: STATUS_CODES[status] ?? "Error", status, detail };
}

/** Answers with a problem document (`application/problem+json`). */
export function sendProblem(res: Response, status: number, detail: string, headers: Record<string, string> = {}, type = plainProblem): void {
  res.status(status).set(headers).type("application/problem+json").send(JSON.stringify(problemDocument(status, detail, type)));
}

/**
 * The one place an error becomes an answer: an error that carries its status and problem
 * type (http-answer.ts) is answered with them and its message; true when it was. Routers
 * let such errors reach the admin app's error handler, which calls this.
 */
export function sendErrorProblem(res: Response, error: unknown): boolean {
  if (!carriesHttpAnswer(error)) return false;
  sendProblem(res, error.httpStatus, error.message, {}, error.problemType);
  return true;
}
