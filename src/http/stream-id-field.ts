import { z } from "zod";
import { streamIdProblem } from "../tenant/stream-id.js";

/** A stream id in a request body, checked by the one rule for stream ids (tenant/stream-id.ts). */
export const streamIdField = z.string().superRefine((value, context) => {
  const problem = streamIdProblem(value);
  if (problem) context.addIssue({ code: "custom", message: problem });
});
