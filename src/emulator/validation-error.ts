import type { z } from "zod";
import { ApiError } from "./api-error.js";

type Place = "Payload" | "Query" | "Path";
const errorCodes: Record<Place, string> = { Payload: "invalid_body", Query: "invalid_query_string", Path: "invalid_uri" };

/**
 * A 400 worded as the real API words validation failures, naming the property:
 * `Payload validation error: 'Too big: expected string to have <=128 characters' on property name.`
 */
export function validationError(place: Place, error: z.ZodError): ApiError {
  const issue = error.issues[0];
  if (!issue) return new ApiError(400, `${place} validation error`, errorCodes[place]);
  const message = issue.code === "unrecognized_keys" ? `Additional properties not allowed: ${issue.keys.join(", ")}` : issue.message;
  const property = issue.path.map(String).join(".");
  return new ApiError(400, `${place} validation error: '${message}'${property ? ` on property ${property}` : ""}.`, errorCodes[place]);
}
