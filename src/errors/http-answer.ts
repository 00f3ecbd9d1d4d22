/**
 * The HTTP answer an error gets, carried by the error itself (as stripe-node's errors carry
 * their status): the status, and the problem type of its RFC 9457 document (`about:blank`
 * when the status says what kind of problem it is). http/problem.ts is the one place that
 * turns such an error into an answer; the modules raising them know nothing of Express.
 */
export interface HttpAnswer {
  readonly httpStatus: number;
  readonly problemType: string;
}

/** The problem type of an error whose status says it all. */
export const plainProblem = "about:blank";

export function carriesHttpAnswer(error: unknown): error is Error & HttpAnswer {
  const answer = error as Partial<HttpAnswer> | undefined;
  return error instanceof Error && typeof answer?.httpStatus === "number" && typeof answer.problemType === "string";
}
